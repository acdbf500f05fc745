// Package measure counts what happened to every transaction and keeps
// latency histograms. Each worker records into its own Shard (a lock nobody
// else takes except the once-a-second swap); the Recorder merges the shards
// into one Interval per second and into running totals. See docs/metrics.md.
package measure

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms hold microseconds from 1 µs to 1 h: the run's totals at 3
// significant digits, each second's at 2 (every second's histograms are
// cleared, and walked for the series' quantiles and mean: at 3 digits
// those walks and clears cost the generator more than a microsecond per
// payment at 1000 a second; at 2 they are some 8 times shorter).
const (
	histMin       = 1
	histMax       = int64(time.Hour / time.Microsecond)
	sigFigs       = 3
	secondSigFigs = 2
)

// Counts are the counters of docs/metrics.md.
type Counts struct {
	Offered   int64            `json:"offered"`
	Sent      int64            `json:"sent"`
	Accepted  int64            `json:"accepted"`
	Rejected  map[string]int64 `json:"rejected"`
	Unacked   map[string]int64 `json:"unacked,omitempty"`
	Committed int64            `json:"committed"`
	Failed    map[string]int64 `json:"committed_failed"`
	Expired   int64            `json:"expired"`
	// InFlightEnd are payments still unresolved when the run ended whose
	// commit timeout had not passed: neither committed nor expired.
	InFlightEnd int64 `json:"in_flight_end,omitempty"`
	LateCommits int64 `json:"late_commits"`
	// LateRefusals are expired payments whose refusal came after their
	// commit timeout: no longer expired (rejected, or signed again).
	LateRefusals int64            `json:"late_refusals,omitempty"`
	Resyncs      int64            `json:"resyncs"`
	Resubmitted  int64            `json:"resubmitted,omitempty"`
	Resigned     int64            `json:"resigned,omitempty"`
	Repriced     int64            `json:"repriced,omitempty"`
	Mismatches   map[string]int64 `json:"sequence_mismatches,omitempty"`
	Reorgs       int64            `json:"reorged,omitempty"`
	Throttled    int64            `json:"throttled,omitempty"`
	WindowWaits  int64            `json:"window_waits"`
	ConnWaits    int64            `json:"conn_waits"`
	Unsent       int64            `json:"unsent"`
	// Deliberately invalid payments (workload.invalid), apart from all of
	// the above: sent by sort; refused by "sort: reason" (at the door, in a
	// block, or expired after the target accepted them); accepted at the
	// door by sort; unanswered at the door by sort (the answer was lost: a
	// timeout, a gateway's 5xx); unknown by sort (unanswered, and no block
	// held them by the end: neither refused nor taken); committed by sort
	// (a finding: the system took what it should not have).
	InvalidSent       map[string]int64 `json:"invalid_sent,omitempty"`
	InvalidRefused    map[string]int64 `json:"invalid_refused,omitempty"`
	InvalidAccepted   map[string]int64 `json:"invalid_accepted,omitempty"`
	InvalidUnanswered map[string]int64 `json:"invalid_unanswered,omitempty"`
	InvalidUnknown    map[string]int64 `json:"invalid_unknown,omitempty"`
	InvalidCommitted  map[string]int64 `json:"invalid_committed,omitempty"`
	// With a mix (workload.mix), the payments by kind: sent, committed,
	// and committed with failure.
	SentByKind      map[string]int64 `json:"sent_by_kind,omitempty"`
	CommittedByKind map[string]int64 `json:"committed_by_kind,omitempty"`
	FailedByKind    map[string]int64 `json:"committed_failed_by_kind,omitempty"`
}

