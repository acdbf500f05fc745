package compare

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/report"
)

func set(name string, tps ...float64) Set {
	s := Set{Name: name}
	for _, v := range tps {
		r := &report.Result{}
		r.Summary.CommittedTPS = v
		r.Summary.LatencyMs.Commit.P50 = 1000 / v * 600
		r.Summary.LatencyMs.Commit.P99 = 1000 / v * 900
		s.Runs = append(s.Runs, r)
	}
	return s
}

func TestCompareFindsAShiftAndNotNoise(t *testing.T) {
	a := set("A", 1000, 1010, 995)
	b := set("B", 1200, 1190, 1215)
	rows := Compare(a, b)
	if !rows[0].Significant || !rows[0].Better || rows[0].CILowPct <= 0 {
		t.Fatalf("a +20%% shift not found: %+v", rows[0])
	}
	if v := Verdict(a, b, rows); !strings.HasPrefix(v, "B is faster than A: +") {
		t.Fatalf("verdict %q", v)
	}
	same := set("C", 1003, 998, 1007)
	rows = Compare(a, same)
	if rows[0].Significant {
		t.Fatalf("noise called significant: %+v", rows[0])
	}
	if v := Verdict(a, same, rows); !strings.Contains(v, "no significant difference") {
		t.Fatalf("verdict %q", v)
	}
}

// Over many pairs of samples from one distribution, the 95% interval
// excludes zero (with a relevant effect) rarely.
func TestFalsePositiveRate(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	draw := func() []float64 {
		xs := make([]float64, 25)
		for i := range xs {
			xs[i] = 1000 + 50*rng.NormFloat64()
		}
		return xs
	}
	fp := 0
	for i := 0; i < 200; i++ {
		lo, hi := Bootstrap(draw(), draw(), int64(i))
		if lo > 0 || hi < 0 {
			fp++
		}
	}
	if fp > 25 { // 5% expected: 10 of 200
		t.Fatalf("%d of 200 identical pairs had an interval excluding 0", fp)
	}
}

// Cost per payment is compared like speed: a build that spends 30% more
// node CPU per payment at the same rate is called worse, from repeated
// runs; a cost figure only one side has is left out.
func TestCompareCost(t *testing.T) {
	a := set("A", 1000, 1010, 995, 1005)
	b := set("B", 1002, 1000, 1008, 998)
	for i, r := range a.Runs {
		r.Summary.Cost = report.Cost{NodeCPUus: 180 + float64(i), GeneratorCPUus: 20, WireBytes: 2100}
	}
	for i, r := range b.Runs {
		r.Summary.Cost = report.Cost{NodeCPUus: 235 - float64(i), GeneratorCPUus: 20}
	}
	rows := Compare(a, b)
	byName := map[string]Row{}
	for _, r := range rows {
		byName[r.Metric] = r
	}
	cpu, ok := byName["node_cpu_us_per_tx"]
	if !ok || !cpu.Significant || cpu.Better || cpu.ChangePct < 25 {
		t.Fatalf("node CPU per payment +30%%: %+v", cpu)
	}
	if g := byName["generator_cpu_us_per_tx"]; g.Significant {
		t.Errorf("equal generator cost called different: %+v", g)
	}
	if _, ok := byName["wire_bytes_per_tx"]; ok {
		t.Error("wire bytes compared though B did not measure them")
	}
	if rows[0].Significant {
		t.Errorf("equal throughput called different: %+v", rows[0])
	}
}

