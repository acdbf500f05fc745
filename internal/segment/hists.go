package segment

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// HistFile is where a segment streams its histograms, beside its series;
// RawFile its raw commit latencies (with --raw-latencies).
const (
	HistFile = "histograms.jsonl"
	RawFile  = "latencies.csv"
)

// histLine is one line of histograms.jsonl: a second's histograms (as
// report.Second carries their percentiles), or, with Totals, the whole run's
// and the steady window's as they stand (written at each checkpoint, so a
// segment that dies leaves its last totals).
type histLine struct {
	T      float64           `json:"t"`
	Phase  string            `json:"phase,omitempty"`
	Totals bool              `json:"totals,omitempty"`
	Hists  map[string][]byte `json:"h,omitempty"` // name -> HdrHistogram V2 compressed encoding
	Steady map[string][]byte `json:"steady,omitempty"`
	Total  map[string][]byte `json:"total,omitempty"`
}

// Recorder is the segment's side of a run: a runner observer that streams
// every second's histograms and the running totals to histograms.jsonl,
// writes the raw commit latencies when asked, and adds the segment's clock
// and identity to its result.
type Recorder struct {
	Info   report.SegmentInfo
	Client *Client // measures the clock after the load; nil: not asked
	Raw    bool

	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	raw  *bufio.Writer
	rawF *os.File
	rec  *measure.Recorder
	t    float64
	err  error
}

// NewRecorder creates dir's histogram file (and raw file).
func NewRecorder(dir string, info report.SegmentInfo, raw bool) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, HistFile))
	if err != nil {
		return nil, err
	}
	r := &Recorder{Info: info, f: f, w: bufio.NewWriterSize(f, 256<<10), Raw: raw}
	if raw {
		if r.rawF, err = os.Create(filepath.Join(dir, RawFile)); err != nil {
			f.Close()
			return nil, err
		}
		r.raw = bufio.NewWriterSize(r.rawF, 256<<10)
		r.raw.WriteString("t,phase,commit_us\n")
	}
	return r, nil
}

// Recorder is handed the run's recorder before the load.
func (r *Recorder) Recorder(rec *measure.Recorder) {
	r.rec = rec
	if r.raw != nil {
		rec.RawCommit = func(steady bool, us []uint32) {
			// Called inside the collection of second r.t+1.
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.raw == nil {
				return // closed: the run has ended
			}
			phase := "other"
			if steady {
				phase = "steady"
			}
			t := strconv.FormatFloat(r.t+1, 'f', -1, 64)
			for _, v := range us {
				r.raw.WriteString(t)
				r.raw.WriteByte(',')
				r.raw.WriteString(phase)
				r.raw.WriteByte(',')
				r.raw.WriteString(strconv.FormatUint(uint64(v), 10))
				r.raw.WriteByte('\n')
			}
		}
	}
}

func encode(hs map[string]*hdrhistogram.Histogram) (map[string][]byte, error) {
	out := make(map[string][]byte, len(hs))
	for k, h := range hs {
		if h.TotalCount() == 0 {
			continue
		}
		b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

// Named are an interval's histograms by the names the summary gives them,
// and a mix's commit histograms by kind (KindCommit).
func Named(iv *measure.Interval) map[string]*hdrhistogram.Histogram {
	m := map[string]*hdrhistogram.Histogram{"ack": iv.Ack, "inclusion": iv.Inclusion, "commit": iv.Commit,
		"commit_uncorrected": iv.CommitUncorrected, "lag": iv.Lag, "proposed": iv.Proposed, "gossiped": iv.Gossiped}
	for k, h := range iv.CommitByKind {
		m[KindCommit(k)] = h
	}
	return m
}

// KindCommit names kind k's commit histogram in histograms.jsonl.
func KindCommit(k string) string { return "commit{kind=" + k + "}" }

func (r *Recorder) line(l histLine) {
	if r.err != nil {
		return
	}
	b, err := json.Marshal(l)
	if err == nil {
		r.w.Write(b)
		err = r.w.WriteByte('\n')
	}
	if err == nil {
		err = r.w.Flush()
	}
	r.err = err
}

// Second streams one second's histograms.
func (r *Recorder) Second(s *report.Second, iv *measure.Interval, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = s.T
	h, err := encode(Named(iv))
	if err != nil {
		r.err = err
		return
	}
	r.line(histLine{T: s.T, Phase: s.Phase, Hists: h})
	if r.raw != nil {
		r.raw.Flush()
	}
}

// Result writes the totals as they stand and, at the end, the clock after
// the load; it names the segment in its result.
func (r *Recorder) Result(res *report.Result, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if final && r.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if clk, err := r.Client.Measure(ctx); err == nil {
			r.Info.OffsetAfterMs = clk.OffsetMs
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("segment %d: the clock after the load could not be read: %v", r.Info.Index, err))
		}
		cancel()
		r.Client = nil
	}
	info := r.Info
	res.Segment = &info
	if r.rec == nil {
		return
	}
	st, err := encode(Named(r.rec.Steady))
	if err != nil {
		r.err = err
		return
	}
	tot, err := encode(Named(r.rec.Total))
	if err != nil {
		r.err = err
		return
	}
	r.line(histLine{T: r.t, Totals: true, Steady: st, Total: tot})
	if final {
		r.close()
	}
}

func (r *Recorder) close() {
	if r.raw != nil {
		r.raw.Flush()
		r.rawF.Close()
		r.raw = nil
	}
	if r.f != nil {
		r.w.Flush()
		r.f.Close()
		r.f = nil
	}
}

// Err is the first write that failed.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
