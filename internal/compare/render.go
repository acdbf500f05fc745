package compare

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tpslab/tpslab/internal/report"
)

// Comparison is every set against the first.
type Comparison struct {
	Base    Set
	Against []Against
	// Paired: the intervals are over pairs of runs made next to each other
	// (ab), not bootstrapped (Paired).
	Paired bool
	// All shows every row in text and markdown, per-node rows too.
	All bool
}

// Against is one set's rows and verdict.
type Against struct {
	Set       Set
	Rows      []Row
	Verdict   string
	Collapsed bool   // it committed nothing where the baseline did
	Env       string // what differed in the environment (Environment), shown, not voted
}

// Run compares sets[1:] with sets[0].
func Run(sets []Set) Comparison { return RunWith(sets, Options{}) }

// RunWith is Run with options.
func RunWith(sets []Set, o Options) Comparison {
	c := Comparison{Base: sets[0]}
	for _, s := range sets[1:] {
		rows := CompareWith(sets[0], s, o)
		c.Against = append(c.Against, Against{Set: s, Rows: rows, Verdict: Verdict(sets[0], s, rows), Collapsed: Collapsed(sets[0], s), Env: Environment(sets[0], s)})
	}
	return c
}

// Method says how the intervals were computed, for the reader.
func (c Comparison) Method() string {
	vote := "Only the primary figures (committed TPS, p50 and p99 commit, reject and expired rate) vote, their intervals at 95% jointly (Bonferroni); the others are at 95% each and shown, not voted."
	if c.Paired {
		return fmt.Sprintf("Runs were paired as they ran, interleaved; the change is the geometric mean of the pairs' ratios B/A and its interval Student's t over their logarithms, as ratios; significant when it excludes 0 and the change is at least %.0f%%. %s", MinEffectPct, vote)
	}
	m := fmt.Sprintf("Bootstrap percentile interval of the relative change of means (%d resamples); significant when it excludes 0, the change is at least %.0f%% and beyond the noise floor (the largest change between two runs of the same settings; %.0f%% without repetitions). %s", Resamples, MinEffectPct, SingleRunFloorPct, vote)
	for _, a := range c.Against {
		if len(a.Rows) > 0 && a.Rows[0].PerSecond {
			return m + " Some side is a single run, so its steady seconds were used as samples: weaker evidence than repetitions (seconds of one run share one network and are not independent); use run --repeat N."
		}
	}
	return m + " Samples are the repetitions' steady-state values."
}

// changeHeader names the change column: with paired runs (ab) it is the
// mean of the pairs' changes, which need not have the sign of the
// columns' means beside it.
func (c Comparison) changeHeader() string {
	if c.Paired {
		return "change (geometric mean of pairs)"
	}
	return "change"
}

// Print writes the comparison as text.
func (c Comparison) Print(w io.Writer) {
	for _, a := range c.Against {
		fmt.Fprintf(w, "\n%s (%d runs) vs %s (%d runs)\n", a.Set.Name, len(a.Set.Runs), c.Base.Name, len(c.Base.Runs))
		fmt.Fprintf(w, "verdict: %s\n", a.Verdict)
		if a.Env != "" {
			fmt.Fprintf(w, "environment differs: %s\n", a.Env)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "METRIC\tBASE\tTHIS\t%s\tINTERVAL\tSIGNIFICANT\n", strings.ToUpper(c.changeHeader()))
		rows, hidden := c.shown(a.Rows)
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Label(), val(r.Base), val(r.Value), r.Change(), r.interval("n/a (baseline is 0)"), r.significance())
		}
		tw.Flush()
		if hidden > 0 {
			fmt.Fprintf(w, "(%d more rows left out: --all shows them)\n", hidden)
		}
	}
	fmt.Fprintf(w, "\nmethod: %s\n", c.Method())
}

// shownRows is how many rows a comparison shows without --all.
const shownRows = 10

// shown are the rows a reader sees: the primary figures first (committed
// TPS, p50 and p99 commit, reject and expired rate: they vote), then the
// other significant changes (largest first), then the rest; at most
// shownRows in all, and per-node rows (node0.cpu_percent, ...) only when
// significant, unless c.All shows every row.
func (c Comparison) shown(rows []Row) (out []Row, hidden int) {
	var primary, sig, rest []Row
	for _, r := range rows {
		switch {
		case r.Primary:
			primary = append(primary, r)
		case r.Significant:
			sig = append(sig, r)
		case strings.Contains(r.Metric, ".") && !c.All:
			hidden++
		default:
			rest = append(rest, r)
		}
	}
	sort.SliceStable(sig, func(i, j int) bool { return math.Abs(sig[i].ChangePct) > math.Abs(sig[j].ChangePct) })
	out = append(append(primary, sig...), rest...)
	if !c.All && len(out) > max(shownRows, len(primary)) {
		n := max(shownRows, len(primary))
		hidden += len(out) - n
		out = out[:n]
	}
	return out, hidden
}

