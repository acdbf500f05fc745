package findmax

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tpslab/tpslab/internal/report"
)

// Run says which kind of run the step was: a search step or a confirmation.
func (s Step) Run() string {
	if s.Confirm {
		return "confirm"
	}
	return "step"
}

// ConfirmRan says whether a confirmation run was made (held or not).
func (o Outcome) ConfirmRan() bool {
	for _, s := range o.Steps {
		if s.Confirm {
			return true
		}
	}
	return false
}

// PrintKnee writes the steps as a table, ordered by rate.
func PrintKnee(w io.Writer, steps []Step) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OFFERED/s\tRUN\tMET\tCOMMITTED/s\tP50 COMMIT\tP99 COMMIT\tMEMPOOL GROWTH\tWHY NOT")
	for _, s := range Knee(steps) {
		met := "yes"
		if !s.OK {
			met = "no"
		}
		fmt.Fprintf(tw, "%.0f\t%s\t%s\t%.1f\t%.0f ms\t%.0f ms\t%.1f s\t%s\n", s.Rate, s.Run(), met, s.Committed, s.P50, s.P99, s.Growth, strings.Join(s.Why, "; "))
	}
	tw.Flush()
}

var page = template.Must(template.New("findmax").Funcs(template.FuncMap{
	"json": func(v any) (template.JS, error) { b, err := json.Marshal(v); return template.JS(b), err },
	"f0":   func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"join": func(s []string) string { return strings.Join(s, "; ") },
}).Parse(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tpslab find-max</title>
<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));document.documentElement.dataset.errors=window.__errors.length;});</script>
<style>{{.CSS}}</style><style>body{font:14px/1.45 system-ui,sans-serif;max-width:1000px;margin:24px auto;padding:0 16px;color:#1d2330}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 14px 3px 0;text-align:left}td.n{text-align:right}.v{font-size:18px;font-weight:600;margin:10px 0}.meta{color:#5a6275}</style></head><body>
<h1>tpslab find-max</h1>
<div class="v">Sustainable: {{f0 .O.Sustainable}} tx/s{{if .O.Confirmed}}, confirmed{{else if .O.ConfirmRan}}, not confirmed{{end}} (bracket {{f0 (index .O.Bracket 0)}} .. {{if index .O.Bracket 1}}{{f0 (index .O.Bracket 1)}}{{else}}not reached{{end}} tx/s)</div>
<div class="meta">objective: {{.Objective}} · stopped: {{.O.Stopped}} · search took {{.Took}}</div>
<h2>What limits it</h2><ul>{{range .O.Hints}}<li>{{.}}</li>{{end}}</ul>
<div class="chart" id="knee"></div>
<table><tr><th>offered/s</th><th>run</th><th>met</th><th>committed/s</th><th>p50 commit ms</th><th>p99 commit ms</th><th>why not</th></tr>
{{range .Knee}}<tr><td class="n">{{f0 .Rate}}</td><td>{{.Run}}</td><td>{{if .OK}}yes{{else}}no{{end}}</td><td class="n">{{f0 .Committed}}</td><td class="n">{{f0 .P50}}</td><td class="n">{{f0 .P99}}</td><td>{{join .Why}}</td></tr>{{end}}</table>
<script>{{.JS}}</script>
<script>
const K = {{json .Knee}};
new uPlot({ title: 'Knee: offered vs committed, commit latency', width: 900, height: 360, scales: { x: { time: false }, tps: {}, ms: {} },
  axes: [{ label: 'offered tx/s' }, { scale: 'tps', label: 'tx/s', size: 60 }, { scale: 'ms', side: 1, label: 'ms', size: 60, grid: { show: false } }],
  series: [{}, { label: 'committed tx/s', scale: 'tps', stroke: '#38a169', width: 2, points: { show: true, size: 7 } },
    { label: 'offered (ideal)', scale: 'tps', stroke: '#a0aec0', dash: [4, 4] },
    { label: 'p50 commit ms', scale: 'ms', stroke: '#2b6cb0', points: { show: true } },
    { label: 'p99 commit ms', scale: 'ms', stroke: '#e53e3e', points: { show: true } }] },
  [K.map(k => k.rate), K.map(k => k.committed_tps), K.map(k => k.rate), K.map(k => k.p50_commit_ms), K.map(k => k.p99_commit_ms)], document.getElementById('knee'));
document.documentElement.dataset.charts = 1;
</script></body></html>`))

// WriteHTML writes the search as a self-contained page with the knee chart.
func WriteHTML(w io.Writer, o Outcome, objective, took string) error {
	js, css := report.UplotAssets()
	return page.Execute(w, map[string]any{"O": o, "Knee": Knee(o.Steps), "Objective": objective, "Took": took, "JS": js, "CSS": css})
}
