// Package report holds the run result (result.json, a public format: see
// docs/results.md), writes it incrementally while a run goes, and renders it
// for people: the summary table, live progress and the HTML report.
package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

// SchemaVersion is result.json's format version.
const SchemaVersion = 1

// Result is result.json.
type Result struct {
	SchemaVersion int                 `json:"schema_version"`
	Status        string              `json:"status"` // running | complete
	EndedBecause  string              `json:"ended_because"`
	StartedAt     time.Time           `json:"started_at"`
	EndedAt       *time.Time          `json:"ended_at,omitempty"`
	Scenario      any                 `json:"scenario"`
	Environment   Environment         `json:"environment"`
	Network       *Network            `json:"network,omitempty"`
	Chain         Chain               `json:"chain"`
	Summary       Summary             `json:"summary"`
	Series        []Second            `json:"series"`
	Blocks        []measure.BlockStat `json:"blocks"`
	Notes         []string            `json:"notes,omitempty"`
	Thresholds    []ThresholdOutcome  `json:"thresholds,omitempty"`
	Dir           string              `json:"-"` // the run directory it was read from or written to
}

// ThresholdOutcome is one checked threshold.
type ThresholdOutcome struct {
	Expr   string  `json:"expr"`
	OK     bool    `json:"ok"`
	Actual float64 `json:"actual"`
}

// Environment describes where the load generator ran.
type Environment struct {
	TpslabVersion string `json:"tpslab_version"`
	GitCommit     string `json:"git_commit"`
	GoVersion     string `json:"go_version"`
	OS            string `json:"os"`
	CPU           string `json:"cpu"`
	Cores         int    `json:"cores"`
}

// Network describes the system under test.
type Network struct {
	Kind       string   `json:"kind"`
	Started    bool     `json:"started_by_tpslab"`
	Validators int      `json:"validators,omitempty"`
	ChainID    string   `json:"chain_id,omitempty"`
	Endpoints  []string `json:"endpoints"`
	Settings   any      `json:"settings,omitempty"`
}

// Chain records which blocks the run read.
type Chain struct {
	FirstHeight       int64 `json:"first_height"` // first block read (the one after the run began)
	LastHeight        int64 `json:"last_height"`  // last block read
	SteadyFirstHeight int64 `json:"steady_first_height"`
	SteadyLastHeight  int64 `json:"steady_last_height"`
}

// Second is one point of the time series: what happened in (t-1 s, t].
type Second struct {
	T           float64             `json:"t"`
	Phase       string              `json:"phase"` // warmup | steady | drain
	TargetRate  float64             `json:"target_rate,omitempty"`
	Offered     int64               `json:"offered"`
	Sent        int64               `json:"sent"`
	Accepted    int64               `json:"accepted"`
	Rejected    map[string]int64    `json:"rejected,omitempty"`
	Committed   int64               `json:"committed"`
	Failed      map[string]int64    `json:"committed_failed,omitempty"`
	Expired     int64               `json:"expired"`
	Resyncs     int64               `json:"resyncs,omitempty"`
	WindowWaits int64               `json:"window_waits,omitempty"`
	ConnWaits   int64               `json:"conn_waits,omitempty"`
	Unsent      int64               `json:"unsent,omitempty"`
	AckMs       measure.Percentiles `json:"ack_ms"`
	CommitMs    measure.Percentiles `json:"commit_ms"`
	LagMs       measure.Percentiles `json:"lag_ms"`
	InFlight    int                 `json:"in_flight"`
	MempoolTxs  int                 `json:"mempool_txs"`
	Blocks      int                 `json:"blocks"`
	BlockTxs    int                 `json:"block_txs"`
	GenCPU      float64             `json:"generator_cpu_percent"`
}

// Writer keeps a result on disk while the run goes: the series and blocks
// are appended to JSON-lines files as they come, and result.json is replaced
// atomically, so whatever stops the run, the directory holds a valid result.
type Writer struct {
	mu     sync.Mutex
	dir    string
	series *os.File
	blocks *os.File
	R      *Result
}

// NewWriter creates dir and the result files.
func NewWriter(dir string, r *Result) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, R: r}
	var err error
	if w.series, err = os.Create(filepath.Join(dir, "series.jsonl")); err != nil {
		return nil, err
	}
	if w.blocks, err = os.Create(filepath.Join(dir, "blocks.jsonl")); err != nil {
		return nil, err
	}
	return w, w.Flush()
}

// Add appends one second and its blocks.
func (w *Writer) Add(s Second, blocks []measure.BlockStat) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.R.Series = append(w.R.Series, s)
	w.R.Blocks = append(w.R.Blocks, blocks...)
	if b, err := json.Marshal(s); err == nil {
		w.series.Write(append(b, '\n'))
	}
	for _, bl := range blocks {
		if b, err := json.Marshal(bl); err == nil {
			w.blocks.Write(append(b, '\n'))
		}
	}
}

// Update changes the result under the writer's lock.
func (w *Writer) Update(f func(r *Result)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.R)
}

// Flush rewrites result.json atomically.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WriteJSON(filepath.Join(w.dir, "result.json"), w.R)
}

// Close flushes and closes the files.
func (w *Writer) Close() error {
	err := w.Flush()
	w.series.Close()
	w.blocks.Close()
	return err
}

// WriteJSON writes v to path through a temporary file and a rename.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadResult loads RUN_DIR/result.json.
func ReadResult(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	r.Dir = dir
	return &r, nil
}