// significance is the row's last column: no, yes better, yes worse; a
// figure that does not vote says so.
func (r Row) significance() string {
	s := "no"
	switch {
	case !r.Significant:
	case r.Better:
		s = "yes, better"
	default:
		s = "yes, worse"
	}
	if r.Significant && !r.Primary {
		s += " (not voted)"
	}
	return s
}

// Interval is the row's 95% interval as the page shows it.
func (r Row) Interval() string { return r.interval("n/a (baseline is 0)") }

// interval is the row's 95% interval, or none when the baseline is 0.
func (r Row) interval(none string) string {
	if math.IsNaN(r.CILowPct) {
		if r.Base != 0 && (r.Samples[0] < 2 || r.Samples[1] < 2) {
			return "n/a (one value a side)"
		}
		return none
	}
	if math.Abs(r.CIHighPct) > maxShownPct || math.Abs(r.CILowPct) > maxShownPct {
		// A percentage of a baseline near 0 (a reject rate of a few
		// payments) or of a handful of wild values is no measure.
		return fmt.Sprintf("n/a (beyond ±%.0f%%: the baseline %s is near 0 or its values too few and spread)", maxShownPct, val(r.Base))
	}
	return fmt.Sprintf("%+.1f%% .. %+.1f%%", r.CILowPct, r.CIHighPct)
}

// Change is the row's change: a percentage, or past maxShownPct (from a
// baseline near 0) the factor it is.
func (r Row) Change() string {
	if r.Base == 0 {
		return "n/a"
	}
	if math.Abs(r.ChangePct) > maxShownPct {
		return fmt.Sprintf("×%.4g", r.Value/r.Base)
	}
	return fmt.Sprintf("%+.1f%%", r.ChangePct)
}

// maxShownPct bounds the intervals printed as percentages.
const maxShownPct = 1000.0

// Label is the metric with its unit.
func (r Row) Label() string {
	if r.Unit == "" {
		return r.Metric
	}
	return r.Metric + " (" + r.Unit + ")"
}

// val shows small values (per-payment figures) with their digits.
func val(f float64) string {
	if f != 0 && math.Abs(f) < 10 {
		return fmt.Sprintf("%.3f", f)
	}
	return fmt.Sprintf("%.1f", f)
}

