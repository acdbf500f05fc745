// Package report holds the run result (result.json, a public format: see
// docs/results.md), writes it while a run goes, reads it back for the
// reading commands, and renders it for people: the summary table, the
// verdict and the HTML report.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// SchemaVersion is result.json's format version. Version 1 embedded the
// series and blocks in result.json; version 2 streams them to series.jsonl
// and blocks.jsonl and keeps result.json small.
const SchemaVersion = 2

// Result is result.json.
type Result struct {
	SchemaVersion int                `json:"schema_version"`
	Status        string             `json:"status"` // running | complete
	EndedBecause  string             `json:"ended_because"`
	PID           int                `json:"pid,omitempty"` // the tpslab process that wrote it
	StartedAt     time.Time          `json:"started_at"`
	EndedAt       *time.Time         `json:"ended_at,omitempty"`
	Scenario      any                `json:"scenario"`
	Environment   Environment        `json:"environment"`
	Network       *Network           `json:"network,omitempty"`
	Chain         Chain              `json:"chain"`
	Summary       Summary            `json:"summary"`
	Events        []Event            `json:"events,omitempty"`
	Endpoints     []sut.EndpointStat `json:"endpoints,omitempty"`
	Notes         []string           `json:"notes,omitempty"`
	// Capacities are the system's resources its kind declared before the
	// load (block bytes and gas, a pool of connections, the block
	// interval): the judgement weighs each one's use against them.
	Capacities []Capacity `json:"capacities,omitempty"`
	// Judgement is what the run's end judged (Seal): every reader prints it
	// as stored; `tpslab summary --rejudge` judges again.
	Judgement  *Judgement         `json:"judgement,omitempty"`
	Thresholds []ThresholdOutcome `json:"thresholds,omitempty"`
	// Telemetry defines the metrics read from inside the system (the
	// series' and the summary's telemetry), with their units.
	Telemetry []telemetry.Metric `json:"telemetry_metrics,omitempty"`
	// Series and Blocks are read from series.jsonl and blocks.jsonl (schema
	// 2), or from result.json itself (schema 1).
	// Segment is set in the result of one generator of a load spread over
	// several; Segments in the result merged from them (docs/segments.md).
	Segment  *SegmentInfo        `json:"segment,omitempty"`
	Segments []SegmentInfo       `json:"segments,omitempty"`
	Series   []Second            `json:"series,omitempty"`
	Blocks   []measure.BlockStat `json:"blocks,omitempty"`
	Dir      string              `json:"-"` // the run directory it was read from or written to
}

// SegmentInfo is one generator of a load spread over several.
type SegmentInfo struct {
	Index   int    `json:"index"`
	Count   int    `json:"count"`
	Dir     string `json:"dir,omitempty"` // its own run directory, under the merged one
	Where   string `json:"where,omitempty"`
	Senders string `json:"senders,omitempty"` // its range of sending accounts, FIRST..LAST
	// Clock offsets to the controller's clock (controller minus segment,
	// ms) before and after the load, and the round trip they were read in.
	OffsetBeforeMs float64 `json:"clock_offset_before_ms"`
	OffsetAfterMs  float64 `json:"clock_offset_after_ms"`
	RTTMs          float64 `json:"clock_rtt_ms"`
	Offered        int64   `json:"offered"`
	Committed      int64   `json:"committed"`
	CommittedTPS   float64 `json:"committed_tps"`
	CommitP50Ms    float64 `json:"commit_p50_ms"`
	CommitP99Ms    float64 `json:"commit_p99_ms"`
	EndedBecause   string  `json:"ended_because,omitempty"`
}

// Event is something that happened to the system under test during a run:
// a node went down or came back, an endpoint stopped answering, blocks
// stopped.
type Event struct {
	T      float64 `json:"t"` // seconds since the load began (negative: before)
	Kind   string  `json:"kind"`
	Target string  `json:"target,omitempty"`
	Detail string  `json:"detail,omitempty"`
}

