package campaign_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
)

// figures writes, for each run, a result whose committed TPS is its
// build's figure plus a spread that cycles with the repetition: the search
// alone is under test here (the networks' runs are TestBisectNamesTheSlowBuild's).
func figures(t *testing.T, tps map[string]float64) func(ctx context.Context, sc scenario.Scenario, node string) error {
	n := 0
	return func(_ context.Context, sc scenario.Scenario, node string) error {
		n++
		v := tps[filepath.Base(filepath.Dir(sc.Out))[2:]]
		v *= 1 + 0.02*float64(n%3-1) // ±2%: a noise floor of 4%
		r := report.Result{SchemaVersion: report.SchemaVersion, Status: "complete", EndedBecause: "completed", StartedAt: time.Now().UTC(), Dir: sc.Out}
		r.Summary.Steady.DurationS, r.Summary.Steady.Committed, r.Summary.CommittedTPS = 10, int64(v*10), v
		r.Summary.Offered, r.Summary.Sent, r.Summary.Accepted, r.Summary.Committed = 5000, 5000, 5000, int64(v*10)
		os.MkdirAll(sc.Out, 0o755)
		var series []byte
		for i := 1; i <= 10; i++ {
			b, _ := json.Marshal(report.Second{T: float64(i), Phase: "steady", Counts: measure.Counts{Offered: 500, Sent: 500, Accepted: 500, Committed: int64(v)}})
			series = append(append(series, b...), '\n')
		}
		os.WriteFile(filepath.Join(sc.Out, "series.jsonl"), series, 0o644)
		return report.WriteJSON(filepath.Join(sc.Out, "result.json"), r)
	}
}

func TestBisectSearch(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "node")
	os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		name  string
		tps   []float64
		first int
		want  string
	}{
		{"the third slower", []float64{1000, 1000, 400, 400, 400}, 2, "first moved: c (build 3 of 5)"},
		{"the last slower", []float64{1000, 1000, 1000, 1000, 400}, 4, "first moved: e (build 5 of 5)"},
		{"identical", []float64{1000, 1000, 1000, 1000, 1000}, -1, "no change found: e's committed TPS is within noise of a's"},
		{"two builds", []float64{1000, 500}, 1, "first moved: b (build 2 of 2)"},
		{"a middle within noise of both ends", []float64{1000, 1000, 965, 930, 930}, -1, "cannot decide at step 1: c is within noise of both a"},
	} {
		labels := []string{"a", "b", "c", "d", "e"}[:len(c.tps)]
		tps := map[string]float64{}
		var builds []string
		for i, l := range labels {
			tps[l], builds = c.tps[i], append(builds, prog)
		}
		o := campaign.BisectOptions{Builds: builds, Labels: labels, Figure: report.Defs(nil)[0], Repeat: 3, Out: t.TempDir(), Log: io.Discard, Run: figures(t, tps)}
		s, err := campaign.Bisect(context.Background(), scenario.Default(), o)
		if err != nil || s.First != c.first || !strings.HasPrefix(s.Conclusion, c.want) {
			t.Errorf("%s: first %d (%v): %s; want %d, %q", c.name, s.First, err, s.Conclusion, c.first, c.want)
		}
	}
}
