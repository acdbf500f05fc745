// Package compare tells whether one set of runs differs from another, metric
// by metric, with a bootstrap confidence interval on the relative change.
package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

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
func Load(dir string) (Set, error) { return LoadWith(dir, false) }

// LoadWith is Load; allowIncomplete takes runs that ended early
// (interrupted, halted, a target that failed, a full disk) or partial
// merges too, which Load refuses: their figures cover another load than
// the one planned.
func LoadWith(dir string, allowIncomplete bool) (Set, error) {
	s := Set{Name: dir}
	r, err := report.ReadResult(dir)
	switch {
	case err == nil:
		s.Runs = []*report.Result{r}
	case !errors.Is(err, os.ErrNotExist):
		return s, err
	default:
		if _, err := os.Stat(dir); err != nil {
			return s, fmt.Errorf("%s: no such run directory, expected a run's directory (with result.json) or a directory of repetitions (run --repeat N); tpslab runs lists them", dir)
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
		if why := r.Incomplete(); why != "" && !(allowIncomplete && r.Status == "partial") {
			return s, fmt.Errorf("%s: the run did not finish (%s), so it has no figures to compare", r.Dir, why)
		}
		if why := r.EndedEarly(); why != "" && !allowIncomplete {
			return s, fmt.Errorf("%s: %s: its figures cover another load than the one planned; --allow-incomplete compares it anyway", r.Dir, why)
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
	steady := 0
	for _, sec := range r.Series {
		if sec.Phase == "steady" {
			steady++
		}
	}
	if steady == 0 {
		return fmt.Errorf("%s: no steady second in it, though the summary has %.0f s: the series is damaged", path, r.Summary.Steady.DurationS)
	}
	// A series cut short (issue 52: 12 of 26 lines) would be compared as
	// if whole; a second or two may be missing at the window's edges.
	if want := int(r.Summary.Steady.DurationS); steady < want-2 {
		return fmt.Errorf("%s: %d steady seconds, though the summary has %d: the series is cut short", path, steady, want)
	}
	return nil
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
	// Primary rows are the pre-declared figures a verdict rests on
	// (committed TPS, p50 and p99 commit, reject and expired rate): their
	// intervals are widened for testing several at once (Bonferroni), and
	// only they are voted. The rest are shown at 95%, not voted.
	Primary bool `json:"primary"`
	// NoiseFloorPct is the largest change between runs of the same
	// settings (within each set, or --noise-from): a change must exceed it.
	NoiseFloorPct float64 `json:"noise_floor_pct"`
}

// MinEffectPct is the smallest relative change called significant even when
// the interval excludes zero: smaller shifts are below what repeated runs on
// one machine resolve.
const MinEffectPct = 2.0

// Resamples is the bootstrap's resample count.
const Resamples = 10000

// Alpha is the chance of calling one figure different when it is not; the
// primary figures share it (Bonferroni: each is tested at Alpha/their
// number), so a verdict's false-positive rate stays at most Alpha.
const Alpha = 0.05

// SingleRunFloorPct is the noise floor when a side has no repetitions
// and no --noise-from runs say what this machine's noise is: the steady
// seconds of one run say nothing about run-to-run drift (issue 51: 10 of 10
// pairs of same-settings single runs were called different).
const SingleRunFloorPct = 10.0

// Bootstrap returns the 95% percentile interval of mean(b)/mean(a) - 1 (in
// percent), resampling each side with replacement.
func Bootstrap(a, b []float64, seed int64) (lo, hi float64) { return BootstrapAt(a, b, seed, Alpha) }

// BootstrapAt is Bootstrap's interval at level 1-alpha.
func BootstrapAt(a, b []float64, seed int64, alpha float64) (lo, hi float64) {
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
	return diffs[int(alpha/2*float64(len(diffs)))], diffs[int((1-alpha/2)*float64(len(diffs)-1))]
}

// Welch is the 1-alpha interval of mean(b)/mean(a) - 1 (in percent) by
// Welch's t: the difference of the means over mean(a), its standard error
// from each side's variance, Welch–Satterthwaite's degrees of freedom.
func Welch(a, b []float64, alpha float64) (lo, hi float64) {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN(), math.NaN()
	}
	ma, va := meanSD(a)
	mb, vb := meanSD(b)
	if ma == 0 {
		return math.NaN(), math.NaN()
	}
	va, vb = va*va/float64(len(a)), vb*vb/float64(len(b))
	se := math.Sqrt(va + vb)
	df := 1.0
	if se > 0 {
		df = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	}
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: math.Max(1, df)}.Quantile(1-alpha/2) * se
	d := mb - ma
	return 100 * (d - half) / ma, 100 * (d + half) / ma
}

func resampleMean(rng *rand.Rand, xs []float64) float64 {
	s := 0.0
	for range xs {
		s += xs[rng.Intn(len(xs))]
	}
	return s / float64(len(xs))
}

// Options are how a comparison judges noise.
type Options struct {
	// Noise are runs at the same settings as both sides (--noise-from):
	// the largest change between any two is each figure's noise floor.
	Noise *Set
}

// Compare sets each later set against the first.
func Compare(base, other Set) []Row { return CompareWith(base, other, Options{}) }

// CompareWith is Compare with a noise set.
func CompareWith(base, other Set, o Options) []Row {
	ms := metrics(base, other)
	primaries := 0
	for i, m := range ms {
		if isPrimary(i, m.Name) {
			primaries++
		}
	}
	var rows []Row
	for i, m := range ms {
		a, perA := samples(base, m)
		b, perB := samples(other, m)
		r := Row{Metric: m.Title(), Unit: m.Unit, Samples: [2]int{len(a), len(b)}, PerSecond: perA || perB, Primary: isPrimary(i, m.Name)}
		if len(a) == 0 || len(b) == 0 {
			rows = append(rows, r)
			continue
		}
		r.Base, r.Value = mean(a), mean(b)
		sampled := math.NaN() // the change of the samples' means
		if r.Base != 0 {
			sampled = 100 * (r.Value/r.Base - 1)
		}
		// A single run's figure is its own (committed TPS block-aligned
		// over its window, p99 over all its payments), not the mean of its
		// seconds: the columns are the run's, and the interval the seconds
		// give is set around the change they show (below).
		own := false
		if v, ok := ownFigure(base, m, perA); ok {
			r.Base, own = v, true
		}
		if v, ok := ownFigure(other, m, perB); ok {
			r.Value, own = v, true
		}
		if r.Base != 0 {
			r.ChangePct = 100 * (r.Value/r.Base - 1)
		}
		alpha := Alpha
		if r.Primary {
			alpha /= float64(max(1, primaries))
		}
		if perA || perB {
			r.CILowPct, r.CIHighPct = BootstrapAt(a, b, 1, alpha)
		} else {
			// Repetitions: a handful of values a side, too few for a
			// bootstrap (three values resample into an interval far too
			// narrow: 4 of 10 same-settings pairs were called different).
			r.CILowPct, r.CIHighPct = Welch(a, b, alpha)
		}
		if own && !math.IsNaN(sampled) && !math.IsNaN(r.CILowPct) {
			// The seconds' spread around the run's own change: the change
			// printed is always inside its interval.
			r.CILowPct, r.CIHighPct = r.ChangePct-(sampled-r.CILowPct), r.ChangePct+(r.CIHighPct-sampled)
		}
		r.CILowPct = clampLow(r.CILowPct, a, b)
		r.NoiseFloorPct = noiseFloor(m, o.Noise, base, other)
		// One value a side (a single run of a figure that has no per-second
		// values) gives no interval: never significant.
		r.Significant = len(a) > 1 && len(b) > 1 && Moved(r.ChangePct, r.NoiseFloorPct, r.CILowPct, r.CIHighPct)
		r.Better = (r.ChangePct > 0) == (m.Better == "higher")
		rows = append(rows, r)
	}
	return rows
}

// ownFigure is a single run's own value of d, when its samples were its
// seconds and the run has one.
func ownFigure(s Set, d report.Def, perSecond bool) (float64, bool) {
	if !perSecond || len(s.Runs) != 1 {
		return 0, false
	}
	v, ok := d.Run(&s.Runs[0].Summary)
	if ok && d.Kind == report.RatioKind {
		v *= 100
	}
	return v, ok
}

func nonNegative(xs []float64) bool {
	for _, x := range xs {
		if x < 0 {
			return false
		}
	}
	return true
}

// Moved is the one rule every experiment judges a change by (compare,
// why, bisect): at least MinEffectPct, beyond the noise floor, and its
// interval clear of 0.
//
// The floor is a ratio (the largest run over the smallest, less one), so a
// change is weighed as one too: a fall to a quarter is a factor of 4, beyond
// a floor of +76% (CI: a slow build's runs at its capacity, 71 to 125 tx/s,
// against a fall from 403 to 102 that the percentages called within it).
func Moved(changePct, noisePct, lo, hi float64) bool {
	factor := math.Inf(1) // a fall to nothing
	if r := 1 + changePct/100; r > 0 {
		factor = math.Max(r, 1/r)
	}
	return math.Abs(changePct) >= MinEffectPct && factor > 1+noisePct/100 && !math.IsNaN(lo) && (lo > 0 || hi < 0)
}

// RunsInterval is Welch's interval of b's runs against a's, in percent,
// its low end clamped as clampLow says.
func RunsInterval(a, b []float64, alpha float64) (lo, hi float64) {
	lo, hi = Welch(a, b, alpha)
	return clampLow(lo, a, b), hi
}

// clampLow: a figure that cannot be negative cannot fall by more than all
// of it, which Welch's t on a few values a side can say (bisect printed
// -111.6%).
func clampLow(lo float64, a, b []float64) float64 {
	if nonNegative(a) && nonNegative(b) && !math.IsNaN(lo) {
		return math.Max(lo, -100)
	}
	return lo
}

// primaryNames are the pre-declared figures a verdict votes on, besides
// the registry's first (committed TPS).
var primaryNames = map[string]bool{"p50_commit": true, "p99_commit": true, "reject_rate": true, "expired_rate": true}

func isPrimary(i int, name string) bool { return i == 0 || primaryNames[name] }

// noiseFloor is the largest relative change of figure d between two runs
// at the same settings: within the noise set if given, else within each
// side that has repetitions; SingleRunFloorPct when neither side has any.
func noiseFloor(d report.Def, noise *Set, sides ...Set) float64 {
	sets := sides
	if noise != nil {
		sets = []Set{*noise}
	}
	floor, measured := 0.0, false
	for _, s := range sets {
		if len(s.Runs) < 2 {
			if noise == nil && len(s.Runs) == 1 {
				// One run made at another time drifts from the other
				// side's repetitions by more than they drift from each
				// other (reproduce: three runs back to back within 0.7% of
				// each other, the original 5% from them).
				floor = SingleRunFloorPct
			}
			continue
		}
		var xs []float64
		for _, r := range s.Runs {
			if v, ok := d.Run(&r.Summary); ok {
				xs = append(xs, v)
			}
		}
		for i := range xs {
			for j := range xs {
				if i != j && xs[j] != 0 {
					floor, measured = math.Max(floor, 100*math.Abs(xs[i]/xs[j]-1)), true
				}
			}
		}
	}
	if !measured {
		return SingleRunFloorPct
	}
	return floor
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
	for tier := 0; tier < 2 && pick == nil; tier++ {
		for i := range rows {
			r := &rows[i]
			if !r.Significant || !r.Primary || headlineTier(i, r.Metric) != tier {
				continue
			}
			if pick == nil || math.Abs(r.ChangePct) > math.Abs(pick.ChangePct) {
				pick = r
			}
		}
	}
	lead := ""
	if differ := Differ(base, other); differ != "" {
		lead = "NOT LIKE FOR LIKE (" + differ + "): a difference is the settings' as much as the system's; "
	}
	if pick == nil {
		return fmt.Sprintf("%s%s vs %s: no significant difference", lead, other.Name, base.Name)
	}
	word := "worse"
	if pick.Better {
		word = "better"
	}
	if pick.Metric == "committed TPS" || pick.Unit == "ms" {
		word = map[bool]string{true: "faster", false: "slower"}[pick.Better]
	}
	v := lead + fmt.Sprintf("%s is %s than %s: %+.1f%% %s (interval %+.1f%% to %+.1f%%, beyond a noise floor of %.1f%%)", other.Name, word, base.Name, pick.ChangePct, pick.Metric, pick.CILowPct, pick.CIHighPct, pick.NoiseFloorPct)
	if why := notKeptUp(base, other); why != "" {
		// An overloaded system's figures swing with its backlog: the
		// difference may be the overload's, not the change's (issue 34).
		v += "; but " + why + ": figures of a system that did not keep up vary with its backlog, compare at a rate both keep up with"
	}
	if why := busyMachine(base, other); why != "" {
		v += "; " + why
	}
	return v
}

// Differ names what the two sets' runs were given differently: the
// offered rate, the load's length, the network, the workload. Empty when
// they ran at the same settings.
func Differ(base, other Set) string {
	one := func(s Set) *report.Result { return s.Runs[0] }
	a, b := one(base), one(other)
	var out []string
	if ra, rb := a.Summary.ValidOfferedTPS(), b.Summary.ValidOfferedTPS(); ra > 0 && rb > 0 && math.Abs(rb/ra-1) > 0.05 {
		out = append(out, fmt.Sprintf("offered %.0f vs %.0f tx/s", ra, rb))
	}
	for _, f := range [][]string{{"load", "duration"}, {"load", "model"}, {"workload", "kind"}, {"workload", "mode"}, {"workload", "senders"}} {
		if va, vb := scenarioField(a, f...), scenarioField(b, f...); va != vb {
			out = append(out, fmt.Sprintf("%s %s vs %s", strings.Join(f, "."), va, vb))
		}
	}
	out = append(out, netDiffer(a, b)...)
	return strings.Join(out, ", ")
}

// netDiffer names what differs between two runs' networks: the kind, the
// validators, each setting that differs ("timeout_commit 500ms vs 2s").
func netDiffer(a, b *report.Result) []string {
	na, nb := a.Network, b.Network
	switch {
	case na == nil && nb == nil:
		return nil
	case na == nil || nb == nil:
		return []string{"network: one side's was not started by tpslab"}
	}
	var out []string
	if na.Kind != nb.Kind || na.Validators != nb.Validators {
		out = append(out, fmt.Sprintf("network %s with %d validator(s) vs %s with %d", na.Kind, na.Validators, nb.Kind, nb.Validators))
	}
	sa, sb := settingsOf(na.Settings), settingsOf(nb.Settings)
	keys := make([]string, 0, len(sa))
	for k := range sa {
		keys = append(keys, k)
	}
	for k := range sb {
		if _, ok := sa[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if na.State != nb.State {
		out = append(out, fmt.Sprintf("pre-loaded state %d vs %d accounts", na.State, nb.State))
	}
	for _, k := range keys {
		if strings.HasSuffix(k, "_url") {
			continue // where that network's database listened, not how it was set
		}
		if va, vb := settingText(k, sa[k]), settingText(k, sb[k]); va != vb {
			out = append(out, fmt.Sprintf("%s %s vs %s", k, va, vb))
		}
	}
	return out
}

// settingsOf is a network's settings as a map.
func settingsOf(v any) map[string]any {
	m := map[string]any{}
	b, _ := json.Marshal(v)
	json.Unmarshal(b, &m)
	return m
}

// settingText writes a setting; timeouts are durations in nanoseconds.
func settingText(key string, v any) string {
	if f, ok := v.(float64); ok && strings.Contains(key, "timeout") {
		return time.Duration(f).String()
	}
	if v == nil {
		return "-"
	}
	return fmt.Sprint(v)
}

// scenarioField is one field of the run's scenario as written, "" if absent.
func scenarioField(r *report.Result, path ...string) string {
	var v any = r.Scenario
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			b, _ := json.Marshal(v)
			if json.Unmarshal(b, &m) != nil {
				return ""
			}
		}
		v = m[k]
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// busyMachine names the sets with runs made on a machine others kept
// busy: their figures describe that machine's load too.
func busyMachine(sets ...Set) string {
	var out []string
	for _, s := range sets {
		n := 0
		for _, r := range s.Runs {
			if r.Summary.Generator.MachineBusy != "" {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d of %s's %d", n, s.Name, len(s.Runs)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "runs made on a machine other processes kept busy: " + strings.Join(out, ", ")
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
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d of %s's %d runs %s", n, s.Name, len(s.Runs), strings.ReplaceAll(string(what), "_", " ")))
		}
	}
	return strings.Join(out, " and ")
}
