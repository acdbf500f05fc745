package compare

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tpslab/tpslab/internal/report"
)

// Paired recomputes each row of other against base from pairs of runs: the
// i-th run of each side ran next to each other (ab interleaves them), so
// the change is the geometric mean of the pairs' ratios B/A, and its
// interval Student's t over their logarithms (n−1 degrees of freedom; 95%,
// or Bonferroni's for the primary figures), taken back to ratios: it stays
// above −100% however few the pairs (issue 54: 2 pairs read −217.5%). With three runs
// a side a bootstrap of the means is too narrow (it resamples three values,
// and calls an identical build different); the pairs also cancel what
// drifted between pairs. Rows stay as they were when the sides differ in
// length or a pair has a zero baseline.
func Paired(base, other Set, rows []Row) []Row {
	n := len(base.Runs)
	if n < 2 || len(other.Runs) != n {
		return rows
	}
	defs := map[string]report.Def{}
	for _, d := range append(report.Defs(base.Runs[0].Telemetry), report.KindDefs(&base.Runs[0].Summary)...) {
		defs[d.Title()] = d
	}
	primaries := 0
	for _, r := range rows {
		if r.Primary {
			primaries++
		}
	}
	out := append([]Row(nil), rows...)
	for k := range out {
		r := &out[k]
		d, ok := defs[r.Metric]
		if !ok {
			continue
		}
		var diffs []float64
		for i := 0; i < n; i++ {
			a, okA := d.Run(&base.Runs[i].Summary)
			b, okB := d.Run(&other.Runs[i].Summary)
			if !okA || !okB || a <= 0 || b <= 0 {
				diffs = nil
				break
			}
			diffs = append(diffs, math.Log(b/a))
		}
		if len(diffs) != n {
			continue
		}
		m, sd := meanSD(diffs)
		alpha := Alpha
		if r.Primary {
			alpha /= float64(max(1, primaries))
		}
		half := tQuantile(1-alpha/2, n-1) * sd / math.Sqrt(float64(n))
		pct := func(l float64) float64 { return 100 * (math.Exp(l) - 1) }
		r.ChangePct, r.CILowPct, r.CIHighPct = pct(m), pct(m-half), pct(m+half)
		// Pairs cancel the drift between them that a within-set floor
		// measures: their own spread is in the interval already.
		r.NoiseFloorPct = 0
		r.Significant = Moved(r.ChangePct, r.NoiseFloorPct, r.CILowPct, r.CIHighPct)
		r.Better = (m > 0) == (d.Better == "higher")
		r.Samples = [2]int{n, n}
		r.PerSecond = false
	}
	return out
}

func meanSD(xs []float64) (m, sd float64) {
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		sd += (x - m) * (x - m)
	}
	return m, math.Sqrt(sd / float64(len(xs)-1))
}

// tQuantile is Student's t p-quantile for df degrees of freedom.
func tQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(df, 1))}.Quantile(p)
}
