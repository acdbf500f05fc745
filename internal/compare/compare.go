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
	"strings"

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
		if err := steadySeries(r); err != nil {
			return s, err
		}
	}
	return s, nil
}

// steadySeries refuses a run whose per-second series (series.jsonl, schema
// 2) is gone or holds no steady second: compare's figures come from it, and
// reading it as empty would show zeros and a false verdict.
func steadySeries(r *report.Result) error {
	if r.SchemaVersion < 2 {
		return nil
	}
	path := filepath.Join(r.Dir, "series.jsonl")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: missing, expected the run's per-second series (compare needs it)", path)
	}
	for _, sec := range r.Series {
		if sec.Phase == "steady" {
			return nil
		}
	}
	return fmt.Errorf("%s: no steady second in it, though the summary has %.0f s: the series is damaged", path, r.Summary.Steady.DurationS)
}

// headline is how many of the registry's first metrics compare always
// shows (committed TPS, p50 and p99 commit, reject rate).
const headline = 4

// metrics are what is compared, from the one metric registry: the
// headline, then the other metrics compare shows (cost, telemetry with a
// direction, per-payment figures), each only when every run of both sets
// has it; telemetry in name order.
func metrics(base, other Set) []report.Def {
	has := func(s Set, d report.Def) bool {
		for _, r := range s.Runs {
			if _, ok := d.Run(&r.Summary); !ok {
				return false
			}
		}
		return true
	}
	fixed := len(report.Defs(nil))
	var out, tel []report.Def
	for i, d := range append(report.Defs(base.Runs[0].Telemetry), report.KindDefs(&base.Runs[0].Summary)...) {
		switch {
		case i < headline:
			out = append(out, d)
		case !d.Compare || !has(base, d) || !has(other, d):
		case i < fixed:
			out = append(out, d)
		default:
			tel = append(tel, d)
		}
	}
	sort.Slice(tel, func(i, j int) bool { return tel[i].Name < tel[j].Name })
	return append(out, tel...)
}

// samples gives the values a set offers for a metric: one per repetition,
// or, for a single run, one per steady second (weaker evidence: seconds of
// one run are neither independent nor a fresh network). Ratios are in %.
func samples(s Set, d report.Def) (xs []float64, perSecond bool) {
	scale := 1.0
	if d.Kind == report.RatioKind {
		scale = 100
	}
	if len(s.Runs) > 1 {
		for _, r := range s.Runs {
			if v, ok := d.Run(&r.Summary); ok {
				xs = append(xs, scale*v)
			}
		}
		return xs, false
	}
	run := s.Runs[0]
	if d.Second == nil {
		if v, ok := d.Run(&run.Summary); ok {
			xs = append(xs, scale*v)
		}
		return xs, false
	}
	for i := range run.Series {
		sec := &run.Series[i]
		if sec.Phase != "steady" {
			continue
		}
		if v, ok := d.Second(sec, &run.Summary); ok {
			xs = append(xs, scale*v)
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
	for _, m := range metrics(base, other) {
		a, perA := samples(base, m)
		b, perB := samples(other, m)
		r := Row{Metric: m.Title(), Unit: m.Unit, Samples: [2]int{len(a), len(b)}, PerSecond: perA || perB}
		if len(a) == 0 || len(b) == 0 {
			rows = append(rows, r)
			continue
		}
		r.Base, r.Value = mean(a), mean(b)
		if r.Base != 0 {
			r.ChangePct = 100 * (r.Value/r.Base - 1)
		}
		r.CILowPct, r.CIHighPct = Bootstrap(a, b, 1)
		// One value a side (a single run of a figure that has no per-second
		// values) gives no interval: never significant.
		r.Significant = len(a) > 1 && len(b) > 1 && !math.IsNaN(r.CILowPct) && (r.CILowPct > 0 || r.CIHighPct < 0) && math.Abs(r.ChangePct) >= MinEffectPct
		r.Better = (r.ChangePct > 0) == (m.Better == "higher")
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

// headlineTier ranks a row for the verdict: 0 committed TPS (the first
// row), 1 commit latency and rejections, 2 everything else.
func headlineTier(i int, metric string) int {
	switch {
	case i == 0:
		return 0
	case strings.HasPrefix(metric, "p50 commit"), strings.HasPrefix(metric, "p99 commit"), strings.HasPrefix(metric, "reject rate"):
		return 1
	}
	return 2
}

// Headline keeps the rows a verdict on two builds rests on: committed TPS
// (the first row), commit latency and rejections, in their order.
func Headline(rows []Row) []Row {
	var out []Row
	for i, r := range rows {
		if headlineTier(i, r.Metric) <= 1 {
			out = append(out, r)
		}
	}
	return out
}

// Verdict is one sentence on other against base, led by the headline metric
// if it moved, else by the largest significant change.
func Verdict(base, other Set, rows []Row) string {
	if Collapsed(base, other) {
		return fmt.Sprintf("%s collapsed: it committed nothing in its steady window, where %s committed %.1f tx/s", other.Name, base.Name, rows[0].Base)
	}
	// Led by committed TPS, then by latency and rejections, and only then by
	// the largest of the other significant changes: a telemetry counter
	// going from 0.04 to 0 must not outweigh a slower commit.
	var pick *Row
	for tier := 0; tier < 3 && pick == nil; tier++ {
		for i := range rows {
			r := &rows[i]
			if !r.Significant || headlineTier(i, r.Metric) != tier {
				continue
			}
			if pick == nil || math.Abs(r.ChangePct) > math.Abs(pick.ChangePct) {
				pick = r
			}
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
	v := fmt.Sprintf("%s is %s than %s: %+.1f%% %s (95%% CI %+.1f%% to %+.1f%%)", other.Name, word, base.Name, pick.ChangePct, pick.Metric, pick.CILowPct, pick.CIHighPct)
	if why := notKeptUp(base, other); why != "" {
		// An overloaded system's figures swing with its backlog: the
		// difference may be the overload's, not the change's (issue 34).
		v += "; but " + why + ": figures of a system that did not keep up vary with its backlog, compare at a rate both keep up with"
	}
	return v
}

// notKeptUp names the sets with runs whose headline was not "kept up"
// (fell behind, refused, generator-limited, machine busy, halted), or that
// ran on a machine other processes or a hypervisor kept busy.
func notKeptUp(sets ...Set) string {
	var out []string
	for _, s := range sets {
		n := 0
		var what report.Outcome
		for _, r := range s.Runs {
			if o := r.Outcome(); o != report.OutcomeKeptUp && o != report.OutcomeNoLoad && o != report.OutcomeNoSteady {
				n, what = n+1, o
			} else if r.Summary.Generator.MachineBusy != "" {
				n, what = n+1, report.OutcomeMachine // kept up, on a machine others kept busy
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d of %s's %d runs %s", n, s.Name, len(s.Runs), strings.ReplaceAll(string(what), "_", " ")))
		}
	}
	return strings.Join(out, " and ")
}
