package campaign

import (
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/report"
)

// A step ends early only once its backlog passed the bound for two seconds
// running after the warm-up; a backlog that comes and goes does not end it.
func TestEarlyMiss(t *testing.T) {
	var cause error
	m := &earlyMiss{rate: 100, after: 3, warm: 3, end: func(err error) { cause = err }}
	// A block each second: the bound is its own 3 s of load.
	second := func(t float64, inFlight int) {
		m.Second(&report.Second{T: t, InFlight: inFlight, Blocks: 1}, nil, false)
	}
	second(2, 1000) // in the warm-up
	second(4, 400)  // over, once
	second(5, 100)  // back under
	second(6, 301)
	if cause != nil {
		t.Fatalf("ended at %v after one second over", cause)
	}
	second(7, 350)
	if cause == nil || !strings.Contains(m.why, "ended early at 7 s: 350 payments accepted and not committed, more than 3 s of the offered load") {
		t.Fatalf("not ended after two seconds over: %v %q", cause, m.why)
	}
	// A chain of 10 s blocks holds up to a block's worth pending: 5 s of
	// load is its pace, not a miss; over two blocks' worth is.
	slow := &earlyMiss{rate: 100, after: 3, warm: 3, end: func(err error) { cause = err }}
	cause = nil
	for ts := 1.0; ts <= 30; ts++ {
		b := 0
		if int(ts)%10 == 0 {
			b = 1
		}
		slow.Second(&report.Second{T: ts, InFlight: 500 + 400*(int(ts)%10)/10, Blocks: b}, nil, false)
	}
	if cause != nil {
		t.Fatalf("a chain of 10 s blocks ended early: %v", cause)
	}
	slow.Second(&report.Second{T: 31, InFlight: 2500}, nil, false)
	slow.Second(&report.Second{T: 32, InFlight: 2600}, nil, false)
	if cause == nil {
		t.Fatal("over two blocks' worth pending on a chain of 10 s blocks did not end it")
	}
	off := &earlyMiss{rate: 100, after: 0, warm: 3, end: func(error) { t.Fatal("ended with the bound off") }}
	off.Second(&report.Second{T: 9, InFlight: 1 << 20}, nil, false)
	off.Second(&report.Second{T: 10, InFlight: 1 << 20}, nil, false)
}