// ThresholdOutcome is one checked threshold.
type ThresholdOutcome struct {
	Expr   string  `json:"expr"`
	OK     bool    `json:"ok"`
	Actual float64 `json:"actual"`
	Note   string  `json:"note,omitempty"` // why it failed without a value
}

// Actually is what the metric was: "actual 12.5", or why there is no value.
func (o ThresholdOutcome) Actually() string {
	if o.Note != "" {
		return o.Note
	}
	unit, v := "", o.Actual
	expr := strings.TrimSpace(o.Expr)
	name := expr[:len(expr)-len(strings.TrimLeft(expr, "abcdefghijklmnopqrstuvwxyz0123456789_."))] // up to the operator
	for _, d := range Defs(nil) {
		if d.Name == name && d.Unit != "" && d.Unit != "1" {
			unit = " " + d.Unit
			if d.Kind == RatioKind { // kept as a fraction, written as a percentage
				v *= 100
			}
		}
	}
	if unit == " %" {
		unit = "%"
	}
	return fmt.Sprintf("actual %.4g%s", v, unit)
}

// Environment describes where the load generator ran.
type Environment struct {
	TpslabVersion string `json:"tpslab_version"`
	GitCommit     string `json:"git_commit"`
	// GitModified: the build had changes not committed to GitCommit.
	GitModified bool `json:"git_modified,omitempty"`
	// BinarySHA256 is the first 16 hex digits of the tpslab program's own
	// SHA-256: which build made the result, with or without git.
	BinarySHA256 string `json:"binary_sha256,omitempty"`
	GoVersion    string `json:"go_version"`
	OS           string `json:"os"`
	CPU          string `json:"cpu"`
	Cores        int    `json:"cores"`
	// Machine is the rest of what the machine was at the start.
	Machine *Machine `json:"machine,omitempty"`
}

// Network describes the system under test.
type Network struct {
	Kind       string   `json:"kind"`
	Started    bool     `json:"started_by_tpslab"`
	Validators int      `json:"validators,omitempty"`
	ChainID    string   `json:"chain_id,omitempty"`
	Endpoints  []string `json:"endpoints"`
	Settings   any      `json:"settings,omitempty"`
	Topology   string   `json:"topology,omitempty"` // emulated links (docs/network.md)
	RPCNodes   int      `json:"rpc_nodes,omitempty"`
	// Provenance is what the network ran: its programs, genesis and
	// settings files by hash (a network tpslab started).
	Provenance *Provenance `json:"provenance,omitempty"`
	// Reported is what an endpoint tpslab did not start says of itself
	// (CometBFT's node_info version, web3_clientVersion).
	Reported string `json:"reported_version,omitempty"`
	// Envelopes are the CPU and memory limits each node ran under (net up
	// --node-cpu, --node-memory: a local cgroup or a pod's limits).
	Envelopes map[string]Envelope `json:"envelopes,omitempty"`
	// State is how many pre-loaded accounts the network held beyond the
	// funded ones (net up --state), payments drawn to them too.
	State uint64 `json:"state_accounts,omitempty"`
	// SetAside are the scenario's network settings a network tpslab did
	// not start for this run (target.net_home) did not take, each with
	// what the network has where net.json says.
	SetAside []string `json:"set_aside,omitempty"`
}

// Envelope is a node's limits: cores of CPU, bytes of memory (0: none).
type Envelope struct {
	CPU    float64 `json:"cpu_cores,omitempty"`
	Memory int64   `json:"memory_bytes,omitempty"`
	Where  string  `json:"where"` // "cgroup" or "pod"
}

// Provenance is what a network tpslab started ran (docs/results.md).
type Provenance struct {
	Programs []Program `json:"programs"`
	// GenesisSHA256 is the hash of node0's config/genesis.json, or, for a
	// ledger whose accounts derive from its seed (net.json's genesis),
	// "ledger:" and the hash of that genesis as JSON.
	GenesisSHA256 string `json:"genesis_sha256,omitempty"`
	// Configs are each node's settings files by hash, keyed node/path.
	Configs map[string]string `json:"configs,omitempty"`
}

