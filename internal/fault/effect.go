package fault

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

// observed is what effects are computed from: committed and expired
// payments per second, and when each block was seen. A few numbers per
// second, so a long run stays small.
type observed struct {
	mu        sync.Mutex
	committed []int64 // by second since the load began
	expired   []int64
	blocks    []seenBlock
	loadEnd   float64
}

// seenBlock is when a block was seen (seconds since the load began) and
// how many of our payments it committed.
type seenBlock struct {
	height int64
	seen   float64
	made   float64 // by its header's time, when plausible; else seen
	ours   int64
}

// A rate has come back when it holds over at least this many blocks and
// seconds after the first block back (one catch-up block full of the
// backlog is not a recovered rate).
const (
	sustainBlocks = 3
	sustainSpan   = 3.0
)

// Effect is what one applied fault did (report.FaultEffect, field for
// field: the runner converts it, so that fault knows nothing of the
// result's format).
type Effect struct {
	Fault       string
	StartS      float64
	EndS        float64
	Error       string
	BeforeTPS   float64
	DuringTPS   float64
	AfterTPS    float64
	LongestGapS float64
	FirstBlockS *float64
	RecoveryS   float64
	CaughtUpS   *float64
	Expired     int64
	Lost        int64
}

// Observe takes one collected second: when it began (seconds since the
// load began), what committed and expired in it, whether it was after the
// load, and its blocks.
func (s *Schedule) Observe(t float64, committed, expired int64, drain bool, blocks []measure.BlockStat) {
	o := &s.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	i := int(math.Floor(t))
	if i < 0 {
		return
	}
	for len(o.committed) <= i {
		o.committed = append(o.committed, 0)
		o.expired = append(o.expired, 0)
	}
	o.committed[i] += committed
	o.expired[i] += expired
	if !drain {
		o.loadEnd = max(o.loadEnd, t+1)
	}
	for _, b := range blocks {
		made := b.Seen
		// A block made before a fault may be seen during it (a node behind,
		// a partition): its header's time says when it was made. A clock
		// that disagrees with tpslab's by more than its usual delay is not
		// trusted.
		if !b.Time.IsZero() && !s.start.IsZero() {
			if h := b.Time.Sub(s.start).Seconds(); h <= b.Seen && h > b.Seen-30 {
				made = h
			}
		}
		o.blocks = append(o.blocks, seenBlock{height: b.Height, seen: b.Seen, made: made, ours: int64(b.OursOK)})
	}
}

// Effects are each applied fault's effect; lost is the run's.
func (s *Schedule) Effects(lost int64) []Effect {
	var out []Effect
	applied := s.Applied()
	for _, a := range applied {
		// What follows a fault is measured until the next fault begins.
		var next time.Duration
		for _, b := range applied {
			if b.Start >= a.Start && b.Start > a.End && a.End > 0 && (next == 0 || b.Start < next) {
				next = b.Start
			}
		}
		out = append(out, s.obs.effect(a, lost, s.since(), next))
	}
	return out
}