// Check tests the identities of docs/metrics.md on a finished run's counts
// (nothing still pending):
//
//	offered = sent + unsent
//	sent = accepted + rejected + unacked
//	accepted + unacked = committed + committed_failed + expired + in_flight_end
//
// It names each one that does not hold, with its figures.
func (c *Counts) Check() error {
	var broken []string
	rej, unack, failed := Sum(c.Rejected), Sum(c.Unacked), Sum(c.Failed)
	inv := Sum(c.InvalidSent)
	if c.Offered != c.Sent+c.Unsent+inv {
		broken = append(broken, fmt.Sprintf("offered %d != sent %d + unsent %d + invalid_sent %d", c.Offered, c.Sent, c.Unsent, inv))
	}
	if ref, com, unk := Sum(c.InvalidRefused), Sum(c.InvalidCommitted), Sum(c.InvalidUnknown); inv != ref+com+unk {
		broken = append(broken, fmt.Sprintf("invalid_sent %d != invalid_refused %d + invalid_committed %d + invalid_unknown %d", inv, ref, com, unk))
	}
	if c.Sent != c.Accepted+rej+unack {
		broken = append(broken, fmt.Sprintf("sent %d != accepted %d + rejected %d + unacked %d", c.Sent, c.Accepted, rej, unack))
	}
	if c.Accepted+unack != c.Committed+failed+c.Expired+c.InFlightEnd {
		broken = append(broken, fmt.Sprintf("accepted %d + unacked %d != committed %d + committed_failed %d + expired %d + in_flight_end %d", c.Accepted, unack, c.Committed, failed, c.Expired, c.InFlightEnd))
	}
	if len(broken) == 0 {
		return nil
	}
	return errors.New(strings.Join(broken, "; "))
}

// PerSecond is one second's counts as the series shows them: a late commit
// moves its payment out of expired in the second it commits, which in that
// second alone could read negative (a fault's recovery: -5,116). The series
// counts expired when the deadline passed instead, so no second is
// negative; the run's expired is the series' expired less its late_commits.
func (c Counts) PerSecond() Counts {
	c.Expired += c.LateCommits + c.LateRefusals
	return c
}

// Add adds o's counters to c's (maps are c's own, never o's).
func (c *Counts) Add(o *Counts) { c.add(o) }

func (c *Counts) add(o *Counts) {
	for _, d := range Counters {
		if d.Reasons != nil {
			*d.Reasons(c) = addMap(*d.Reasons(c), *d.Reasons(o))
		} else {
			*d.Scalar(c) += *d.Scalar(o)
		}
	}
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

func inc(m *map[string]int64, k string) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[k]++
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
	Inclusion         *hdrhistogram.Histogram // intended send -> included, where that precedes finality
	Commit            *hdrhistogram.Histogram // intended send -> commit (final) observed
	CommitUncorrected *hdrhistogram.Histogram // actual send -> commit observed
	Lag               *hdrhistogram.Histogram // intended send -> actual send
	Proposed          *hdrhistogram.Histogram // intended send -> its block's proposal seen complete
	Gossiped          *hdrhistogram.Histogram // intended send -> a second node's mempool held it (sampled)
	// CommitByKind is Commit by payment kind of a mix (workload.mix); kept
	// in the totals only, not per second (a histogram per kind a second
	// would cost the generator more than the kinds' counts tell).
	CommitByKind map[string]*hdrhistogram.Histogram
	Blocks       []BlockStat // this interval's blocks (not kept in totals)
	BlockAgg     BlockAgg
	// Settled are the ids of this interval's payments committed outside a
	// block (a service's answer, a per-payment confirmer), for the
	// evidence file; not kept in totals.
	Settled [][32]byte
}

// BlockStat describes one committed block.
type BlockStat struct {
	Height     int64     `json:"height"`
	Time       time.Time `json:"time"`
	Seen       float64   `json:"seen_s"` // seconds since the load began
	IntervalMs float64   `json:"interval_ms"`
	Txs        int       `json:"txs"`
	Ours       int       `json:"ours"`
	OursOK     int       `json:"ours_ok"`            // ours with result code 0
	OursGas    uint64    `json:"ours_gas,omitempty"` // gas our code-0 ones used, where the chain says
	Bytes      int       `json:"bytes"`
	// Hash is the block's content hash as the chain names it (CometBFT's
	// header data_hash, an EVM block's hash); "" where it has none.
	Hash string `json:"hash,omitempty"`
	// OK are the ids of ours with result code 0 (OursOK of them), for the
	// evidence file; not in blocks.jsonl.
	OK [][32]byte `json:"-"`
}

// BlockAgg sums blocks, so totals never keep a list that grows with the run.
type BlockAgg struct {
	Count      int
	IntervalMs float64 // sum over blocks with an interval
	Intervals  int
	Txs        int64
	Bytes      int64
	TxsMax     int
	OursOK     int64  // ours with result code 0 ...
	OursGas    uint64 // ... and the gas they used
}