// Program is one program a network ran.
type Program struct {
	Path    string   `json:"path"`
	SHA256  string   `json:"sha256"`
	Version string   `json:"version,omitempty"` // the first line it prints for --version (or version)
	Nodes   []string `json:"nodes"`             // the nodes that ran it
}

// Machine is what the machine was at the run's start.
type Machine struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	Kernel      string  `json:"kernel,omitempty"`
	Governor    string  `json:"cpu_governor,omitempty"` // the CPU frequency governor, where readable
	LoadAverage float64 `json:"load_average_1m"`        // at the start
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
	T          float64 `json:"t"`
	Phase      string  `json:"phase"` // warmup | steady | drain
	TargetRate float64 `json:"target_rate,omitempty"`
	// Counts are this second's counters (measure.Counters), flattened.
	measure.Counts
	AckMs      measure.Percentiles `json:"ack_ms"`
	CommitMs   measure.Percentiles `json:"commit_ms"`
	LagMs      measure.Percentiles `json:"lag_ms"`
	InFlight   int                 `json:"in_flight"`
	MempoolTxs int                 `json:"mempool_txs"`
	Blocks     int                 `json:"blocks"`
	BlockTxs   int                 `json:"block_txs"`
	GenCPU     float64             `json:"generator_cpu_percent"`
	LiveNodes  int                 `json:"live_nodes,omitempty"`
	LiveEndpts int                 `json:"live_endpoints,omitempty"`
	// Telemetry is what was read from inside the system in this second
	// (docs/metrics.md): rates per second and gauges, by metric name.
	Telemetry map[string]float64 `json:"telemetry,omitempty"`
	// Span is how many seconds this point holds when report.html merged
	// them (a long run); absent for one.
	Span int `json:"span,omitempty"`
}

// Writer keeps a result on disk while the run goes: the series and blocks
// are appended to JSON-lines files as they come, and result.json, which
// stays small, is replaced atomically at the start, at checkpoints and at
// the end. A write that fails is undone (the file is cut back to its last
// whole line) and remembered: Err reports it, so the run can stop cleanly.
type Writer struct {
	mu      sync.Mutex
	dir     string
	series  *lines
	blocks  *lines
	proof   *lines // evidence.jsonl
	digest  string // its running digest
	R       *Result
	err     error
	reserve string // a file whose space is given back when the disk fills
	seconds int64  // the seconds added: a settled line's window is its second's place
}

// noEvidence leaves evidence.jsonl empty: only for bench/evidence-cost.sh,
// which measures what writing it costs side by side.
var noEvidence = os.Getenv("TPSLAB_BENCH_NO_EVIDENCE") == "1"

// reserveSize is the space held back for the final result.json: when a
// write fails (a full disk), it is released so the result can still be
// completed.
const reserveSize = 256 << 10

// lines is an append-only JSON-lines file.
type lines struct {
	f    *os.File
	w    *bufio.Writer
	good int64 // bytes known to be on disk, whole lines only
}

