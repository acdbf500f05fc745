package findmax

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/threshold"
)

// system is a synthetic chain whose capacity is cap tx/s: beyond it the
// committed rate stays at cap, latency climbs and the mempool grows.
func system(capacity float64, genLimit float64) func(context.Context, float64) (Step, error) {
	th, _ := threshold.Parse("p99_commit<=2s")
	obj := Objective{Thresholds: []threshold.Threshold{th}, MinRatio: 0.99, MaxGrowth: 1}
	return func(_ context.Context, rate float64) (Step, error) {
		r := &report.Result{EndedBecause: "completed"}
		s := &r.Summary
		s.Offered, s.Sent = int64(rate*20), int64(rate*20)
		s.OfferedTPS = rate
		s.CommittedTPS = math.Min(rate, capacity)
		s.LatencyMs.Commit = measure.Percentiles{P50: 600, P99: 1000}
		s.BlocksSummary.IntervalMsMean = 700
		mem := 0
		if rate > capacity {
			s.LatencyMs.Commit.P99 = 1000 + 3000*(rate/capacity-1)*10
			s.BlocksSummary.IntervalMsMean = 700 * rate / capacity * 2
			mem = int((rate - capacity) * 15)
		}
		if rate > genLimit {
			s.Generator.Limited = true
			s.Generator.Warning = "schedule lag p99 was 900 ms"
			s.SentTPS = genLimit
			s.CommittedTPS = math.Min(genLimit, capacity)
		}
		for i := 0; i < 20; i++ {
			r.Series = append(r.Series, report.Second{Phase: "steady", MempoolTxs: mem * i / 19})
		}
		return obj.Judge(rate, r), nil
	}
}

func TestSearchBracketsTheKnee(t *testing.T) {
	out, err := Search(context.Background(), Options{Start: 250, Factor: 2, Tolerance: 0.1, MaxRate: 1e6, MaxSteps: 20}, system(1700, 1e9))
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := out.Bracket[0], out.Bracket[1]
	if !(lo <= 1700 && hi > 1700 && (hi-lo)/lo <= 0.1) {
		t.Fatalf("bracket %v does not hold 1700 within 10%% (stopped: %s)", out.Bracket, out.Stopped)
	}
	if out.Sustainable != lo {
		t.Fatalf("sustainable %g, bracket %v", out.Sustainable, out.Bracket)
	}
	if !strings.Contains(strings.Join(out.Hints, "|"), "consensus: the mean block interval grew") {
		t.Fatalf("hints %v", out.Hints)
	}
}

// With a probe's estimate the steps start at 110% of it and move by the
// tolerance: two or three steps bracket the knee, whether the estimate was
// high or low.
func TestSearchFromAProbe(t *testing.T) {
	for _, c := range []struct{ capacity, probed float64 }{{1700, 1750}, {1700, 2100}, {1700, 1500}} {
		o := Options{Start: 250, Factor: 2, Tolerance: 0.1, MaxRate: 1e6, MaxSteps: 20,
			Probe: func(context.Context) (float64, error) { return c.probed, nil }}
		out, err := Search(context.Background(), o, system(c.capacity, 1e9))
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := out.Bracket[0], out.Bracket[1]
		if !(lo <= c.capacity && hi > c.capacity && (hi-lo)/lo <= 0.1+1e-9) || out.Probed != c.probed {
			t.Errorf("probe %g: bracket %v, probed %g (stopped: %s)", c.probed, out.Bracket, out.Probed, out.Stopped)
		}
		if out.Steps[0].Rate != math.Round(1.1*c.probed) || len(out.Steps) > 4 {
			t.Errorf("probe %g: steps %v, want the first at 110%% of the estimate and at most 4", c.probed, rates(out.Steps))
		}
	}
}

