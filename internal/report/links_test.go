package report

import (
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/telemetry"
)

// The emulated links are the limit only with figures that show it; links
// merely present leave the run to the system itself (the 5-node factom
// ramp's links carried 2% of their rate and were named the limit).
func TestLinksLimitNeedsEvidence(t *testing.T) {
	gbit := LinkStat{Name: "node1-node0", Conditions: "rtt 5ms, 1gbit", RTTMs: 5, RateKbit: 1_000_000, MaxBytesPerS: 2.5e6}
	cases := []struct {
		name  string
		links []LinkStat
		cpu   float64
		block float64 // ms between blocks
		want  Cause
		says  string
	}{
		{"present, idle", []LinkStat{gbit}, 29, 10000, CauseSystem, ""},
		{"near its rate", []LinkStat{gbit, {Name: "node2-node0", Conditions: "rtt 5ms, 1mbit", RTTMs: 5, RateKbit: 1000, MaxBytesPerS: 110_000}}, 29, 10000, CauseLinks, "link node2-node0 carried 107.4 KiB/s in its busiest second, 88% of its 1 Mbit/s each way"},
		{"rate read from an older result's conditions", []LinkStat{{Name: "a-b", Conditions: "rtt 5ms, 2mbit", RTTMs: 5, MaxBytesPerS: 240_000}}, 0, 10000, CauseLinks, "96% of its 2 Mbit/s"},
		{"their process out of CPU", []LinkStat{gbit}, 97, 10000, CauseLinks, "the process that emulates the links used 97% of one core"},
		{"round trips long beside the blocks", []LinkStat{{Name: "eu-asia", Conditions: "rtt 250ms", RTTMs: 250}}, 10, 900, CauseLinks, "the slowest link, eu-asia, has a 250 ms round trip: 28% of the block interval (900 ms)"},
		{"resets", []LinkStat{{Name: "a-b", Conditions: "resets 5%", ResetProb: 0.05}}, 10, 900, CauseLinks, "link a-b resets 5% of its connections"},
	}
	for _, c := range cases {
		r := outcomeRun(300, 3000, 8000)
		r.Summary.Links = c.links
		r.Summary.BlocksSummary = Blocks{Count: 10, IntervalMsMean: c.block}
		if c.cpu > 0 {
			r.Summary.Telemetry = map[string]telemetry.Stat{"links.cpu_percent": {Mean: c.cpu}}
		}
		j := r.Judge()
		if j.Limit.Cause != c.want || !strings.Contains(j.Limit.Figures, c.says) {
			t.Errorf("%s: limit %s (%s), want %s saying %q", c.name, j.Limit.Cause, j.Limit.Figures, c.want, c.says)
		}
	}
}
