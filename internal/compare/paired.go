package compare

import (
	"math"

	"github.com/tpslab/tpslab/internal/report"
)

// Paired recomputes each row of other against base from pairs of runs: the
// i-th run of each side ran next to each other (ab interleaves them), so
// the change is the mean of the pairs' relative changes, and its 95%
// interval Student's t over them (n−1 degrees of freedom). With three runs
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
			if !okA || !okB || a == 0 {
				diffs = nil
				break
			}
			diffs = append(diffs, 100*(b/a-1))
		}
		if len(diffs) != n {
			continue
		}
		m, sd := meanSD(diffs)
		half := tQuantile975(n-1) * sd / math.Sqrt(float64(n))
		r.ChangePct, r.CILowPct, r.CIHighPct = m, m-half, m+half
		r.Significant = (r.CILowPct > 0 || r.CIHighPct < 0) && math.Abs(m) >= MinEffectPct
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

// tQuantile975 is Student's t 97.5% quantile for df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < len(table) {
		return table[max(df, 1)]
	}
	return 1.96 + 2.4/float64(df) // within 0.1% of the quantile past 30
}
