package fault

import (
	"math"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// observed is what effects are computed from: committed and expired
// payments per second, and when each block was seen. A few numbers per
// second, so a long run stays small.
type observed struct {
	mu        sync.Mutex
	committed []int64 // by second since the load began
	expired   []int64
	blocks    []float64 // seen, seconds since the load began
	loadEnd   float64
}

// Second takes one collected second (the runner's Observer).
func (s *Schedule) Second(sec *report.Second, iv *measure.Interval, _ bool) {
	o := &s.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	i := int(math.Floor(sec.T))
	if i < 0 {
		return
	}
	for len(o.committed) <= i {
		o.committed = append(o.committed, 0)
		o.expired = append(o.expired, 0)
	}
	o.committed[i] += sec.Committed
	o.expired[i] += sec.Expired
	if sec.Phase != "drain" {
		o.loadEnd = max(o.loadEnd, sec.T+1)
	}
	for _, b := range iv.Blocks {
		o.blocks = append(o.blocks, b.Seen)
	}
}

// Result puts each fault's effect in the summary (the runner's Observer).
func (s *Schedule) Result(res *report.Result, _ bool) {
	lost := res.Summary.Lost
	applied := s.Applied()
	for _, a := range applied {
		// What follows a fault is measured until the next fault begins.
		var next time.Duration
		for _, b := range applied {
			if b.Start >= a.Start && b.Start > a.End && a.End > 0 && (next == 0 || b.Start < next) {
				next = b.Start
			}
		}
		res.Summary.Faults = append(res.Summary.Faults, s.obs.effect(a, lost, s.since(), next))
	}
}

// effect measures what applied fault a did, from 10 s before it until the
// load's end or next, the start of the next fault (0: none).
func (o *observed) effect(a Applied, lost int64, now, next time.Duration) report.FaultEffect {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := report.FaultEffect{Fault: a.Fault.String(), StartS: round2(a.Start.Seconds()), Error: a.Err, Lost: lost, RecoveryS: -1}
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
	e.DuringTPS = round2(o.rate(start, end))
	e.AfterTPS = round2(o.rate(end, loadEnd))
	// Gaps: from the last block before the fault to the load's end.
	last := start
	for _, b := range o.blocks {
		if b <= start {
			last = b
		}
	}
	for _, b := range o.blocks {
		if b <= start || b > loadEnd {
			continue
		}
		e.LongestGapS = max(e.LongestGapS, b-last)
		last = b
	}
	e.LongestGapS = round2(max(e.LongestGapS, loadEnd-last))
	// Recovery: the first second from the fault's end whose 3 s mean is
	// back at 90% of before.
	want := 0.9 * e.BeforeTPS
	if o.rate(start, end) >= want && o.minMean(start, end) >= want {
		e.RecoveryS = 0
	} else {
		for t := math.Floor(end); t+3 <= loadEnd; t++ {
			if o.rate(t, t+3) >= want {
				e.RecoveryS = round2(max(0, t-end))
				break
			}
		}
	}
	if a.Fault.Action == "crash" {
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
