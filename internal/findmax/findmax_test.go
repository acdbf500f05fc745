package findmax

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
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

func TestSearchStopsAtTheGeneratorLimit(t *testing.T) {
	out, _ := Search(context.Background(), Options{Start: 250, Factor: 2, Tolerance: 0.1, MaxRate: 1e6, MaxSteps: 20}, system(1e9, 3000))
	if !strings.Contains(out.Stopped, "load generator limited") {
		t.Fatalf("stopped %q, want the generator named", out.Stopped)
	}
	if !strings.HasPrefix(out.Hints[0], "generator:") {
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
