// Package measure counts what happened to every transaction and keeps
// latency histograms. Each worker records into its own Shard (a lock nobody
// else takes except the once-a-second swap); the Recorder merges the shards
// into one Second and into running totals. See docs/metrics.md.
package measure

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms hold microseconds from 1 µs to 1 h at 3 significant digits.
const (
	histMin = 1
	histMax = int64(time.Hour / time.Microsecond)
	sigFigs = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, sigFigs) }

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	_ = h.RecordValue(us)
}

// Counts are the counters of docs/metrics.md.
type Counts struct {
	Offered     int64            `json:"offered"`
	Sent        int64            `json:"sent"`
	Accepted    int64            `json:"accepted"`
	Rejected    map[string]int64 `json:"rejected"`
	Committed   int64            `json:"committed"`
	Failed      map[string]int64 `json:"committed_failed"`
	Expired     int64            `json:"expired"`
	LateCommits int64            `json:"late_commits"`
	Resyncs     int64            `json:"resyncs"`
	WindowWaits int64            `json:"window_waits"`
	ConnWaits   int64            `json:"conn_waits"`
	Unsent      int64            `json:"unsent"`
}

func (c *Counts) add(o *Counts) {
	c.Offered += o.Offered
	c.Sent += o.Sent
	c.Accepted += o.Accepted
	c.Committed += o.Committed
	c.Expired += o.Expired
	c.LateCommits += o.LateCommits
	c.Resyncs += o.Resyncs
	c.WindowWaits += o.WindowWaits
	c.ConnWaits += o.ConnWaits
	c.Unsent += o.Unsent
	c.Rejected = addMap(c.Rejected, o.Rejected)
	c.Failed = addMap(c.Failed, o.Failed)
}

func addMap(dst, src map[string]int64) map[string]int64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]int64{}
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// Sum adds up a by-reason map.
func Sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// Interval is everything recorded over some span of time.
type Interval struct {
	Counts
	Ack               *hdrhistogram.Histogram // intended send -> ack
	Commit            *hdrhistogram.Histogram // intended send -> commit observed
	CommitUncorrected *hdrhistogram.Histogram // actual send -> commit observed
	Lag               *hdrhistogram.Histogram // intended send -> actual send
	Blocks            []BlockStat
}

// BlockStat describes one committed block.
type BlockStat struct {
	Height     int64     `json:"height"`
	Time       time.Time `json:"time"`
	Seen       float64   `json:"seen_s"` // seconds since the load began
	IntervalMs float64   `json:"interval_ms"`
	Txs        int       `json:"txs"`
	Ours       int       `json:"ours"`
	OursOK     int       `json:"ours_ok"` // ours with result code 0
	Bytes      int       `json:"bytes"`
}

// NewInterval returns an empty interval.
func NewInterval() *Interval {
	return &Interval{Ack: newHist(), Commit: newHist(), CommitUncorrected: newHist(), Lag: newHist()}
}

func (iv *Interval) reset() {
	iv.Counts = Counts{}
	iv.Ack.Reset()
	iv.Commit.Reset()
	iv.CommitUncorrected.Reset()
	iv.Lag.Reset()
	iv.Blocks = iv.Blocks[:0]
}

// Merge adds o into iv.
func (iv *Interval) Merge(o *Interval) {
	iv.Counts.add(&o.Counts)
	iv.Ack.Merge(o.Ack)
	iv.Commit.Merge(o.Commit)
	iv.CommitUncorrected.Merge(o.CommitUncorrected)
	iv.Lag.Merge(o.Lag)
	iv.Blocks = append(iv.Blocks, o.Blocks...)
}

// Shard is one goroutine's recording area.
type Shard struct {
	mu sync.Mutex
	iv *Interval
}

func (s *Shard) Offered() {
	s.mu.Lock()
	s.iv.Offered++
	s.mu.Unlock()
}

func (s *Shard) WindowWait() {
	s.mu.Lock()
	s.iv.WindowWaits++
	s.mu.Unlock()
}

// ConnWait records a due payment whose connection was still busy with
// earlier ones: the target answers slower than payments are due.
func (s *Shard) ConnWait() {
	s.mu.Lock()
	s.iv.ConnWaits++
	s.mu.Unlock()
}

// Unsent records offered payments never sent before the load ended.
func (s *Shard) Unsent(n int64) {
	s.mu.Lock()
	s.iv.Unsent += n
	s.mu.Unlock()
}

func (s *Shard) Resync() {
	s.mu.Lock()
	s.iv.Resyncs++
	s.mu.Unlock()
}

// Sent records a submission and how late it left against its intended time.
func (s *Shard) Sent(lag time.Duration) {
	s.mu.Lock()
	s.iv.Sent++
	record(s.iv.Lag, lag)
	s.mu.Unlock()
}

// Acked records a node's answer, latency from the intended send time.
func (s *Shard) Acked(ok bool, reason string, latency time.Duration) {
	s.mu.Lock()
	if ok {
		s.iv.Accepted++
	} else {
		if s.iv.Rejected == nil {
			s.iv.Rejected = map[string]int64{}
		}
		s.iv.Rejected[reason]++
	}
	record(s.iv.Ack, latency)
	s.mu.Unlock()
}

// Expired records a payment that did not commit in time.
func (s *Shard) Expired(n int64) {
	s.mu.Lock()
	s.iv.Expired += n
	s.mu.Unlock()
}

// BlockRecorder records one whole block under one lock, so a block's
// payments never straddle two seconds.
type BlockRecorder struct{ s *Shard }

// Block starts recording a block; End must follow.
func (s *Shard) Block() BlockRecorder {
	s.mu.Lock()
	return BlockRecorder{s}
}

// Committed records one of our payments found in the block.
func (b BlockRecorder) Committed(ok bool, reason string, fromIntended, fromSent time.Duration, late bool) {
	iv := b.s.iv
	if late {
		iv.LateCommits++
		iv.Expired-- // it had been counted as expired
	}
	if ok {
		iv.Committed++
	} else {
		if iv.Failed == nil {
			iv.Failed = map[string]int64{}
		}
		iv.Failed[reason]++
	}
	record(iv.Commit, fromIntended)
	record(iv.CommitUncorrected, fromSent)
}

// End finishes the block with its statistics.
func (b BlockRecorder) End(st BlockStat) {
	b.s.iv.Blocks = append(b.s.iv.Blocks, st)
	b.s.mu.Unlock()
}

// Recorder owns the shards and the running totals.
type Recorder struct {
	mu     sync.Mutex
	shards []*Shard
	spare  []*Interval
	Total  *Interval // everything so far
	Steady *Interval // the seconds inside the steady window
}

// NewRecorder starts empty totals.
func NewRecorder() *Recorder { return &Recorder{Total: NewInterval(), Steady: NewInterval()} }

// NewShard adds a recording area for one goroutine.
func (r *Recorder) NewShard() *Shard {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Shard{iv: NewInterval()}
	r.shards = append(r.shards, s)
	r.spare = append(r.spare, NewInterval())
	return s
}

// Collect swaps every shard's interval for an empty one and returns their
// merge; it also adds it to Total, and to Steady when steady is set.
func (r *Recorder) Collect(steady bool) *Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := NewInterval()
	for i, s := range r.shards {
		fresh := r.spare[i]
		s.mu.Lock()
		old := s.iv
		s.iv = fresh
		s.mu.Unlock()
		out.Merge(old)
		old.reset()
		r.spare[i] = old
	}
	r.Total.Merge(out)
	if steady {
		r.Steady.Merge(out)
	}
	return out
}
