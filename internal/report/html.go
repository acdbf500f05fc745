package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// uPlot (MIT, v1.6.32 from the npm registry) draws the charts; it is
// embedded so the report opens offline and asks no outside host for anything.
var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed report.html.tmpl
	reportTmpl string
)

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"json": func(v any) (template.JS, error) {
		b, err := json.Marshal(v)
		return template.JS(b), err
	},
	"pct":   func(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) },
	"f1":    func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"deref": func(f *float64) float64 { return *f }, // lt takes no pointer
	"keys":  func(m map[string]int64) []string { return slices.Sorted(maps.Keys(m)) },
	"human": human,
}).Parse(reportTmpl))

// kneePoint is one stage of a staged run: offered vs committed.
type kneePoint struct {
	Target    float64 `json:"target"`
	Offered   float64 `json:"offered"`
	Committed float64 `json:"committed"`
	P99       float64 `json:"p99"`
}

// knee groups the non-drain seconds by target rate; it is empty unless the
// run had at least two rates.
func knee(r *Result) []kneePoint {
	type acc struct {
		n                  float64
		offered, committed float64
		p99                float64
	}
	by := map[float64]*acc{}
	for _, s := range r.Series {
		if s.Phase == "drain" || s.TargetRate == 0 {
			continue
		}
		a := by[s.TargetRate]
		if a == nil {
			a = &acc{}
			by[s.TargetRate] = a
		}
		w := float64(max(1, s.Span)) // a merged point holds Span seconds
		a.n += w
		a.offered += w * float64(s.Offered)
		a.committed += w * float64(s.Committed)
		if s.CommitMs.P99 > a.p99 {
			a.p99 = s.CommitMs.P99
		}
	}
	if len(by) < 2 {
		return nil
	}
	var out []kneePoint
	for t, a := range by {
		out = append(out, kneePoint{Target: t, Offered: a.offered / a.n, Committed: a.committed / a.n, P99: a.p99})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// forCharts merges a long run's series and blocks into at most
// ChartPoints each (ReadResultForCharts does it while reading); merged
// is the largest span.
func forCharts(r *Result) (c *Result, merged int) {
	c = r
	if len(r.Series) > ChartPoints || len(r.Blocks) > ChartPoints {
		cp := *r
		m := seconds{k: spanFor(len(r.Series), ChartPoints)}
		for _, s := range r.Series {
			m.add(s)
		}
		cp.Series = m.done()
		b := blockMerger{k: spanFor(len(r.Blocks), ChartPoints)}
		for _, x := range r.Blocks {
			b.add(x)
		}
		cp.Blocks = b.done()
		c = &cp
	}
	for _, s := range c.Series {
		merged = max(merged, s.Span)
	}
	return c, merged
}

// WriteHTML renders the self-contained report.
func WriteHTML(w io.Writer, r *Result) error {
	r, merged := forCharts(r)
	scen, _ := json.MarshalIndent(r.Scenario, "", "  ")
	net, _ := json.MarshalIndent(r.Network, "", "  ")
	reasons := map[string]bool{}
	for _, s := range r.Series {
		for k := range s.Rejected {
			reasons["rejected: "+k] = true
		}
		for k := range s.Failed {
			reasons["failed in block: "+k] = true
		}
	}
	rs := []string{}
	for k := range reasons {
		rs = append(rs, k)
	}
	sort.Strings(rs)
	return tmpl.Execute(w, map[string]any{
		"R": r, "Verdict": r.Verdict(), "Scenario": string(scen), "Network": string(net),
		"UplotJS": template.JS(uplotJS), "UplotCSS": template.CSS(uplotCSS),
		"Knee": knee(r), "Reasons": rs, "Title": title(r), "Tel": r.shownTelemetry(), "Merged": merged,
	})
}

func title(r *Result) string {
	name := ""
	if m, ok := r.Scenario.(map[string]any); ok {
		name, _ = m["name"].(string)
	}
	if name == "" {
		name = strings.TrimSpace(filepath.Base(r.Dir))
	}
	return "tpslab: " + name
}

// WriteHTMLFile writes RUN_DIR/report.html.
func WriteHTMLFile(r *Result) (string, error) {
	path := filepath.Join(r.Dir, "report.html")
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return "", err
	}
	if err := WriteHTML(f, r); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(path+".tmp", path)
}

// UplotAssets returns the embedded chart library and its styles, for other
// self-contained pages.
func UplotAssets() (js template.JS, css template.CSS) {
	return template.JS(uplotJS), template.CSS(uplotCSS)
}
