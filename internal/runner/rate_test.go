package runner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tpslab/tpslab/internal/report"
)

func TestCommittedRate(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// Blocks every 0.6 s through a 30 s window: the block-aligned rate.
	w := window{Start: 5, End: 35, First: 5.4, Last: 34.8, Typical: 0.6, Committed: 30000, FirstOurs: 400, Blocks: 50}
	tps, bw, stall := w.rate()
	if stall != 0 || !near(bw, 29.4) || !near(tps, 29600/29.4) {
		t.Errorf("regular blocks: tps %g, window %g, stall %g", tps, bw, stall)
	}
	// The same chain stops at 20 s: the 15 s tail without blocks counts,
	// less one usual interval (which is quantisation, not a stall).
	w.Last, w.Committed = 20, 15000
	tps, _, stall = w.rate()
	if !near(stall, 14.4) || !near(tps, 14600/(14.6+14.4)) || tps > 15000/30.0*1.05 {
		t.Errorf("halted tail: tps %g, stall %g", tps, stall)
	}
	// No block until 25 s, then regular: the head counts too.
	w = window{Start: 5, End: 35, First: 25, Last: 34.8, Typical: 0.6, Committed: 8000, FirstOurs: 3000, Blocks: 17}
	if tps, _, stall = w.rate(); !near(stall, 19.4) || !near(tps, 5000/(9.8+19.4)) {
		t.Errorf("halted head: tps %g, stall %g", tps, stall)
	}
	// Not one block in a chain's window: the whole window stalled; a system
	// without blocks has no stall.
	w = window{Start: 5, End: 35, Chain: true}
	if _, _, stall = w.rate(); stall != 30 {
		t.Errorf("no block in the window: stall %g, want 30", stall)
	}
	w.Chain = false
	if _, _, stall = w.rate(); stall != 0 {
		t.Errorf("no blocks at all: stall %g", stall)
	}
	// Fewer than two blocks: committed over the window.
	w = window{Start: 5, End: 35, Committed: 300, Blocks: 1}
	if tps, _, _ = w.rate(); !near(tps, 10) {
		t.Errorf("one block: tps %g", tps)
	}
}

// A steady window of a few blocks is warned about (issue 34, case 11): a
// 10 s run on 2 s blocks holds one in its 8 s steady window.
func TestFewBlocksInTheSteadyWindow(t *testing.T) {
	w := window{Start: 2, End: 10, First: 3, Last: 9, Typical: 2, Committed: 800, Blocks: 4, Chain: true}
	if msg := w.fewBlocks(); !strings.Contains(msg, "holds 4 block(s)") || !strings.Contains(msg, "10 s or more") {
		t.Errorf("4 blocks: %q", msg)
	}
	w.Blocks = 5
	if msg := w.fewBlocks(); msg != "" {
		t.Errorf("5 blocks: %q", msg)
	}
	w.Blocks, w.Chain = 0, false
	if msg := w.fewBlocks(); msg != "" {
		t.Errorf("a system without blocks: %q", msg)
	}
}

// A block-less gap over the steady window is reported however slow the
// blocks around it were (issue 34: blocks 11-17 s apart raised the bar to
// 70 s, and a 52 s gap covering the whole window read stall_s 0, longest
// gap 0, no warning).
func TestLongGapAmongSlowBlocksIsReported(t *testing.T) {
	ls := &loadState{blockState: blockState{hasBlock: true, intervals: hdrhistogram.New(1, 3_600_000, 2)}}
	for range 20 {
		ls.intervals.RecordValue(14_000) // blocks 14 s apart
	}
	ls.gaps = []gap{{from: 12 * time.Second, to: 64 * time.Second}}
	ls.lastSeen = 64 * time.Second
	r := &summarizer{ls: ls}
	s := &report.Summary{Steady: report.Steady{StartS: 15, EndS: 55}}
	r.stallsUntil(s, 66*time.Second)
	if s.LongestGapS != 52 || len(s.Stalls) != 1 || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "no block for 52.0 s from t=12.0 s: 100% of the steady window") {
		t.Errorf("longest gap %g, stalls %+v, warnings %q", s.LongestGapS, s.Stalls, s.Warnings)
	}
	if s.Halted != "" {
		t.Errorf("a chain that came back is not halted: %q", s.Halted)
	}
	// A 12 s gap among 14 s blocks is their pace: counted, not a stall.
	ls.gaps = []gap{{from: 20 * time.Second, to: 32 * time.Second}}
	s = &report.Summary{Steady: report.Steady{StartS: 15, EndS: 55}}
	r.stallsUntil(s, 66*time.Second)
	if s.LongestGapS != 12 || len(s.Stalls) != 0 || len(s.Warnings) != 0 {
		t.Errorf("slow pace: longest gap %g, stalls %+v, warnings %q", s.LongestGapS, s.Stalls, s.Warnings)
	}
}
