package threshold

import (
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/telemetry"
)

func TestThresholds(t *testing.T) {
	s := &report.Summary{CommittedTPS: 1200, RejectRate: 0.004}
	s.LatencyMs.Commit = measure.Percentiles{P99: 1800}
	for expr, want := range map[string]bool{
		"committed_tps>=1000": true, "committed_tps >= 1500": false,
		"p99_commit<=2s": true, "p99_commit<=1500ms": false, "p99_commit<1900": true,
		"reject_rate<1%": true, "reject_rate<0.1%": false, "reject_rate<=0.004": true,
	} {
		th, err := Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := th.Check(s); got.OK != want {
			t.Errorf("%s: ok=%v (actual %g), want %v", expr, got.OK, got.Actual, want)
		}
	}
	for expr, msg := range map[string]string{
		"tps>=5":              `unknown metric "tps"`,
		"committed_tps":       "expected metric, operator",
		"p99_commit<=soon":    "expected a duration",
		"reject_rate<x%":      "expected a percentage",
		"committed_tps>=many": "expected a finite number",
		"committed_tps>=NaN":  "expected a finite number",
		"p99_commit<=":        "expected a duration such as 2s",
		"p99_commit<=-1s":     "expected a duration such as 2s",
		"reject_rate<200%":    "expected a percentage between 0% and 100%",
		"reject_rate<1.5":     "a fraction between 0 and 1",
		"reject_rate<-1%":     "a fraction between 0 and 1",
	} {
		if _, err := Parse(expr); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", expr, err, msg)
		}
	}
}

// Cost figures and telemetry metrics come from the one registry: a
// threshold can name them, and one a run did not measure fails, saying so.
func TestThresholdsOnCostAndTelemetry(t *testing.T) {
	s := &report.Summary{CommittedTPS: 1000, Cost: report.Cost{NodeCPUus: 180, GeneratorCPUus: 25},
		Telemetry: map[string]telemetry.Stat{"node0.cpu_percent": {Mean: 45}, "ledger.retries_per_payment": {Mean: 0.2}}}
	for expr, want := range map[string]bool{
		"node_cpu_us_per_tx<=200": true, "node_cpu_us_per_tx<=150": false, "generator_cpu_us_per_tx<30": true,
		"node0.cpu_percent<50": true, "node0.cpu_percent>=50": false, "ledger.retries_per_payment<=0.1": false,
	} {
		th, err := Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := th.Check(s); got.OK != want {
			t.Errorf("%s: ok=%v (%s), want %v", expr, got.OK, got.Actually(), want)
		}
	}
	for _, expr := range []string{"wire_bytes_per_tx<=3000", "node7.cpu_percent<50"} {
		th, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := th.Check(s); got.OK || !strings.Contains(got.Actually(), "not measured") {
			t.Errorf("%s on a run without it: %+v", expr, got)
		}
	}
	if _, err := Parse("Node0.CPU<5"); err == nil || !strings.Contains(err.Error(), "telemetry metric such as node0.cpu_percent") {
		t.Errorf("a name that is neither: %v", err)
	}
}

// A threshold names one payment kind of a mix: its figures over the steady
// window; a kind the run did not send is not measured, and a bad name is
// refused.
func TestThresholdsByKind(t *testing.T) {
	s := &report.Summary{ByKind: map[string]report.KindFigures{
		"send":       {Sent: 700, Committed: 690, CommittedTPS: 69},
		"multi_send": {Sent: 200, Committed: 150, Failed: 50, CommittedTPS: 15},
	}}
	for expr, want := range map[string]bool{
		"committed_tps{kind=send}>=60":          true,
		"committed_tps{kind=multi_send}>=20":    false,
		"committed_failed{kind=multi_send}==50": true,
		"sent{kind=send}<701":                   true,
		"committed{kind=multi_send} >= 151":     false,
	} {
		th, err := Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if o := th.Check(s); o.OK != want || o.Note != "" {
			t.Errorf("%s: %+v, want ok=%v", expr, o, want)
		}
	}
	th, err := Parse("committed_tps{kind=erc20}>=1")
	if err != nil {
		t.Fatal(err)
	}
	if o := th.Check(s); o.OK || o.Note == "" {
		t.Errorf("a kind not sent: %+v, want not measured", o)
	}
	if _, err := Parse("committed_tps{kind=}>=1"); err == nil {
		t.Error("an empty kind was taken")
	}
}