func (a *BlockAgg) add(b BlockStat) {
	a.Count++
	if b.IntervalMs > 0 {
		a.IntervalMs += b.IntervalMs
		a.Intervals++
	}
	a.Txs += int64(b.Txs)
	a.Bytes += int64(b.Bytes)
	if b.OursGas > 0 {
		a.OursOK += int64(b.OursOK)
		a.OursGas += b.OursGas
	}
	if b.Txs > a.TxsMax {
		a.TxsMax = b.Txs
	}
}

func (a *BlockAgg) merge(o BlockAgg) {
	a.Count += o.Count
	a.IntervalMs += o.IntervalMs
	a.Intervals += o.Intervals
	a.Txs += o.Txs
	a.Bytes += o.Bytes
	a.OursOK += o.OursOK
	a.OursGas += o.OursGas
	if o.TxsMax > a.TxsMax {
		a.TxsMax = o.TxsMax
	}
}

// NewInterval returns an empty interval.
func NewInterval() *Interval { return newInterval(sigFigs) }

func newInterval(digits int) *Interval {
	h := func() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, digits) }
	return &Interval{Ack: h(), Inclusion: h(), Commit: h(), CommitUncorrected: h(), Lag: h(), Proposed: h(), Gossiped: h()}
}

func newTotals() *Interval {
	iv := newInterval(sigFigs)
	iv.CommitByKind = map[string]*hdrhistogram.Histogram{}
	return iv
}

// kindHist is kind k's commit histogram, made on first use.
func (iv *Interval) kindHist(k string) *hdrhistogram.Histogram {
	h := iv.CommitByKind[k]
	if h == nil {
		h = hdrhistogram.New(histMin, histMax, sigFigs)
		iv.CommitByKind[k] = h
	}
	return h
}

func (iv *Interval) hists() [7]*hdrhistogram.Histogram {
	return [...]*hdrhistogram.Histogram{iv.Ack, iv.Inclusion, iv.Commit, iv.CommitUncorrected, iv.Lag, iv.Proposed, iv.Gossiped}
}

// reset empties iv; only used histograms are cleared (a clear writes the
// whole counts array: 180 KB at 3 digits).
func (iv *Interval) reset() {
	iv.Counts = Counts{}
	for _, h := range iv.hists() {
		if h.TotalCount() > 0 {
			h.Reset()
		}
	}
	iv.Blocks = iv.Blocks[:0]
	iv.BlockAgg = BlockAgg{}
	iv.Settled = iv.Settled[:0]
}

// Shard is one goroutine's recording area. It keeps counters and the raw
// latency samples of the current second, not histograms: an HDR histogram
// of this range is 180 KB, and clearing and merging one per shard and kind
// every second cost more than all the recording (tpslab runs 32 shards by
// default). Collect records the samples into one histogram per kind.
type Shard struct {
	mu sync.Mutex
	d  *shardData
	// cut is the end of the second being filled: a payment offered before
	// its tick whose intended time is at or past it is early, and counts in
	// the next second (the tick itself comes a little late).
	cut   time.Duration
	early int64
}

// shardData is one second of a shard; latencies in microseconds.
type shardData struct {
	Counts
	ack, inclusion, commit, commitUncorrected, lag []uint32
	proposed, gossiped                             []uint32
	kindCommit                                     map[string][]uint32 // a mix's commit latencies by kind
	blocks                                         []BlockStat
	blockAgg                                       BlockAgg
	settled                                        [][32]byte // ids committed outside a block
}

// samples are d's latencies in the order of Interval.hists.
func (d *shardData) samples() [7][]uint32 {
	return [...][]uint32{d.ack, d.inclusion, d.commit, d.commitUncorrected, d.lag, d.proposed, d.gossiped}
}

func (d *shardData) reset() {
	d.Counts = Counts{}
	d.ack, d.inclusion, d.commit, d.commitUncorrected, d.lag = d.ack[:0], d.inclusion[:0], d.commit[:0], d.commitUncorrected[:0], d.lag[:0]
	d.proposed, d.gossiped = d.proposed[:0], d.gossiped[:0]
	for k, v := range d.kindCommit {
		d.kindCommit[k] = v[:0]
	}
	d.blocks = d.blocks[:0]
	d.blockAgg = BlockAgg{}
	d.settled = d.settled[:0]
}