func createLines(path string) (*lines, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &lines{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// add writes records as lines and flushes them; on failure it cuts the file
// back to its last whole line.
func (l *lines) add(recs ...any) error {
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if buf.Len() == 0 {
		return nil
	}
	return l.addRaw(buf.Bytes())
}

// addRaw writes whole lines already encoded and flushes them; on failure
// it cuts the file back to its last whole line.
func (l *lines) addRaw(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := l.w.Write(b)
	if err == nil {
		err = l.w.Flush()
	}
	if err != nil {
		l.w.Reset(l.f)
		_ = l.f.Truncate(l.good)
		_, _ = l.f.Seek(l.good, 0)
		return err
	}
	l.good += int64(n)
	return nil
}

// NewWriter creates dir and the result files, and writes result.json.
func NewWriter(dir string, r *Result) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, R: r, reserve: filepath.Join(dir, ".reserve")}
	if err := os.WriteFile(w.reserve, make([]byte, reserveSize), 0o644); err != nil {
		os.Remove(w.reserve)
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var err error
	if w.series, err = createLines(filepath.Join(dir, "series.jsonl")); err != nil {
		return nil, err
	}
	if w.blocks, err = createLines(filepath.Join(dir, "blocks.jsonl")); err != nil {
		return nil, err
	}
	if w.proof, err = createLines(filepath.Join(dir, EvidenceFile)); err != nil {
		return nil, err
	}
	return w, w.Flush()
}

// Add appends one second, its blocks, and the ids it settled outside a
// block.
func (w *Writer) Add(s Second, blocks []measure.BlockStat, settled [][32]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	recs := make([]any, len(blocks))
	for i := range blocks {
		recs[i] = blocks[i]
	}
	if err := w.blocks.add(recs...); err != nil {
		w.failed(fmt.Errorf("writing %s: %w", filepath.Join(w.dir, "blocks.jsonl"), err))
		return
	}
	if noEvidence {
		blocks, settled = nil, nil
	}
	var proof bytes.Buffer
	evidenceLines(&proof, &w.digest, blocks)
	w.seconds++
	settledLine(&proof, &w.digest, w.seconds, w.R.StartedAt.Add(time.Duration(s.T*float64(time.Second))), settled)
	if err := w.proof.addRaw(proof.Bytes()); err != nil {
		w.failed(fmt.Errorf("writing %s: %w", filepath.Join(w.dir, EvidenceFile), err))
		return
	}
	if err := w.series.add(s); err != nil {
		w.failed(fmt.Errorf("writing %s: %w", filepath.Join(w.dir, "series.jsonl"), err))
	}
}

// failed remembers the first failed write and gives back the reserved space.
func (w *Writer) failed(err error) {
	if w.err == nil {
		w.err = err
	}
	os.Remove(w.reserve)
}

// Update changes the result under the writer's lock.
func (w *Writer) Update(f func(r *Result)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.R)
}

// Err is the first write that failed, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Flush rewrites result.json atomically (a checkpoint).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.FlushLocked()
}

// FlushLocked is Flush for a caller inside Update.
func (w *Writer) FlushLocked() error {
	err := WriteJSON(filepath.Join(w.dir, "result.json"), w.R)
	if err != nil {
		w.failed(fmt.Errorf("writing %s: %w", filepath.Join(w.dir, "result.json"), err))
	}
	return err
}

// Seal judges the finished run as every reader will see it, its series
// and blocks read back from their files, and keeps the judgement in the
// result (Result.Seal). Called under no lock, after the last second.
func (w *Writer) Seal(by string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	series, _ := readLines[Second](filepath.Join(w.dir, "series.jsonl"))
	blocks, _ := readLines[measure.BlockStat](filepath.Join(w.dir, "blocks.jsonl"))
	keep, keepB := w.R.Series, w.R.Blocks
	w.R.Series, w.R.Blocks = series, blocks
	if by == "" {
		by = w.R.Environment.TpslabVersion
	}
	w.R.Seal(by)
	w.R.Series, w.R.Blocks = keep, keepB
}

// Close writes the final result.json, with the reserved space given back
// first, and closes the files.
func (w *Writer) Close() error {
	os.Remove(w.reserve)
	err := w.Flush()
	w.series.f.Close()
	w.blocks.f.Close()
	w.proof.f.Close()
	return err
}