// effect measures what applied fault a did, from 10 s before it until the
// load's end or next, the start of the next fault (0: none).
func (o *observed) effect(a Applied, lost int64, now, next time.Duration) Effect {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := Effect{Fault: a.Fault.String(), StartS: round2(a.Start.Seconds()), Error: a.Err, Lost: lost, RecoveryS: -1}
	start, end := a.Start.Seconds(), a.End.Seconds()
	if a.End == 0 { // still active
		end = now.Seconds()
	}
	e.EndS = round2(end)
	loadEnd := o.loadEnd
	if loadEnd == 0 {
		loadEnd = now.Seconds()
	}
	if next > 0 && next.Seconds() < loadEnd {
		loadEnd = next.Seconds()
	}
	e.BeforeTPS = round2(o.rate(max(0, start-10), start))
	e.DuringTPS = round2(o.madeRate(start, end))
	e.AfterTPS = round2(o.rate(end, loadEnd))
	sort.Slice(o.blocks, func(i, j int) bool { return o.blocks[i].seen < o.blocks[j].seen })
	// Gaps: from the last block before the fault to the load's end.
	last := start
	for _, b := range o.blocks {
		if b.seen <= start {
			last = b.seen
		}
	}
	for _, b := range o.blocks {
		if b.seen <= start || b.seen > loadEnd {
			continue
		}
		e.LongestGapS = max(e.LongestGapS, b.seen-last)
		last = b.seen
	}
	e.LongestGapS = round2(max(e.LongestGapS, loadEnd-last))
	if len(o.blocks) == 0 {
		e.LongestGapS = 0 // no blocks: no gap between them to measure
	}
	// Recovery, twice: to the first block after the fault's end, and to
	// the pre-fault rate (90% of before) sustained over several blocks.
	want := 0.9 * e.BeforeTPS
	first := -1.0
	if len(o.blocks) > 0 {
		for _, b := range o.blocks {
			if b.seen >= end && b.seen <= loadEnd {
				first = round2(b.seen - end)
				break
			}
		}
		e.FirstBlockS = &first
	}
	switch {
	case o.rate(start, end) >= want && o.minMean(start, end) >= want:
		e.RecoveryS = 0
	case len(o.blocks) > 0:
		if at, ok := o.sustained(end, loadEnd, want); ok {
			e.RecoveryS = round2(at - end)
		}
	default: // no blocks: 3 s means of committed payments by second
		for t := math.Floor(end); t+3 <= loadEnd; t++ {
			if o.rate(t, t+3) >= want {
				e.RecoveryS = round2(max(0, t-end))
				break
			}
		}
	}
	if a.Fault.Action == "crash" && !a.Heightless {
		c := -1.0
		if a.CaughtUp >= 0 {
			c = round2(a.CaughtUp.Seconds())
		}
		e.CaughtUpS = &c
	}
	for i := int(math.Floor(start)); i < len(o.expired); i++ {
		e.Expired += o.expired[i]
	}
	return e
}

// sustained finds the first block seen in [from, until] from which the
// committed rate holds at want or more: what the blocks after it
// committed, over the time from it to the last of them, at least
// sustainBlocks blocks and sustainSpan seconds on. The block it starts from
// is not counted, so a catch-up block's backlog cannot stand in for the
// rate; ok is false when no such stretch ends before until.
func (o *observed) sustained(from, until, want float64) (at float64, ok bool) {
	for k, b := range o.blocks {
		if b.seen < from {
			continue
		}
		if b.seen > until {
			break
		}
		var n int64
		for j := k + 1; j < len(o.blocks) && o.blocks[j].seen <= until; j++ {
			n += o.blocks[j].ours
			span := o.blocks[j].seen - b.seen
			if j-k >= sustainBlocks && span >= sustainSpan {
				if float64(n)/span >= want {
					return b.seen, true
				}
				break
			}
		}
	}
	return 0, false
}

// rate is committed payments per second over whole seconds [from, to).
func (o *observed) rate(from, to float64) float64 {
	a, b := int(math.Floor(from)), int(math.Floor(to))
	if b <= a {
		return 0
	}
	var n int64
	for i := a; i < b && i < len(o.committed); i++ {
		n += o.committed[i]
	}
	return float64(n) / float64(b-a)
}

// madeRate is what the blocks made in [from, to) committed a second, or
// rate without blocks (issue 51: a partition's DURING was counted from
// two blocks made before it began).
func (o *observed) madeRate(from, to float64) float64 {
	if len(o.blocks) == 0 || to <= from {
		return o.rate(from, to)
	}
	// CometBFT's header time is the median time of the previous height's
	// precommits: block h+1's header says when h was committed. The first
	// block after a halt carries the last commit's time from before it
	// (CI: 1,200 payments "made" inside a partition that made none), so a
	// block counts at its successor's time where that is known.
	next := make(map[int64]float64, len(o.blocks))
	for _, b := range o.blocks {
		next[b.height-1] = b.made
	}
	var n int64
	for _, b := range o.blocks {
		made := b.made
		if t, ok := next[b.height]; ok && b.height > 0 {
			made = max(made, t)
		}
		if made >= from && made < to {
			n += b.ours
		}
	}
	return float64(n) / (to - from)
}

// minMean is the lowest 3 s mean committed rate inside [from, to).
func (o *observed) minMean(from, to float64) float64 {
	lo := math.Inf(1)
	for t := math.Floor(from); t+3 <= to; t++ {
		lo = min(lo, o.rate(t, t+3))
	}
	if math.IsInf(lo, 1) {
		return o.rate(from, to)
	}
	return lo
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