var page = template.Must(template.New("compare").Funcs(template.FuncMap{
	"f1":   val,
	"json": func(v any) (template.JS, error) { b, err := json.Marshal(v); return template.JS(b), err },
}).Parse(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tpslab compare</title>
<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));document.documentElement.dataset.errors=window.__errors.length;});</script>
<style>{{.CSS}}</style><style>body{font:14px/1.45 system-ui,sans-serif;max-width:1000px;margin:24px auto;padding:0 16px;color:#1d2330}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 14px 3px 0;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.v{font-size:17px;font-weight:600;margin:14px 0 4px}.good{color:#276749}.bad{color:#9b2c2c}.meta{color:#5a6275}</style></head><body>
<h1>tpslab compare</h1><div class="meta">baseline: {{.Base.Name}} ({{len .Base.Runs}} runs)</div>
{{range .Against}}<div class="v">{{.Verdict}}</div>{{with .Env}}<div class="meta" id="environment">environment differs: {{.}}</div>{{end}}{{end}}
<div class="chart" id="c-committed"></div><div class="chart" id="c-p99"></div>
<div class="meta">each set's first run, second by second from the start of its load</div>
{{range .Against}}<table><tr><th>metric</th><th>base</th><th>this</th><th>{{$.Change}}</th><th>95% CI</th><th>significant</th></tr>
{{range .Rows}}<tr><td>{{.Label}}</td><td class="n">{{f1 .Base}}</td><td class="n">{{f1 .Value}}</td><td class="n">{{.Change}}</td><td class="n">{{.Interval}}</td>
<td class="{{if .Significant}}{{if .Better}}good{{else}}bad{{end}}{{end}}">{{if .Significant}}{{if .Better}}yes, better{{else}}yes, worse{{end}}{{else}}no{{end}}</td></tr>{{end}}
</table>{{end}}
<p class="meta">{{.Method}}</p>
<script>{{.JS}}</script>
<script>
const C = {{json .Curves}};
const colors = ['#2b6cb0', '#dd6b20', '#38a169', '#805ad5', '#e53e3e'];
let drawn = 0;
function overlay(id, title, key, unit) {
  const el = document.getElementById(id);
  const data = [C.t].concat(C.sets.map(s => s[key]));
  el.dataset.points = C.sets.reduce((n, s) => n + s[key].filter(v => v !== null).length, 0);
  new uPlot({ title: title, width: Math.min(960, document.body.clientWidth), height: 260, scales: { x: { time: false } },
    axes: [{ label: 'seconds since load start' }, { label: unit, size: 60 }],
    series: [{}].concat(C.sets.map((s, i) => ({ label: s.name, stroke: colors[i % colors.length], width: 2, spanGaps: true }))) }, data, el);
  drawn++;
}
overlay('c-committed', 'Committed per second', 'committed', 'tx/s');
overlay('c-p99', 'p99 commit latency (ms)', 'p99', 'ms');
document.documentElement.dataset.charts = drawn;
</script></body></html>`))

// curves are each set's first run's committed rate and p99 commit per
// second, on one axis of seconds since the load began: the page draws the
// sets over each other.
func (c Comparison) curves() map[string]any {
	sets := append([]Set{c.Base}, func() (o []Set) {
		for _, a := range c.Against {
			o = append(o, a.Set)
		}
		return o
	}()...)
	n := 0
	for _, s := range sets {
		if len(s.Runs) > 0 {
			n = max(n, len(s.Runs[0].Series))
		}
	}
	t := make([]int, n)
	for i := range t {
		t[i] = i + 1
	}
	var out []map[string]any
	for _, s := range sets {
		committed, p99 := make([]*float64, n), make([]*float64, n)
		if len(s.Runs) > 0 {
			for _, sec := range s.Runs[0].Series {
				i := int(math.Round(sec.T)) - 1
				if i < 0 || i >= n {
					continue
				}
				v := float64(sec.Committed)
				committed[i] = &v
				if sec.CommitMs.Count > 0 {
					p := sec.CommitMs.P99
					p99[i] = &p
				}
			}
		}
		out = append(out, map[string]any{"name": s.Name, "committed": committed, "p99": p99})
	}
	return map[string]any{"t": t, "sets": out}
}

// WriteHTML writes the comparison as a self-contained page.
func (c Comparison) WriteHTML(w io.Writer) error {
	js, css := report.UplotAssets()
	against := make([]Against, len(c.Against))
	for i, a := range c.Against {
		// The figures a verdict rests on first, then the rest in order.
		a.Rows = append([]Row(nil), a.Rows...)
		sort.SliceStable(a.Rows, func(x, y int) bool { return a.Rows[x].Primary && !a.Rows[y].Primary })
		against[i] = a
	}
	return page.Execute(w, map[string]any{"Base": c.Base, "Against": against, "Method": c.Method(), "Change": c.changeHeader(),
		"Curves": c.curves(), "JS": js, "CSS": css})
}

// Markdown writes the comparison as short tables for a pull request
// comment: the verdict in bold, then one row per metric.
func (c Comparison) Markdown(w io.Writer) {
	for _, a := range c.Against {
		fmt.Fprintf(w, "**%s**\n\n", mdEscape(a.Verdict))
		if a.Env != "" {
			fmt.Fprintf(w, "Environment differs: %s\n\n", mdEscape(a.Env))
		}
		fmt.Fprintf(w, "| metric | %s (%d runs) | %s (%d runs) | %s | 95%% CI | significant |\n", mdEscape(c.Base.Name), len(c.Base.Runs), mdEscape(a.Set.Name), len(a.Set.Runs), c.changeHeader())
		fmt.Fprintln(w, "|---|---:|---:|---:|---|---|")
		rows, hidden := c.shown(a.Rows)
		for _, r := range rows {
			sig := r.significance()
			if r.Significant && !r.Better {
				sig = "**" + sig + "**"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Label()), val(r.Base), val(r.Value), r.Change(), r.interval("n/a"), sig)
		}
		if hidden > 0 {
			fmt.Fprintf(w, "\n<sub>%d more rows left out (`--all` shows them)</sub>\n", hidden)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "<sub>%s</sub>\n", mdEscape(c.Method()))
}

// mdEscape keeps a cell's text from breaking the table.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
