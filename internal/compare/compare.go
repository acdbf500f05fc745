// Package compare tells whether one set of runs differs from another, metric
// by metric, with a bootstrap confidence interval on the relative change.
package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// Set is one side of a comparison: a run, or the repetitions of a scenario.
type Set struct {
	Name string
	Runs []*report.Result
}

// Load reads a run directory, or a directory whose subdirectories are runs
// (as `run --repeat` writes them). It refuses runs it cannot compare: an
// unreadable or foreign result, a run that did not finish, a run without a
// steady window.
func Load(dir string) (Set, error) {
	s := Set{Name: dir}
	r, err := report.ReadResult(dir)
	switch {
	case err == nil:
		s.Runs = []*report.Result{r}
	case !errors.Is(err, os.ErrNotExist):
		return s, err
	default:
		if _, err := os.Stat(dir); err != nil {
			return s, err
		}
		subs, _ := filepath.Glob(filepath.Join(dir, "*", "result.json"))
		sort.Strings(subs)
		for _, p := range subs {
			r, err := report.ReadResult(filepath.Dir(p))
			if err != nil {
				return s, err
			}
			s.Runs = append(s.Runs, r)
		}
		if len(s.Runs) == 0 {
			return s, fmt.Errorf("%s: no result.json in it or in its subdirectories", dir)
		}
	}
	for _, r := range s.Runs {
		if why := r.Incomplete(); why != "" {
			return s, fmt.Errorf("%s: the run did not finish (%s), so it has no figures to compare", r.Dir, why)
		}
		if r.Summary.Steady.DurationS == 0 {
			return s, fmt.Errorf("%s: no steady data to compare (the run ended: %s; its load had no whole second past the warm-up)", r.Dir, r.EndedBecause)
		}
	}
	return s, nil
}

// Metric is what is compared.
type Metric struct {
	Name         string
	Unit         string
	HigherBetter bool
	run          func(s *report.Summary) float64 // one value per run
	second       func(s *report.Second) (float64, bool)
}

// Metrics are compared in this order; the first is the headline.
var Metrics = []Metric{
	{"committed TPS", "tx/s", true, func(s *report.Summary) float64 { return s.CommittedTPS },
		func(s *report.Second) (float64, bool) { return float64(s.Committed), true }},
	{"p50 commit", "ms", false, func(s *report.Summary) float64 { return s.LatencyMs.Commit.P50 },
		func(s *report.Second) (float64, bool) { return s.CommitMs.P50, s.CommitMs.Count > 0 }},
	{"p99 commit", "ms", false, func(s *report.Summary) float64 { return s.LatencyMs.Commit.P99 },
		func(s *report.Second) (float64, bool) { return s.CommitMs.P99, s.CommitMs.Count > 0 }},
	{"reject rate", "%", false, func(s *report.Summary) float64 { return 100 * s.RejectRate },
		func(s *report.Second) (float64, bool) {
			if s.Sent == 0 {
				return 0, false
			}
			return 100 * float64(measure.Sum(s.Rejected)) / float64(s.Sent), true
		}},
}

