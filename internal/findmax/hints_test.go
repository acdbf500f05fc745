package findmax

import (
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// A busy machine is blamed on the system's processes only when the run
// read them: a kind without local processes gets no guess.
func TestWhoseCPU(t *testing.T) {
	var s report.Summary
	if got := whoseCPU(&s); !strings.Contains(got, "cannot say whose CPU") {
		t.Errorf("no process read: %q", got)
	}
	s.Telemetry = map[string]telemetry.Stat{"node0.cpu_percent": {Mean: 95}, "node1.cpu_percent": {Mean: 90}}
	if got := whoseCPU(&s); got != "the system's processes used 185% of one core: they are CPU-bound here" {
		t.Errorf("two nodes read: %q", got)
	}
}
