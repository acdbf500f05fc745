package history

import (
	"context"
	"fmt"
	"math"

	"github.com/tpslab/tpslab/internal/report"
)

// Change is one change point: where a new segment begins and how its mean
// differs from the previous segment's.
type Change struct {
	Index     int     `json:"index"` // entry where the new segment begins (0-based)
	Label     string  `json:"label"`
	Before    float64 `json:"before"` // mean of the segment before
	After     float64 `json:"after"`  // mean of the segment it begins
	ChangePct float64 `json:"change_pct"`
	Better    bool    `json:"better"`
}

// Newest is the check of the newest entry against the segment before it.
type Newest struct {
	Label      string  `json:"label"`
	Value      float64 `json:"value"`
	Mean       float64 `json:"baseline_mean"` // of the segment before it (since the last change)
	SD         float64 `json:"noise_sd"`      // that noise: the segment's sd, or the pooled sd of all segments when it is short
	Points     int     `json:"baseline_points"`
	ChangePct  float64 `json:"change_pct"`
	Regression bool    `json:"regression"`
	Why        string  `json:"why"`
}

// Analysis is a series' metric, its change points and the newest entry's check.
type Analysis struct {
	Series  string    `json:"series"`
	Metric  string    `json:"metric"`
	Unit    string    `json:"unit"`
	Better  string    `json:"better"`
	Values  []float64 `json:"values"`
	Labels  []string  `json:"labels"`
	Changes []Change  `json:"changes"`
	Newest  *Newest   `json:"newest,omitempty"`
}

// NoiseSigmas is how far beyond the history's own noise the newest point
// must fall to be called a regression, and MinChangePct the least relative
// change that counts (below it, runs on one machine do not resolve).
const (
	NoiseSigmas  = 3.0
	MinChangePct = 2.0
)

// Analyze reads metric from entries and finds its change points, then
// checks the newest entry against the segment before it.
func Analyze(ctx context.Context, series string, entries []Entry, metric string) (Analysis, error) {
	var def *report.Def
	for _, d := range report.Defs(nil) {
		if d.Name == metric {
			d := d
			def = &d
		}
	}
	if def == nil {
		return Analysis{}, fmt.Errorf("--metric: %q is not a metric tpslab keeps, expected one of committed_tps, p50_commit, p99_commit, reject_rate, ...", metric)
	}
	a := Analysis{Series: series, Metric: metric, Unit: def.Unit, Better: def.Better}
	for _, e := range entries {
		if v, ok := e.Metrics[metric]; ok {
			a.Values = append(a.Values, v)
			a.Labels = append(a.Labels, e.Label)
		}
	}
	if len(a.Values) == 0 {
		return a, fmt.Errorf("series %q has no entry with %s", series, metric)
	}
	better := func(after, before float64) bool { return (after > before) == (def.Better != "lower") }
	cps := ChangePoints(ctx, a.Values, 1)
	bounds := append(append([]int{0}, cps...), len(a.Values))
	for i, cp := range cps {
		before, _ := meanSD(a.Values[bounds[i]:cp])
		after, _ := meanSD(a.Values[cp:bounds[i+2]])
		c := Change{Index: cp, Label: a.Labels[cp], Before: before, After: after, Better: better(after, before)}
		if before != 0 {
			c.ChangePct = 100 * (after/before - 1)
		}
		a.Changes = append(a.Changes, c)
	}
	a.Newest = newest(ctx, a.Values, a.Labels, better)
	return a, nil
}

// newest checks the last value against the segment before it, found
// among the earlier values alone (the newest point cannot be a segment of
// its own). It is a regression when it is worse than that segment's mean
// by more than NoiseSigmas of the history's noise and by MinChangePct.
func newest(ctx context.Context, xs []float64, labels []string, better func(after, before float64) bool) *Newest {
	n := len(xs)
	if n < 4 {
		return nil
	}
	prior := xs[:n-1]
	cps := ChangePoints(ctx, prior, 2)
	start := 0
	if len(cps) > 0 {
		start = cps[len(cps)-1]
	}
	seg := prior[start:]
	mean, sd := meanSD(seg)
	if len(seg) < 3 {
		sd = pooledSD(prior, cps)
	}
	nw := &Newest{Label: labels[n-1], Value: xs[n-1], Mean: mean, SD: sd, Points: len(seg)}
	if mean != 0 {
		nw.ChangePct = 100 * (xs[n-1]/mean - 1)
	}
	worse := !better(xs[n-1], mean) && xs[n-1] != mean
	beyond := math.Abs(xs[n-1]-mean) > NoiseSigmas*sd && math.Abs(nw.ChangePct) >= MinChangePct
	nw.Regression = worse && beyond
	switch {
	case nw.Regression:
		nw.Why = fmt.Sprintf("%s is %.1f%% worse than the %d entries before it (mean %.4g), beyond %.0f× their noise (sd %.3g)", nw.Label, math.Abs(nw.ChangePct), len(seg), mean, NoiseSigmas, sd)
	case beyond:
		nw.Why = fmt.Sprintf("%s is %.1f%% better than the %d entries before it, beyond their noise", nw.Label, math.Abs(nw.ChangePct), len(seg))
	default:
		nw.Why = fmt.Sprintf("%s is within the noise of the %d entries before it (%+.1f%%, sd %.3g)", nw.Label, len(seg), nw.ChangePct, sd)
	}
	return nw
}

// pooledSD is the standard deviation within segments, pooled.
func pooledSD(xs []float64, cps []int) float64 {
	bounds := append(append([]int{0}, cps...), len(xs))
	var ss float64
	df := 0
	for i := 0; i+1 < len(bounds); i++ {
		seg := xs[bounds[i]:bounds[i+1]]
		m, _ := meanSD(seg)
		for _, x := range seg {
			ss += (x - m) * (x - m)
		}
		df += len(seg) - 1
	}
	if df <= 0 {
		return 0
	}
	return math.Sqrt(ss / float64(df))
}
