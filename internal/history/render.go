package history

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tpslab/tpslab/internal/report"
)

// marks is what the table shows beside each entry: a change point begins
// there, the newest is a regression.
func (a Analysis) marks(i int) string {
	var m []string
	for _, c := range a.Changes {
		if c.Index == i {
			word := "worse"
			if c.Better {
				word = "better"
			}
			m = append(m, fmt.Sprintf("change point: %+.1f%% (%s)", c.ChangePct, word))
		}
	}
	if i == len(a.Values)-1 && a.Newest != nil && a.Newest.Regression {
		m = append(m, "REGRESSION")
	}
	return strings.Join(m, "; ")
}

func (a Analysis) unit() string {
	if a.Unit == "" {
		return a.Metric
	}
	return a.Metric + " (" + a.Unit + ")"
}

// Print writes the trend as text.
func (a Analysis) Print(w io.Writer) {
	fmt.Fprintf(w, "series %s: %d entries, %s (%s is better)\n", a.Series, len(a.Values), a.unit(), a.Better)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tLABEL\tVALUE\t")
	for i, v := range a.Values {
		fmt.Fprintf(tw, "%d\t%s\t%.4g\t%s\n", i+1, a.Labels[i], v, a.marks(i))
	}
	tw.Flush()
	a.printFindings(w)
}

func (a Analysis) printFindings(w io.Writer) {
	if len(a.Changes) == 0 {
		fmt.Fprintln(w, "change points: none (e-divisive, 5% level)")
	}
	for _, c := range a.Changes {
		fmt.Fprintf(w, "change point at #%d (%s): mean %.4g -> %.4g (%+.1f%%)\n", c.Index+1, c.Label, c.Before, c.After, c.ChangePct)
	}
	if a.Newest != nil {
		fmt.Fprintf(w, "newest: %s\n", a.Newest.Why)
	}
}

// Markdown writes the trend as a short table for a pull request comment:
// the findings, then the last entries.
func (a Analysis) Markdown(w io.Writer, last int) {
	if a.Newest != nil {
		verdict := "no regression"
		if a.Newest.Regression {
			verdict = "REGRESSION"
		}
		fmt.Fprintf(w, "**%s: %s** — %s\n\n", a.Series, verdict, a.Newest.Why)
	}
	fmt.Fprintf(w, "| # | label | %s | |\n|---:|---|---:|---|\n", a.unit())
	from := max(0, len(a.Values)-last)
	for i := from; i < len(a.Values); i++ {
		fmt.Fprintf(w, "| %d | %s | %.4g | %s |\n", i+1, strings.ReplaceAll(a.Labels[i], "|", `\|`), a.Values[i], a.marks(i))
	}
	fmt.Fprintf(w, "\n<sub>%d change point(s) in %d entries (e-divisive, 5%% level); a regression is the newest entry worse than the segment before it by more than %.0f× its noise and %.0f%%.</sub>\n", len(a.Changes), len(a.Values), NoiseSigmas, MinChangePct)
}

var page = template.Must(template.New("history").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tpslab history: {{.A.Series}}</title>
<style>{{.CSS}} body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#1d2330}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 14px 3px 0;text-align:left}.bad{color:#9b2c2c;font-weight:600}.meta{color:#5a6275}</style></head><body>
<h1>{{.A.Series}}</h1><div class="meta">{{.A.Metric}}{{with .A.Unit}} ({{.}}){{end}}, {{len .A.Values}} entries; {{.A.Better}} is better. Change points (e-divisive, 5% level) are dashed red lines.</div>
<div id="trend"></div>
{{with .A.Newest}}<p{{if .Regression}} class="bad"{{end}}>newest: {{.Why}}</p>{{end}}
<table id="changes"><tr><th>change point at</th><th>label</th><th>before</th><th>after</th><th>change</th></tr>
{{range .A.Changes}}<tr><td>#{{inc .Index}}</td><td>{{.Label}}</td><td>{{printf "%.4g" .Before}}</td><td>{{printf "%.4g" .After}}</td><td>{{printf "%+.1f%%" .ChangePct}}</td></tr>{{end}}</table>
<script>{{.JS}}</script>
<script>
const A = {{.Data}};
const xs = A.values.map((_, i) => i + 1);
const cps = (A.changes || []).map(c => c.index + 1);
new uPlot({ title: A.metric, width: Math.min(1060, window.innerWidth - 40), height: 320, scales: { x: { time: false } },
  axes: [{ label: 'entry', values: (u, ticks) => ticks.map(t => A.labels[t - 1] !== undefined ? A.labels[t - 1] : '') }, { label: A.unit || '', size: 70 }],
  series: [{}, { label: A.metric, stroke: '#2b6cb0', width: 2, points: { show: true, size: 6 } }],
  hooks: { draw: [u => { const c = u.ctx; c.save(); c.strokeStyle = '#c53030'; c.setLineDash([6, 4]); c.lineWidth = 2;
    for (const x of cps) { const px = u.valToPos(x - 0.5, 'x', true); c.beginPath(); c.moveTo(px, u.bbox.top); c.lineTo(px, u.bbox.top + u.bbox.height); c.stroke(); }
    c.restore(); }] } }, [xs, A.values], document.getElementById('trend'));
</script></body></html>`))

// WriteHTML writes the trend as a self-contained page, change points marked.
func (a Analysis) WriteHTML(w io.Writer) error {
	js, css := report.UplotAssets()
	return page.Execute(w, map[string]any{"A": a, "Data": a, "JS": js, "CSS": css})
}
