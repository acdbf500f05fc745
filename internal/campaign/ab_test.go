package campaign

import (
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
)

// fakeRuns stands for two builds: each repetition writes a finished result
// whose committed TPS and commit latency are the build's mean times the
// machine's drift and noise. ab's verdict is pure statistics over written
// results, so it is tested on them; one short end-to-end ab in internal/cli
// runs it on two real builds.
func fakeRuns(t *testing.T, meanA, meanB float64, seed int64) func(context.Context, scenario.Scenario, string) error {
	rng := rand.New(rand.NewSource(seed))
	drift := 1.0
	return func(_ context.Context, sc scenario.Scenario, node string) error {
		drift *= 1 + 0.01*rng.NormFloat64() // the machine drifts over both builds
		mean := meanA
		if strings.Contains(node, "/b/") || strings.HasSuffix(node, "/b") || strings.Contains(sc.Out, "/b/rep-") {
			mean = meanB
		}
		tps := mean * drift * (1 + 0.01*rng.NormFloat64())
		r := report.Result{SchemaVersion: report.SchemaVersion, Status: "complete", EndedBecause: "completed", StartedAt: time.Now().UTC(), Dir: sc.Out}
		r.Summary.Steady.DurationS = 10
		r.Summary.Steady.Committed = int64(10 * tps)
		r.Summary.Offered, r.Summary.Sent, r.Summary.Accepted, r.Summary.Committed = int64(10*mean), int64(10*mean), int64(10*mean), int64(10*tps)
		r.Summary.CommittedTPS = tps
		lat := 1000 * 1000 / tps // slower builds commit later
		r.Summary.LatencyMs.Commit.P50, r.Summary.LatencyMs.Commit.P99 = lat, 2*lat
		if err := os.MkdirAll(sc.Out, 0o755); err != nil {
			return err
		}
		var series []byte
		for i := 1; i <= 10; i++ {
			x := report.Second{T: float64(i), Phase: "steady", Counts: measure.Counts{Offered: int64(mean), Sent: int64(mean), Accepted: int64(mean), Committed: int64(tps)}}
			x.CommitMs.P50, x.CommitMs.P99 = lat, 2*lat
			b, err := json.Marshal(x)
			if err != nil {
				return err
			}
			series = append(append(series, b...), '\n')
		}
		if err := os.WriteFile(sc.Out+"/series.jsonl", series, 0o644); err != nil {
			return err
		}
		return report.WriteJSON(sc.Out+"/result.json", r)
	}
}

func ab(t *testing.T, meanA, meanB float64, repeat int, seed int64) compare.Against {
	t.Helper()
	node := t.TempDir() + "/node"
	if err := os.WriteFile(node, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := ABOptions{A: node, B: node, Repeat: repeat, Out: t.TempDir(), Log: io.Discard, Run: fakeRuns(t, meanA, meanB, seed)}
	c, err := AB(context.Background(), scenario.Default(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Against) != 1 {
		t.Fatalf("%d comparisons, want 1", len(c.Against))
	}
	return c.Against[0]
}

// A build 20% slower is named worse with an interval that excludes zero and
// is a regression past 5%; two identical builds over many seeds are never
// called different by the paired verdict. Two pairs (one degree of
// freedom) cannot resolve 20% at the primary figures' family level: the
// intervals say so rather than guess.
func TestABVerdicts(t *testing.T) {
	for _, repeat := range []int{3, 4} {
		a := ab(t, 1000, 800, repeat, 1)
		if !strings.HasPrefix(a.Verdict, "B is slower than A: ") {
			t.Errorf("%d pairs, B 20%% slower: verdict %q", repeat, a.Verdict)
		}
		r := a.Rows[0]
		if !r.Significant || r.Better || r.CIHighPct >= 0 {
			t.Errorf("%d pairs, B 20%% slower: committed TPS row %+v", repeat, r)
		}
		if regs := Regressions(compare.Comparison{Against: []compare.Against{a}}, 5); len(regs) == 0 {
			t.Errorf("%d pairs, B 20%% slower: no regression past 5%%", repeat)
		}
	}
	called := 0
	for seed := int64(1); seed <= 20; seed++ {
		a := ab(t, 1000, 1000, 3, seed)
		if a.Verdict != "B vs A: no significant difference" {
			called++
			t.Logf("seed %d: identical builds: %q", seed, a.Verdict)
		}
		if regs := Regressions(compare.Comparison{Against: []compare.Against{a}}, 5); len(regs) > 0 {
			t.Errorf("seed %d: identical builds called a regression: %+v", seed, regs)
		}
	}
	// A 95% interval may miss on about one seed in 20; more is a broken test.
	if called > 3 {
		t.Errorf("identical builds called different in %d of 20 seeds", called)
	}
}