// The text and markdown tables lead with the primary figures (committed
// TPS, commit latency, rejections: issue 54), then significant changes,
// at most 10 rows, and leave out per-node rows that did not change (issue
// 35: 42 markdown rows, most of them telemetry); the page says n/a, never
// NaN, without a baseline.
func TestTablesLeadWithChanges(t *testing.T) {
	nan := math.NaN()
	rows := []Row{
		{Metric: "node0.p2p_send_bytes", Base: 30, Value: 45, ChangePct: 50, CILowPct: 40, CIHighPct: 60, Significant: true},
		{Metric: "committed_tps", Base: 1000, Value: 990, ChangePct: -1, CILowPct: -3, CIHighPct: 1, Primary: true},
		{Metric: "node0.cpu_percent", Base: 30, Value: 31, ChangePct: 3, CILowPct: -2, CIHighPct: 8},
		{Metric: "node1.cpu_percent", Base: 30, Value: 45, ChangePct: 20, CILowPct: 10, CIHighPct: 30, Significant: true},
		{Metric: "p99_commit", Base: 900, Value: 1200, ChangePct: 33, CILowPct: 20, CIHighPct: 45, Significant: true, Primary: true},
		{Metric: "reject_rate", Base: 0, Value: 0.1, CILowPct: nan, CIHighPct: nan, Primary: true},
	}
	for i := 0; i < 12; i++ {
		rows = append(rows, Row{Metric: fmt.Sprintf("other_%02d", i), Base: 1, Value: 1})
	}
	c := Comparison{Base: Set{Name: "a"}, Against: []Against{{Set: Set{Name: "b"}, Verdict: "b is slower", Rows: rows}}}
	var txt, md, page strings.Builder
	c.Print(&txt)
	c.Markdown(&md)
	if err := c.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	first := strings.Index(out, "committed_tps")
	if strings.Contains(out, "node0.cpu_percent") || !strings.Contains(out, "8 more rows left out") || first < 0 ||
		strings.Index(out, "p99_commit") < first || strings.Index(out, "reject_rate") < first ||
		strings.Index(out, "node0.p2p_send_bytes") < strings.Index(out, "reject_rate") || strings.Index(out, "node1.cpu_percent") < strings.Index(out, "node0.p2p_send_bytes") {
		t.Errorf("text table:\n%s", out)
	}
	if n := strings.Count(md.String(), "\n| "); strings.Contains(md.String(), "node0.cpu_percent") || n > 11 {
		t.Errorf("markdown, %d lines of table:\n%s", n, md.String())
	}
	if strings.Contains(page.String(), "NaN") || !strings.Contains(page.String(), "n/a") {
		t.Error("the page prints NaN for an interval without a baseline")
	}
	c.All = true
	txt.Reset()
	c.Print(&txt)
	if !strings.Contains(txt.String(), "node0.cpu_percent") {
		t.Errorf("--all:\n%s", txt.String())
	}
}

// Intervals that cannot be: a few wild values a side never give a change
// below -100% of a figure that cannot be negative, a baseline near 0 gives
// a factor, not a percentage in the millions, and a single run's columns
// are its own figures (issue 70).
func TestNoImpossibleIntervals(t *testing.T) {
	r := Row{Base: 0.0001, Value: 9.05, ChangePct: 100 * (9.05/0.0001 - 1), CILowPct: -50, CIHighPct: 9e6}
	if got := r.Change(); got != "×9.05e+04" {
		t.Errorf("change from a baseline near 0: %q", got)
	}
	if got := r.Interval(); !strings.HasPrefix(got, "n/a (beyond ±1000%") {
		t.Errorf("interval from a baseline near 0: %q", got)
	}
	lo, _ := Welch([]float64{100, 900}, []float64{50, 1000}, Alpha)
	if lo >= -100 {
		t.Skipf("Welch's lower bound %.1f%%: the case needs one below -100%%", lo)
	}
	a, b := Set{Name: "a", Runs: []*report.Result{withTPS(100), withTPS(900)}}, Set{Name: "b", Runs: []*report.Result{withTPS(50), withTPS(1000)}}
	for _, row := range Compare(a, b) {
		if row.Metric == "committed TPS" && row.CILowPct < -100 {
			t.Errorf("committed TPS interval from %.1f%%: a rate cannot fall by more than all of it", row.CILowPct)
		}
	}
}

func withTPS(tps float64) *report.Result {
	r := &report.Result{Status: "complete"}
	r.Summary.CommittedTPS, r.Summary.Committed, r.Summary.Steady.DurationS = tps, int64(tps*10), 10
	return r
}
