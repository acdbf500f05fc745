package campaign

import (
	"math"
	"testing"

	"github.com/tpslab/tpslab/internal/compare"
)

// A node's CPU limit doubles in the words the network reads: one value for
// all, and a node's own beside it.
func TestDoubledEnvelope(t *testing.T) {
	for in, want := range map[string]string{"0.1": "0.2", "100m": "0.2", "0.5,node1=250m": "1,node1=0.5"} {
		if got, ok := doubledEnvelope("network.node_cpu", in); !ok || got != want {
			t.Errorf("doubledEnvelope(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := doubledEnvelope("network.node_memory", "256Mi,node2=1Gi"); !ok || got != "536870912,node2=2147483648" {
		t.Errorf("doubled memory: %q, %v", got, ok)
	}
	if _, ok := doubledEnvelope("network.node_cpu", "lots"); ok {
		t.Error("doubledEnvelope took a value that is not a quantity")
	}
}

// The interval why and bisect print never says a rate fell by more than
// all of it, and the rule that judges it is compare's.
func TestRunsIntervalAndMoved(t *testing.T) {
	lo, hi := compare.RunsInterval([]float64{100, 900}, []float64{50, 1000}, compare.Alpha)
	if lo < -100 || math.IsNaN(hi) {
		t.Errorf("interval %.1f%% .. %.1f%%: a rate cannot fall by more than all of it", lo, hi)
	}
	if !compare.Moved(25, 5, 20, 30) || compare.Moved(25, 30, 20, 30) || compare.Moved(1, 0, 0.5, 1.5) || compare.Moved(25, 5, -1, 50) {
		t.Error("Moved: at least 2%, beyond the noise floor, its interval clear of 0")
	}
	// A fall to a quarter is a factor of 4: beyond a floor of +76% (CI).
	if !compare.Moved(-74.7, 75.2, -100, -45.8) || compare.Moved(-40, 75.2, -60, -20) {
		t.Error("Moved: a fall weighed as a factor against the floor's")
	}
}
