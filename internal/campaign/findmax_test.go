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
	second := func(t float64, inFlight int) { m.Second(&report.Second{T: t, InFlight: inFlight}, nil, false) }
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
	off := &earlyMiss{rate: 100, after: 0, warm: 3, end: func(error) { t.Fatal("ended with the bound off") }}
	off.Second(&report.Second{T: 9, InFlight: 1 << 20}, nil, false)
	off.Second(&report.Second{T: 10, InFlight: 1 << 20}, nil, false)
}