// The knee moves between windows: the steps measure a system of 1700 tx/s
// (and name 1625) and each confirmation run one of the capacities listed.
// A rate that misses steps down to 5% under what its run committed and is
// confirmed there; after two misses the highest step under the last that
// met the objective is named, unconfirmed: a rate that ran (issue 70).
func TestSearchConfirmsTheRate(t *testing.T) {
	for _, c := range []struct {
		later     []float64
		at        []float64 // the confirmations' rates
		named     float64
		confirmed bool
	}{
		{[]float64{1700}, []float64{1625}, 1625, true},
		{[]float64{1600, 1600}, []float64{1625, 1520}, 1520, true},
		{[]float64{1600, 1400}, []float64{1625, 1520}, 1500, false}, // the step that met it, not 5% under 1400
	} {
		var at []float64
		o := Options{Start: 250, Factor: 2, Tolerance: 0.1, MaxRate: 1e6, MaxSteps: 20,
			Confirm: func(ctx context.Context, rate float64) (Step, error) {
				at = append(at, rate)
				return system(c.later[len(at)-1], 1e9)(ctx, rate)
			}}
		out, err := Search(context.Background(), o, system(1700, 1e9))
		if err != nil {
			t.Fatal(err)
		}
		if out.Confirmed != c.confirmed || out.Sustainable != c.named || fmt.Sprint(at) != fmt.Sprint(c.at) {
			t.Errorf("later capacities %v: named %g, confirmed %v after confirmation runs at %v; want %g, %v, %v (stopped: %s)",
				c.later, out.Sustainable, out.Confirmed, at, c.named, c.confirmed, c.at, out.Stopped)
		}
		if last := out.Steps[len(out.Steps)-1]; !last.Confirm || last.Rate != at[len(at)-1] {
			t.Errorf("later capacities %v: the last step %+v is not the last confirmation", c.later, last)
		}
		// The page's verdict says what became of the confirmation.
		var page strings.Builder
		if err := WriteHTML(&page, out, "p99_commit<=2s", "40s"); err != nil {
			t.Fatal(err)
		}
		verdict := fmt.Sprintf("Sustainable: %.0f tx/s, confirmed (", c.named)
		if !c.confirmed {
			verdict = fmt.Sprintf("Sustainable: %.0f tx/s, not confirmed (", c.named)
		}
		if !strings.Contains(page.String(), verdict) {
			t.Errorf("later capacities %v: the page does not say %q", c.later, verdict)
		}
	}
}

func rates(steps []Step) []float64 {
	var out []float64
	for _, s := range steps {
		out = append(out, s.Rate)
	}
	return out
}

func TestSearchStopsAtTheGeneratorLimit(t *testing.T) {
	out, _ := Search(context.Background(), Options{Start: 250, Factor: 2, Tolerance: 0.1, MaxRate: 1e6, MaxSteps: 20}, system(1e9, 3000))
	if !strings.Contains(out.Stopped, "load generator limited") {
		t.Fatalf("stopped %q, want the generator named", out.Stopped)
	}
	if !strings.HasPrefix(out.Hints[0], "limit at ") || !strings.Contains(out.Hints[0], "the load generator") {
		t.Fatalf("hints %v", out.Hints)
	}
}

func TestHintsSayWhenSilent(t *testing.T) {
	r := &report.Result{}
	h := Hints(nil, &Step{Rate: 10, Result: r, Why: []string{"p99_commit<=2s (actual 2100)"}})
	if len(h) != 1 || !strings.HasPrefix(h[0], "no clear limit found in the data collected") {
		t.Fatalf("hints %v", h)
	}
}