// sample appends d in microseconds, clamped to the histograms' range.
func sample(s []uint32, d time.Duration) []uint32 {
	return append(s, uint32(min(max(d.Microseconds(), histMin), histMax)))
}

// recordAll records s into h, pausing every yieldEvery samples: a second's
// samples at 400k payments/s took 20 ms to record. With one processor, a
// goroutine that only yields (Gosched) stays runnable, and the scheduler
// polls the network only when nothing is runnable (or at sysmon's 10 ms
// poll), so a lane's answer sat unread up to 10 ms: the schedule lag's
// per-second p99 stayed near 10 ms. Sleeping empties the run queue, so the
// poll happens. since counts the samples recorded since the last pause,
// across calls: one collection pauses only past yieldEvery samples.
func recordAll(h *hdrhistogram.Histogram, s []uint32, since *int) {
	for len(s) > 0 {
		n := min(len(s), yieldEvery-*since)
		for _, v := range s[:n] {
			_ = h.RecordValue(int64(v))
		}
		s = s[n:]
		if *since += n; *since == yieldEvery {
			time.Sleep(yieldFor)
			*since = 0
		}
	}
}

const (
	// yieldEvery samples (about 200 µs of recording) between pauses.
	yieldEvery = 32768
	// yieldFor outlasts the way from a sleeping goroutine to the
	// scheduler's network poll, so the timer has not fired before it; an
	// idle processor waits up to 1 ms (epoll's unit). At 400k payments/s
	// (two latencies, each into up to three intervals) that is some 75
	// pauses a second.
	yieldFor = 100 * time.Microsecond
)

// Offered records a payment offered at its intended time, in the second
// that time falls in (not the second its tick happened to collect it).
func (s *Shard) Offered(intended time.Duration) {
	s.mu.Lock()
	if intended >= s.cut {
		s.early++
	} else {
		s.d.Offered++
	}
	s.mu.Unlock()
}

func (s *Shard) WindowWait() {
	s.mu.Lock()
	s.d.WindowWaits++
	s.mu.Unlock()
}

// ConnWait records a due payment whose connection was still busy with
// earlier ones: the target answers slower than payments are due.
func (s *Shard) ConnWait() {
	s.mu.Lock()
	s.d.ConnWaits++
	s.mu.Unlock()
}

// Unsent records offered payments never sent before the load ended.
func (s *Shard) Unsent(n int64) {
	s.mu.Lock()
	s.d.Unsent += n
	s.mu.Unlock()
}

func (s *Shard) Resync() {
	s.mu.Lock()
	s.d.Resyncs++
	s.mu.Unlock()
}

// Mismatch records a sequence mismatch by its class and how it was
// recovered: resubmits of original bytes, or a re-signed payment.
func (s *Shard) Mismatch(class string, resubmits int, resigned bool) {
	s.mu.Lock()
	inc(&s.d.Mismatches, class)
	s.d.Resubmitted += int64(resubmits)
	if resigned {
		s.d.Resigned++
	}
	s.mu.Unlock()
}

// Repriced records a payment refused for its fee and signed again at the
// chain's current gas price.
func (s *Shard) Repriced() {
	s.mu.Lock()
	s.d.Repriced++
	s.mu.Unlock()
}

// Throttled records n answers that asked to slow down (HTTP 429), each
// waited out and retried.
func (s *Shard) Throttled(n int) {
	s.mu.Lock()
	s.d.Throttled += int64(n)
	s.mu.Unlock()
}

// Sent records a payment's first submission and how late it left against
// its intended time.
func (s *Shard) Sent(lag time.Duration) {
	s.mu.Lock()
	s.d.Sent++
	s.d.lag = sample(s.d.lag, lag)
	s.mu.Unlock()
}

