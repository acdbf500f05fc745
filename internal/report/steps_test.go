package report

import (
	"strings"
	"testing"
)

func TestStepsGroupSecondsByTheirRate(t *testing.T) {
	r := &Result{Summary: Summary{Links: []LinkStat{{Name: "node1-node0"}, {Name: "node2-node0"}}}}
	for i := 1; i <= 6; i++ {
		rate := 100.0
		if i > 3 {
			rate = 200
		}
		sec := Second{T: float64(i), Phase: "steady", TargetRate: rate, Telemetry: map[string]float64{"link.node1-node0.bytes": 1000, "link.node2-node0.bytes": 1000, "node0.cpu_percent": 50}}
		sec.Offered, sec.Committed, sec.InFlight = int64(rate), int64(rate/2), i
		sec.CommitMs.P99 = float64(100 * i)
		r.Series = append(r.Series, sec)
	}
	r.Series = append(r.Series, Second{T: 7, Phase: "drain"})
	st := r.Steps()
	if len(st) != 2 || st[0].Rate != 100 || st[1].OfferedTPS != 200 || st[1].CommittedTPS != 100 || st[1].P99CommitMs != 600 || st[1].InFlightEnd != 6 || st[0].LinkBytesPS != 2000 || st[1].StartS != 3 || st[1].EndS != 6 {
		t.Fatalf("steps: %+v", st)
	}
	var b strings.Builder
	printSteps(&b, r)
	// 2,000 bytes/s over 2 links for 100 committed/s: 10 per payment per link.
	if !strings.Contains(b.String(), "3-6 s") || !strings.Contains(b.String(), "  10\n") {
		t.Errorf("table:\n%s", b.String())
	}
	r.Series = r.Series[:3]
	if r.Steps() != nil {
		t.Error("a load of one rate has no steps")
	}
}