// At a knee where the validators' CPU is full, find-max names the nodes'
// CPU (which node, how much), the allocation rate and p2p bytes per
// payment that grew, and the costs per payment that grew, each against the
// last sustained step.
func TestHintsNameTheNodes(t *testing.T) {
	step := func(rate, tps, cpu, alloc, p2p float64, machine float64) *Step {
		r := &report.Result{}
		r.Summary.CommittedTPS = tps
		r.Summary.Generator = report.Generator{Cores: 2, CPUPercent: 20, MachineCPUPercent: machine}
		r.Summary.Telemetry = map[string]telemetry.Stat{}
		for _, n := range []string{"node0", "node1", "node2", "node3"} {
			r.Telemetry = append(r.Telemetry, telemetry.Metric{Name: n + ".cpu_percent", Role: "validator", Better: "lower"})
			r.Summary.Telemetry[n+".cpu_percent"] = telemetry.Stat{Mean: cpu}
			r.Summary.Telemetry[n+".alloc_bytes"] = telemetry.Stat{Mean: alloc}
			r.Summary.Telemetry[n+".p2p_send_bytes"] = telemetry.Stat{Mean: p2p}
		}
		r.Summary.Cost.NodeCPUus = 4 * cpu * 1e4 / tps
		return &Step{Rate: rate, Result: r}
	}
	pass := step(1000, 1000, 30, 20<<20, 500<<10, 75)
	fail := step(1500, 1300, 50, 40<<20, 1<<20, 99)
	h := strings.Join(Hints(pass, fail), "\n")
	for _, want := range []string{"nodes' CPU saturated at 1500 tx/s: node0 50%", "together 200%", "against 120% together at 1000 tx/s",
		"allocation rate grew", "p2p bandwidth", "cost per payment grew from 1000 to 1500 tx/s: node_cpu_us_per_tx 1200 → 1538"} {
		if !strings.Contains(h, want) {
			t.Errorf("hints lack %q:\n%s", want, h)
		}
	}
	calm := step(1500, 1480, 20, 20<<20, 500<<10, 60)
	if h := strings.Join(Hints(pass, calm), "\n"); strings.Contains(h, "CPU saturated") || strings.Contains(h, "CPU per payment") {
		t.Errorf("idle nodes called saturated:\n%s", h)
	}
	// A heavy chain: 4 validators at 38% each for 119 tx/s, 76% busy: not
	// full, but its CPU per payment caps the machine near 142 tx/s.
	heavy := step(119, 108, 38, 30<<20, 140<<10, 76)
	heavy.Result.Summary.Generator.CPUPercent = 11
	heavy.Result.Summary.Cost.NodeCPUus = 13300
	if h := strings.Join(Hints(nil, heavy), "\n"); !strings.Contains(h, "nodes' CPU per payment: the validators spent 13300 µs of CPU per committed payment at 119 tx/s, which caps this machine's 2 cores (less the generator's 11%) near 142 tx/s") {
		t.Errorf("the heavy chain's cap is not named:\n%s", h)
	}
}

// Sequence mismatches that make up most failures are named; committed
// sequence_too_high failures get their likely cause (a proposer's list out
// of order), sequence rejections alone do not.
func TestHintsNameSequenceMismatches(t *testing.T) {
	step := func(failed int64) *Step {
		r := &report.Result{}
		s := &r.Summary
		s.Sent = 1000
		s.Rejected = map[string]int64{"sequence_too_high": 40}
		s.RejectedTotal = 40
		if failed > 0 {
			s.Failed = map[string]int64{"sequence_too_high": failed}
			s.FailedTotal = failed
		}
		s.Resyncs = 3
		return &Step{Rate: 100, Result: r}
	}
	find := func(h []string) string {
		for _, x := range h {
			if strings.HasPrefix(x, "nonce handling:") {
				return x
			}
		}
		return ""
	}
	if x := find(Hints(nil, step(2))); !strings.Contains(x, "42 of 42") || !strings.Contains(x, "2 committed with sequence_too_high") {
		t.Errorf("with committed failures: %q", x)
	}
	if x := find(Hints(nil, step(0))); x == "" || strings.Contains(x, "committed with") {
		t.Errorf("rejections only: %q", x)
	}
}

