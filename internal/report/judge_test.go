package report

import (
	"slices"
	"testing"

	"github.com/tpslab/tpslab/internal/telemetry"
)

// The candidates are weighed in the documented order (docs/metrics.md,
// "What limited it"); the machine comes before the target's answers only
// when it starved a system that needed the CPU.
func TestCandidatesInTheDocumentedOrder(t *testing.T) {
	r := outcomeRun(500, 600, 600)
	var got []Cause
	for _, e := range r.Judge().Considered {
		got = append(got, e.Cause)
	}
	if !slices.Equal(got, order) {
		t.Errorf("candidates %v, want %v", got, order)
	}
	r.Summary.Generator = Generator{Cores: 2, MachineCPUPercent: 100, OthersCPUPercent: 120}
	r.Summary.Telemetry = map[string]telemetry.Stat{"node0.cpu_percent": {Mean: 70}}
	j := r.Judge()
	if j.Limit.Cause != CauseMachine || j.Outcome != OutcomeMachine {
		t.Errorf("a system starved by others: limit %s, outcome %s", j.Limit.Cause, j.Outcome)
	}
}
