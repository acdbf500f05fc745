package fault

import (
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
)

// A halt from 10 s to 16 s, slow until 18 s, then back: the effect reads
// 100 tx/s before, the gap, the recovery from the fault's end, and stops
// at the next fault.
func TestEffect(t *testing.T) {
	s := New(nil)
	for sec := 0; sec < 40; sec++ {
		c := int64(100)
		switch {
		case sec >= 10 && sec < 16:
			c = 0
		case sec >= 16 && sec < 18:
			c = 40
		case sec >= 30:
			c = 0 // the next fault's doing, not this one's
		}
		iv := &measure.Interval{}
		if c > 0 {
			iv.Blocks = []measure.BlockStat{{Seen: float64(sec) + 0.5}}
		}
		s.Second(&report.Second{T: float64(sec), Phase: "steady", Committed: c}, iv, false)
	}
	crash, _ := scenario.ParseFault("10s:crash:node1:5s")
	later, _ := scenario.ParseFault("30s:pause:node2:5s")
	s.applied = []Applied{
		{Fault: crash, Start: 10 * time.Second, End: 15 * time.Second, CaughtUp: 2 * time.Second},
		{Fault: later, Start: 30 * time.Second, End: 35 * time.Second, CaughtUp: -1},
	}
	s.start = time.Now().Add(-40 * time.Second)
	res := &report.Result{}
	s.Result(res, true)
	e := res.Summary.Faults[0]
	if e.BeforeTPS != 100 || e.DuringTPS != 0 || e.StartS != 10 || e.EndS != 15 {
		t.Errorf("before/during: %+v", e)
	}
	if e.LongestGapS != 7 { // the last block at 9.5 s, the next at 16.5 s
		t.Errorf("longest gap %.2f s, want 7", e.LongestGapS)
	}
	if e.RecoveryS != 3 { // 3 s means from 18 s are back at 100 ≥ 90
		t.Errorf("recovery %.2f s, want 3", e.RecoveryS)
	}
	if e.AfterTPS < 85 || e.AfterTPS > 86 { // 15..30 s: (0 + 2*40 + 12*100)/15, not the second fault's halt
		t.Errorf("after %.2f tx/s: measured past the next fault", e.AfterTPS)
	}
	if e.CaughtUpS == nil || *e.CaughtUpS != 2 {
		t.Errorf("caught up %v", e.CaughtUpS)
	}
	if f := res.Summary.Faults[1]; f.RecoveryS != -1 || f.CaughtUpS != nil {
		t.Errorf("a fault the load never recovered from: %+v", f)
	}
}