// WriteJSON writes v to path through a temporary file and a rename, so a
// reader never sees half a file.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err = f.Write(append(b, '\n')); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// ParseResult decodes result.json, refusing what is not a result of a
// schema this tpslab reads.
func ParseResult(b []byte) (*Result, error) {
	var probe struct {
		SchemaVersion json.RawMessage `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	v, err := strconv.Atoi(string(probe.SchemaVersion))
	switch {
	case len(probe.SchemaVersion) == 0 || string(probe.SchemaVersion) == "null":
		return nil, errors.New("it has no schema_version: not a tpslab result")
	case err != nil:
		return nil, fmt.Errorf("schema_version %s, expected an integer", probe.SchemaVersion)
	case v < 1 || v > SchemaVersion:
		return nil, fmt.Errorf("schema_version %d, expected 1..%d (written by another version of tpslab?)", v, SchemaVersion)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a tpslab result: %v", err)
	}
	if r.Status != "running" && r.Status != "complete" && r.Status != "partial" {
		return nil, fmt.Errorf("status %q, expected running, complete or partial", r.Status)
	}
	if r.StartedAt.IsZero() {
		return nil, errors.New("it has no started_at: not a tpslab result")
	}
	return &r, nil
}

// ReadResult loads RUN_DIR/result.json and, for schema 2, the series and
// blocks. A last line cut short (the run died mid-write) is left out.
func ReadResult(dir string) (*Result, error) {
	r, err := readHead(dir)
	if err != nil {
		return nil, err
	}
	if r.SchemaVersion >= 2 {
		if r.Series, err = readLines[Second](filepath.Join(dir, "series.jsonl")); err != nil {
			return nil, err
		}
		if r.Blocks, err = readLines[measure.BlockStat](filepath.Join(dir, "blocks.jsonl")); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readHead loads RUN_DIR/result.json alone.
func readHead(dir string) (*Result, error) {
	path := filepath.Join(dir, "result.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseResult(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Dir = dir
	return r, nil
}

func readLines[T any](path string) ([]T, error) {
	var out []T
	err := eachLine(path, func(v T) { out = append(out, v) })
	return out, err
}

// eachLine decodes a JSON-lines file line by line; an absent file has none.
// A last line cut short (the run died mid-write) is left out.
func eachLine[T any](path string, fn func(T)) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	var bad error // a line that did not decode: fatal unless it is the last
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if bad != nil {
			return bad
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			bad = fmt.Errorf("%s: line %d: %v", path, n, err)
			continue
		}
		fn(v)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s: line %d is longer than %d MiB, expected one JSON object per line as tpslab writes them", path, n+1, maxLine>>20)
	} else if err != nil {
		return fmt.Errorf("%s: line %d: %v", path, n+1, err)
	}
	return nil
}

// maxLine bounds one line of series.jsonl or blocks.jsonl (a second with
// every telemetry metric of many nodes stays far below it).
const maxLine = 64 << 20

// Incomplete says why a result has no final summary, or "" when it has one.
func (r *Result) Incomplete() string {
	switch r.Status {
	case "complete":
		return ""
	case "partial":
		return "partial: " + r.EndedBecause
	}
	if r.PID > 0 && processIsTpslab(r.PID) {
		return fmt.Sprintf("still running (pid %d)", r.PID)
	}
	return "interrupted, no final summary"
}

// EndedEarly says why a complete run's figures cover another load than
// the one planned: it was interrupted, the chain halted, the target
// failed, the disk filled; "" when it ran its course.
func (r *Result) EndedEarly() string {
	switch {
	case r.EndedBecause != "" && r.EndedBecause != "completed":
		return "it ended " + r.EndedBecause
	case r.Summary.Halted != "":
		return "the chain halted: " + r.Summary.Halted
	}
	return ""
}

// NeverLoaded says the run failed before its load (a target that did not
// answer, a network that did not start): it holds no figures, so the
// command line prints only why, and `runs` does not list it.
func (r *Result) NeverLoaded() bool {
	return r.Summary.Offered == 0 && strings.HasPrefix(r.EndedBecause, "failed before the load")
}

func processIsTpslab(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.Contains(string(b), "tpslab")
}