// Acked records the final answer to a payment, latency from its intended
// send time: accepted, rejected by reason, or unacked by reason.
func (s *Shard) Acked(accepted bool, unacked bool, reason string, latency time.Duration) {
	s.mu.Lock()
	switch {
	case accepted:
		s.d.Accepted++
	case unacked:
		inc(&s.d.Unacked, reason)
	default:
		inc(&s.d.Rejected, reason)
	}
	s.d.ack = sample(s.d.ack, latency)
	s.mu.Unlock()
}

// SentKind records a sent payment of a mix's kind.
func (s *Shard) SentKind(kind string) {
	s.mu.Lock()
	inc(&s.d.SentByKind, kind)
	s.mu.Unlock()
}

// SettledKind records a payment of a mix's kind resolved outside a block,
// committed (ok) or committed with failure, with its commit latency.
func (s *Shard) SettledKind(kind string, ok bool, fromIntended time.Duration) {
	s.mu.Lock()
	s.d.settleKind(kind, ok, fromIntended)
	s.mu.Unlock()
}

func (d *shardData) settleKind(kind string, ok bool, fromIntended time.Duration) {
	if ok {
		inc(&d.CommittedByKind, kind)
	} else {
		inc(&d.FailedByKind, kind)
	}
	if d.kindCommit == nil {
		d.kindCommit = map[string][]uint32{}
	}
	d.kindCommit[kind] = sample(d.kindCommit[kind], fromIntended)
}

// Invalid records a step of a deliberately invalid payment: "sent",
// "accepted" or "unanswered" (at the door), "refused" (with the reason),
// "unknown" (unanswered and in no block) or "committed".
func (s *Shard) Invalid(step, sort, reason string) {
	s.mu.Lock()
	switch step {
	case "sent":
		inc(&s.d.InvalidSent, sort)
	case "accepted":
		inc(&s.d.InvalidAccepted, sort)
	case "unanswered":
		inc(&s.d.InvalidUnanswered, sort)
	case "unknown":
		inc(&s.d.InvalidUnknown, sort)
	case "committed":
		inc(&s.d.InvalidCommitted, sort)
	default:
		inc(&s.d.InvalidRefused, sort+": "+reason)
	}
	s.mu.Unlock()
}

// LateRefused records an expired payment whose answer, a refusal or a
// sequence mismatch that signs it again, came after its commit timeout: it
// counts as what the answer says, no longer as expired.
func (s *Shard) LateRefused() {
	s.mu.Lock()
	s.d.LateRefusals++
	s.d.Expired--
	s.mu.Unlock()
}

// Expired records payments that did not commit in time.
func (s *Shard) Expired(n int64) {
	s.mu.Lock()
	s.d.Expired += n
	s.mu.Unlock()
}

// InFlightEnd records payments unresolved when the run ended, within their
// commit timeout.
func (s *Shard) InFlightEnd(n int64) {
	s.mu.Lock()
	s.d.InFlightEnd += n
	s.mu.Unlock()
}

// Reorg records payments put back to pending by a reorg.
func (s *Shard) Reorg(n int64) {
	s.mu.Lock()
	s.d.Reorgs += n
	s.mu.Unlock()
}

func (d *shardData) settle(ok bool, reason string, fromIntended, fromSent time.Duration, late bool) {
	if late {
		d.LateCommits++
		d.Expired-- // it had been counted as expired
	}
	if ok {
		d.Committed++
	} else {
		inc(&d.Failed, reason)
	}
	d.commit = sample(d.commit, fromIntended)
	d.commitUncorrected = sample(d.commitUncorrected, fromSent)
}

// Settled records payment id resolved outside a block: by a synchronous
// answer or a per-transaction confirmer.
func (s *Shard) Settled(id [32]byte, ok bool, reason string, fromIntended, fromSent time.Duration, late bool) {
	s.mu.Lock()
	s.d.settle(ok, reason, fromIntended, fromSent, late)
	if ok {
		s.d.settled = append(s.d.settled, id)
	}
	s.mu.Unlock()
}