// A chain that said before the load that its blocks cannot hold the
// offered rate is named in the hints (issue 24).
func TestHintsNameBlockSpace(t *testing.T) {
	fail := &Step{Rate: 400, Result: &report.Result{Notes: []string{"warning: block space: blocks can hold at most 10 payments"}}}
	h := Hints(nil, fail)
	found := false
	for _, x := range h {
		found = found || strings.Contains(x, "block space (blocks can hold at most 10 payments")
	}
	if !found {
		t.Errorf("hints %v", h)
	}
}

// A step whose payments left late while the generator kept up waited for
// the system's answers: it is not sustained, unless the bound is off or
// the generator itself was the limit.
func TestJudgeScheduleLag(t *testing.T) {
	r := &report.Result{EndedBecause: "completed"}
	s := &r.Summary
	s.OfferedTPS, s.CommittedTPS = 1000, 1000
	s.LatencyMs.ScheduleLag = measure.Percentiles{P99: 230}
	o := Objective{MinRatio: 0.99, MaxGrowth: 1, MaxLagMs: 100}
	if st := o.Judge(1000, r); st.OK || st.Lag != 230 || len(st.Why) != 1 || !strings.Contains(st.Why[0], "schedule lag p99 230 ms > 100 ms") {
		t.Errorf("lag 230 ms under a 100 ms bound: %+v", st)
	}
	s.LatencyMs.ScheduleLag.P99 = 63
	if st := o.Judge(1000, r); !st.OK {
		t.Errorf("lag 63 ms: %v", st.Why)
	}
	s.LatencyMs.ScheduleLag.P99 = 230
	o.MaxLagMs = 0
	if st := o.Judge(1000, r); !st.OK {
		t.Errorf("no bound: %v", st.Why)
	}
	o.MaxLagMs, s.Generator.Limited = 100, true
	if st := o.Judge(1000, r); !st.OK {
		t.Errorf("generator-limited: %v (the search stops on the generator, not on the system)", st.Why)
	}
}

// A system that dies at 1000 tx/s: the search ends there, with the rate
// the steps under it met (never a confirmation on a dead network), and
// the death is the limit it names.
func TestSearchStopsWhereTheSystemDied(t *testing.T) {
	live := system(1e9, 1e9)
	measure := func(ctx context.Context, rate float64) (Step, error) {
		if rate < 1000 {
			return live(ctx, rate)
		}
		r := &report.Result{EndedBecause: "target_failed: every node of the network is down (node0 ended with: fatal error: concurrent map writes)"}
		r.Summary.Offered, r.Summary.OfferedTPS = int64(rate*5), rate
		return Objective{MinRatio: 0.99, MaxGrowth: 1}.Judge(rate, r), nil
	}
	confirmed := 0
	o := Options{Start: 250, Factor: 2, Tolerance: 0.1, MaxRate: 1e6, MaxSteps: 20,
		Confirm: func(context.Context, float64) (Step, error) { confirmed++; return Step{}, nil }}
	out, err := Search(context.Background(), o, measure)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Died || out.Sustainable != 500 || out.Bracket != [2]float64{500, 1000} || confirmed != 0 || len(out.Steps) != 3 {
		t.Fatalf("died %v, sustainable %g, bracket %v, %d confirmations, steps %v; want the search to end at 1000 naming 500 (stopped: %s)",
			out.Died, out.Sustainable, out.Bracket, confirmed, rates(out.Steps), out.Stopped)
	}
	if !strings.Contains(out.Stopped, "stopped in the step at 1000 tx/s") || !strings.Contains(out.Stopped, "concurrent map writes") {
		t.Errorf("stopped %q does not name the step and the node's last words", out.Stopped)
	}
	if len(out.Hints) == 0 || !strings.Contains(out.Hints[0], "limit at 1000 tx/s") || !strings.Contains(out.Hints[0], "every node of the network is down") {
		t.Errorf("hints %v do not lead with the death", out.Hints)
	}
}
