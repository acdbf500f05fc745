package fault

import (
	"math"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
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
			iv.Blocks = []measure.BlockStat{{Seen: float64(sec) + 0.5, OursOK: int(c)}}
		}
		s.Observe(float64(sec), c, 0, false, iv.Blocks)
	}
	crash, _ := scenario.ParseFault("10s:crash:node1:5s")
	later, _ := scenario.ParseFault("30s:pause:node2:5s")
	s.applied = []Applied{
		{Fault: crash, Start: 10 * time.Second, End: 15 * time.Second, CaughtUp: 2 * time.Second},
		{Fault: later, Start: 30 * time.Second, End: 35 * time.Second, CaughtUp: -1},
	}
	s.start = time.Now().Add(-40 * time.Second)
	effects := s.Effects(0)
	e := effects[0]
	if e.BeforeTPS != 100 || e.DuringTPS != 0 || e.StartS != 10 || e.EndS != 15 {
		t.Errorf("before/during: %+v", e)
	}
	if e.LongestGapS != 7 { // the last block at 9.5 s, the next at 16.5 s
		t.Errorf("longest gap %.2f s, want 7", e.LongestGapS)
	}
	if e.FirstBlockS == nil || *e.FirstBlockS != 1.5 { // the block at 16.5 s
		t.Errorf("first block %v s after the end, want 1.5", e.FirstBlockS)
	}
	if e.RecoveryS != 2.5 { // the blocks after 17.5 s commit 100 a second
		t.Errorf("recovery %.2f s, want 2.5", e.RecoveryS)
	}
	if e.AfterTPS < 85 || e.AfterTPS > 86 { // 15..30 s: (0 + 2*40 + 12*100)/15, not the second fault's halt
		t.Errorf("after %.2f tx/s: measured past the next fault", e.AfterTPS)
	}
	if e.CaughtUpS == nil || *e.CaughtUpS != 2 {
		t.Errorf("caught up %v", e.CaughtUpS)
	}
	if f := effects[1]; f.RecoveryS != -1 || f.CaughtUpS != nil {
		t.Errorf("a fault the load never recovered from: %+v", f)
	}
}

// A partition healed at 20 s; the next block comes at 24.4 s carrying the
// backlog (14,026 payments), then the chain commits 500 a second for 5 s
// before it is back at 1,000. The catch-up block must not count as
// recovery: the first block is 4.4 s after the heal, the rate is back
// from the block at 29.4 s (issue 23, case 4).
func TestRecoveryIsNotACatchUpBlock(t *testing.T) {
	s := New(nil)
	block := func(sec int, seen float64, ours int64) {
		iv := &measure.Interval{}
		if ours >= 0 {
			iv.Blocks = []measure.BlockStat{{Seen: seen, OursOK: int(ours)}}
		}
		s.Observe(float64(sec), max(0, ours), 0, false, iv.Blocks)
	}
	for sec := 0; sec < 45; sec++ {
		switch {
		case sec < 10:
			block(sec, float64(sec)+0.4, 1000)
		case sec < 24:
			block(sec, 0, -1) // no block
		case sec == 24:
			block(sec, 24.4, 14026)
		case sec < 30:
			block(sec, float64(sec)+0.4, 500)
		default:
			block(sec, float64(sec)+0.4, 1000)
		}
	}
	part, _ := scenario.ParseFault("10s:partition:node1+node2/node3+node4:10s")
	s.applied = []Applied{{Fault: part, Start: 10 * time.Second, End: 20 * time.Second, CaughtUp: -1}}
	s.start = time.Now().Add(-45 * time.Second)
	effects := s.Effects(0)
	e := effects[0]
	if e.FirstBlockS == nil || math.Abs(*e.FirstBlockS-4.4) > 1e-9 {
		t.Errorf("first block %v s after the heal, want 4.4", e.FirstBlockS)
	}
	if math.Abs(e.RecoveryS-9.4) > 1e-9 {
		t.Errorf("recovery %.2f s after the heal, want 9.4 (from the block at 29.4 s, the last at 500 a second)", e.RecoveryS)
	}
	if e.LongestGapS < 15 || e.LongestGapS > 15.1 { // 9.4 s .. 24.4 s
		t.Errorf("longest gap %.2f s", e.LongestGapS)
	}
}

// A system without blocks (a payment API) is judged by seconds, and says
// nothing about blocks.
func TestRecoveryWithoutBlocks(t *testing.T) {
	s := New(nil)
	for sec := 0; sec < 30; sec++ {
		c := int64(100)
		if sec >= 10 && sec < 15 {
			c = 0
		}
		s.Observe(float64(sec), c, 0, false, nil)
	}
	crash, _ := scenario.ParseFault("10s:crash:node1:5s")
	s.applied = []Applied{{Fault: crash, Start: 10 * time.Second, End: 15 * time.Second, CaughtUp: -1}}
	s.start = time.Now().Add(-30 * time.Second)
	effects := s.Effects(0)
	e := effects[0]
	if e.FirstBlockS != nil || e.RecoveryS != 0 {
		t.Errorf("first block %v, recovery %.2f", e.FirstBlockS, e.RecoveryS)
	}
}

// CometBFT dates a block by its previous height's commit: the block that
// carries a partition's backlog is dated when the block before it was
// committed, inside the fault. DURING counts each block at its
// successor's time, when it was committed: here the one block the
// majority committed as the cut began, not the backlog.
func TestDuringDatesBlocksByTheirCommit(t *testing.T) {
	s := New(nil)
	s.start = time.Now().Add(-40 * time.Second)
	at := func(sec float64) time.Time { return s.start.Add(time.Duration(sec * float64(time.Second))) }
	var blocks []measure.BlockStat
	for h := int64(1); h <= 10; h++ { // committed at h-0.5 s, dated by the commit before
		blocks = append(blocks, measure.BlockStat{Height: h, Time: at(float64(h) - 1.5), Seen: float64(h) - 0.5, OursOK: 100})
	}
	blocks = append(blocks,
		measure.BlockStat{Height: 11, Time: at(9.5), Seen: 20.6, OursOK: 100},   // committed at 10.1, seen after the heal
		measure.BlockStat{Height: 12, Time: at(10.1), Seen: 20.6, OursOK: 1000}, // the backlog, committed at 20.6
		measure.BlockStat{Height: 13, Time: at(20.6), Seen: 21.5, OursOK: 100},
		measure.BlockStat{Height: 14, Time: at(21.5), Seen: 22.5, OursOK: 100},
	)
	for _, b := range blocks {
		s.Observe(b.Seen, int64(b.OursOK), 0, false, []measure.BlockStat{b})
	}
	cut, _ := scenario.ParseFault("10s:partition:node0+node1:10s")
	s.applied = []Applied{{Fault: cut, Start: 10 * time.Second, End: 20 * time.Second, CaughtUp: -1}}
	if e := s.Effects(0)[0]; e.DuringTPS != 10 {
		t.Errorf("during %.2f tx/s, want 10 (the one block committed as the cut began)", e.DuringTPS)
	}
}