// Included records that one of our payments is in a block that is not
// final yet.
func (s *Shard) Included(fromIntended time.Duration) {
	s.mu.Lock()
	s.d.inclusion = sample(s.d.inclusion, fromIntended)
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

// Invalid records a step of a deliberately invalid payment in the block.
func (b BlockRecorder) Invalid(sort string, ok bool, reason string) {
	if ok {
		inc(&b.s.d.InvalidCommitted, sort)
	} else {
		inc(&b.s.d.InvalidRefused, sort+": "+reason)
	}
}

// Proposed records how long after its intended time one of our payments'
// block was seen proposed.
func (b BlockRecorder) Proposed(fromIntended time.Duration) {
	b.s.d.proposed = sample(b.s.d.proposed, fromIntended)
}

// Gossiped records how long after its intended time one of our (sampled)
// payments was held by a second node's mempool.
func (b BlockRecorder) Gossiped(fromIntended time.Duration) {
	b.s.d.gossiped = sample(b.s.d.gossiped, fromIntended)
}

// ByKind records one of our payments of a mix's kind found in the block,
// with its commit latency.
func (b BlockRecorder) ByKind(kind string, ok bool, fromIntended time.Duration) {
	b.s.d.settleKind(kind, ok, fromIntended)
}

// Committed records one of our payments found in a final block.
func (b BlockRecorder) Committed(ok bool, reason string, fromIntended, fromSent time.Duration, late bool) {
	b.s.d.settle(ok, reason, fromIntended, fromSent, late)
}

// End finishes the block with its statistics.
func (b BlockRecorder) End(st BlockStat) {
	b.s.d.blocks = append(b.s.d.blocks, st)
	b.s.d.blockAgg.add(st)
	b.s.mu.Unlock()
}

// Recorder owns the shards and the running totals.
type Recorder struct {
	mu     sync.Mutex
	shards []*Shard
	spare  []*shardData
	out    *Interval // the last second, reused
	Total  *Interval // everything so far (without the block list)
	Steady *Interval // the seconds inside the steady window
	// RawCommit, when set, is handed each collection's commit latencies
	// (intended send -> commit, microseconds) before they go into
	// histograms: the raw samples, for whoever wants to check a merge.
	RawCommit func(steady bool, us []uint32)
}

// NewRecorder starts empty totals.
func NewRecorder() *Recorder {
	return &Recorder{out: newInterval(secondSigFigs), Total: newTotals(), Steady: newTotals()}
}

// NewShard adds a recording area for one goroutine.
func (r *Recorder) NewShard() *Shard {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Shard{d: &shardData{}, cut: time.Second}
	r.shards = append(r.shards, s)
	r.spare = append(r.spare, &shardData{})
	return s
}

// Collect swaps every shard's second for an empty one and returns their
// merge, valid until the next Collect; it also adds it to Total, and to
// Steady when steady is set.
func (r *Recorder) Collect(steady bool) *Interval { return r.CollectUntil(steady, Final) }

// Final is CollectUntil's next cut for the last collection: early offers
// are counted in it.
const Final = time.Duration(math.MaxInt64)

// CollectUntil is Collect for the second ending now, the next ending at
// next: payments offered early (intended at or after the cut that just
// passed) move into the next second.
func (r *Recorder) CollectUntil(steady bool, next time.Duration) *Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.out
	out.reset()
	// Samples go into each histogram directly: merging whole histograms
	// walks all their buckets, which costs more below some 50k samples a
	// second.
	into := []*Interval{out, r.Total}
	if steady {
		into = append(into, r.Steady)
	}
	since := 0
	for i, s := range r.shards {
		fresh := r.spare[i]
		s.mu.Lock()
		d := s.d
		s.d = fresh
		if next == Final {
			d.Offered += s.early
		} else {
			fresh.Offered += s.early
		}
		s.early, s.cut = 0, next
		s.mu.Unlock()
		samples := d.samples()
		if r.RawCommit != nil && len(d.commit) > 0 {
			r.RawCommit(steady, d.commit)
		}
		for _, iv := range into {
			iv.Counts.add(&d.Counts)
			for k, h := range iv.hists() {
				recordAll(h, samples[k], &since)
			}
			if iv.CommitByKind != nil {
				for k, v := range d.kindCommit {
					if len(v) > 0 {
						recordAll(iv.kindHist(k), v, &since)
					}
				}
			}
			iv.BlockAgg.merge(d.blockAgg)
		}
		out.Blocks = append(out.Blocks, d.blocks...)
		out.Settled = append(out.Settled, d.settled...)
		d.reset()
		r.spare[i] = d
	}
	return out
}