// telemetryMetrics are the metrics read from inside the system that both
// sets have and that have a direction (retries: lower is better) or are
// per payment (database transactions per payment), in name order.
func telemetryMetrics(base, other Set) []Metric {
	has := func(s Set, name string) bool {
		for _, r := range s.Runs {
			if _, ok := r.Summary.Telemetry[name]; !ok {
				return false
			}
		}
		return true
	}
	var out []Metric
	for _, d := range base.Runs[0].Telemetry {
		names := []string{}
		if d.Better != "" {
			names = append(names, d.Name)
		}
		if d.PerPayment {
			names = append(names, d.Name+"_per_payment")
		}
		for _, name := range names {
			if !has(base, name) || !has(other, name) {
				continue
			}
			unit := d.Unit
			if unit == "1" {
				unit = ""
			}
			m := Metric{Name: name, Unit: unit, HigherBetter: d.Better == "higher",
				run: func(s *report.Summary) float64 { return s.Telemetry[name].Mean }}
			if name == d.Name {
				m.second = func(s *report.Second) (float64, bool) { v, ok := s.Telemetry[name]; return v, ok }
			} else {
				m.Unit = d.UnitPer()
				base := d.Name
				m.second = func(s *report.Second) (float64, bool) {
					v, ok := s.Telemetry[base]
					if !ok || s.Committed == 0 {
						return 0, false
					}
					return v / float64(s.Committed), true
				}
			}
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// samples gives the values a set offers for a metric: one per repetition,
// or, for a single run, one per steady second (weaker evidence: seconds of
// one run are neither independent nor a fresh network).
func samples(s Set, m Metric) (xs []float64, perSecond bool) {
	if len(s.Runs) > 1 {
		for _, r := range s.Runs {
			xs = append(xs, m.run(&r.Summary))
		}
		return xs, false
	}
	for i := range s.Runs[0].Series {
		sec := &s.Runs[0].Series[i]
		if sec.Phase != "steady" {
			continue
		}
		if v, ok := m.second(sec); ok {
			xs = append(xs, v)
		}
	}
	return xs, true
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Row is one metric's comparison of a set against the baseline.
type Row struct {
	Metric      string  `json:"metric"`
	Unit        string  `json:"unit"`
	Base        float64 `json:"base"`
	Value       float64 `json:"value"`
	ChangePct   float64 `json:"change_pct"`
	CILowPct    float64 `json:"ci_low_pct"`
	CIHighPct   float64 `json:"ci_high_pct"`
	Significant bool    `json:"significant"`
	Better      bool    `json:"better"`
	Samples     [2]int  `json:"samples"`
	PerSecond   bool    `json:"per_second"`
}

// MinEffectPct is the smallest relative change called significant even when
// the interval excludes zero: smaller shifts are below what repeated runs on
// one machine resolve.
const MinEffectPct = 2.0

// Resamples is the bootstrap's resample count.
const Resamples = 10000

// Bootstrap returns the 95% percentile interval of mean(b)/mean(a) - 1 (in
// percent), resampling each side with replacement.
func Bootstrap(a, b []float64, seed int64) (lo, hi float64) {
	rng := rand.New(rand.NewSource(seed))
	diffs := make([]float64, 0, Resamples)
	for i := 0; i < Resamples; i++ {
		ma, mb := resampleMean(rng, a), resampleMean(rng, b)
		if ma == 0 {
			continue
		}
		diffs = append(diffs, 100*(mb/ma-1))
	}
	if len(diffs) == 0 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(diffs)
	return diffs[int(0.025*float64(len(diffs)))], diffs[int(0.975*float64(len(diffs)-1))]
}

func resampleMean(rng *rand.Rand, xs []float64) float64 {
	s := 0.0
	for range xs {
		s += xs[rng.Intn(len(xs))]
	}
	return s / float64(len(xs))
}

// Compare sets each later set against the first.
func Compare(base, other Set) []Row {
	var rows []Row
	for _, m := range append(append([]Metric(nil), Metrics...), telemetryMetrics(base, other)...) {
		a, perA := samples(base, m)
		b, perB := samples(other, m)
		r := Row{Metric: m.Name, Unit: m.Unit, Samples: [2]int{len(a), len(b)}, PerSecond: perA || perB}
		if len(a) == 0 || len(b) == 0 {
			rows = append(rows, r)
			continue
		}
		r.Base, r.Value = mean(a), mean(b)
		if r.Base != 0 {
			r.ChangePct = 100 * (r.Value/r.Base - 1)
		}
		r.CILowPct, r.CIHighPct = Bootstrap(a, b, 1)
		r.Significant = !math.IsNaN(r.CILowPct) && (r.CILowPct > 0 || r.CIHighPct < 0) && math.Abs(r.ChangePct) >= MinEffectPct
		r.Better = (r.ChangePct > 0) == m.HigherBetter
		rows = append(rows, r)
	}
	return rows
}

// Collapsed says other committed nothing where base committed something.
func Collapsed(base, other Set) bool {
	committed := func(s Set) (n int64) {
		for _, r := range s.Runs {
			n += r.Summary.Steady.Committed
		}
		return n
	}
	return committed(base) > 0 && committed(other) == 0
}

// Verdict is one sentence on other against base, led by the headline metric
// if it moved, else by the largest significant change.
func Verdict(base, other Set, rows []Row) string {
	if Collapsed(base, other) {
		return fmt.Sprintf("%s collapsed: it committed nothing in its steady window, where %s committed %.1f tx/s", other.Name, base.Name, rows[0].Base)
	}
	var pick *Row
	for i := range rows {
		r := &rows[i]
		if !r.Significant {
			continue
		}
		if pick == nil || i == 0 || math.Abs(r.ChangePct) > math.Abs(pick.ChangePct) && !rows[0].Significant {
			pick = r
		}
		if i == 0 {
			break
		}
	}
	if pick == nil {
		return fmt.Sprintf("%s vs %s: no significant difference", other.Name, base.Name)
	}
	word := "worse"
	if pick.Better {
		word = "better"
	}
	if pick.Metric == "committed TPS" || pick.Unit == "ms" {
		word = map[bool]string{true: "faster", false: "slower"}[pick.Better]
	}
	return fmt.Sprintf("%s is %s than %s: %+.1f%% %s (95%% CI %+.1f%% to %+.1f%%)", other.Name, word, base.Name, pick.ChangePct, pick.Metric, pick.CILowPct, pick.CIHighPct)
}
