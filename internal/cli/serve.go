package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/dashboard"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/history"
	"github.com/tpslab/tpslab/internal/report"
)

// serveCmd serves a directory of runs to browse: the list, each run's live
// page as it ended (the dashboard, fed from its files) and its report,
// compare of any two, and the history's series.
func serveCmd() *cobra.Command {
	var addr, store string
	c := &cobra.Command{
		Use:   "serve [RUNS_DIR]",
		Short: "Serve finished runs to browse: a list, each run's page and report, compare and history",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "runs"
			if len(args) == 1 {
				dir = args[0]
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return exitcode.BadInputf("serve: %s is not a directory of runs", dir)
			}
			if store == "" {
				store = filepath.Join(dir, "history.jsonl")
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return exitcode.BadInputf("--addr: %v, expected a free host:port such as %s", err, dashboard.DefaultAddr)
			}
			srv := &http.Server{Handler: newBrowser(dir, store).mux(), ReadHeaderTimeout: 5 * time.Second}
			fmt.Fprintf(os.Stderr, "serving %s on http://%s/ (Ctrl-C stops)\n", dir, ln.Addr())
			go func() { <-cmd.Context().Done(); srv.Close() }()
			if err := srv.Serve(ln); err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", dashboard.DefaultAddr, "where to listen (127.0.0.1 unless you say otherwise)")
	c.Flags().StringVar(&store, "store", "", "the history store (default RUNS_DIR/history.jsonl)")
	return c
}

type browser struct {
	dir, store string
	root       string        // dir with its links resolved: nothing is read outside it
	rows       *rowCache     // the list's rows, per result.json
	reads      chan struct{} // run pages read at once: each may hold a large result
}

// serveReadsAtOnce and serveMaxResult bound what serve reads: a 200 MB
// result.json took 1.46 GB to show, and eight large series at once
// 865 MB (issue 52).
const (
	serveReadsAtOnce = 2
	serveMaxResult   = 64 << 20
)

func newBrowser(dir, store string) browser {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		root = dir
	}
	root, _ = filepath.Abs(root)
	return browser{dir: dir, store: store, root: root, rows: &rowCache{m: map[string]cachedRow{}}, reads: make(chan struct{}, serveReadsAtOnce)}
}

// rowCache keeps each listed run's row until its result.json changes (size
// or modification time): / read every result.json on each request.
type rowCache struct {
	mu sync.Mutex
	m  map[string]cachedRow
}

type cachedRow struct {
	size int64
	mod  time.Time
	row  entry
	skip bool // not a run to list (never loaded, a segment's)
}

func (b browser) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", b.list)
	m.HandleFunc("GET /run/{path...}", b.run)
	m.HandleFunc("GET /compare", b.compare)
	m.HandleFunc("GET /history", b.history)
	return m
}

// runDir resolves a path under the runs directory, refusing a way out: a
// ../, a link that leads outside, or a run whose files are such links.
func (b browser) runDir(p string) (string, bool) {
	clean := filepath.Clean("/" + p)
	d := filepath.Join(b.dir, clean)
	if _, err := os.Stat(d); err != nil || !b.inside(d) {
		return d, false
	}
	entries, _ := os.ReadDir(d)
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 && !b.inside(filepath.Join(d, e.Name())) {
			return d, false
		}
	}
	return d, true
}

// inside says p, its links resolved, is under the runs directory.
func (b browser) inside(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	real, _ = filepath.Abs(real)
	return real == b.root || strings.HasPrefix(real, b.root+string(filepath.Separator))
}

// shown is an error as a page may show it: paths relative to the runs
// directory, never the server's own (issue 52).
func (b browser) shown(err error) string {
	msg := err.Error()
	for _, prefix := range []string{b.root, filepath.Clean(b.dir)} {
		if prefix != "." && prefix != "" {
			msg = strings.ReplaceAll(msg, prefix+string(filepath.Separator), "")
			msg = strings.ReplaceAll(msg, prefix, "RUNS_DIR")
		}
	}
	return msg
}

// readRun reads a run for its page, bounded in size and in reads at once.
func (b browser) readRun(ctx context.Context, dir string) (*report.Result, error) {
	if st, err := os.Stat(filepath.Join(dir, "result.json")); err == nil && st.Size() > serveMaxResult {
		return nil, fmt.Errorf("result.json is %d MB, more than serve reads (%d MB); tpslab summary and tpslab report read it", st.Size()>>20, serveMaxResult>>20)
	}
	select {
	case b.reads <- struct{}{}:
		defer func() { <-b.reads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return readRunForCharts(dir)
}

// row is the list's line for the run in dir, read again only when its
// result.json changed.
func (b browser) row(dir string) (entry, bool) {
	p := filepath.Join(dir, "result.json")
	st, err := os.Stat(p)
	if err != nil || !b.inside(p) {
		return entry{}, false
	}
	b.rows.mu.Lock()
	c, ok := b.rows.m[p]
	b.rows.mu.Unlock()
	if ok && c.size == st.Size() && c.mod.Equal(st.ModTime()) {
		return c.row, !c.skip
	}
	name, _ := filepath.Rel(b.dir, dir)
	c = cachedRow{size: st.Size(), mod: st.ModTime()}
	if st.Size() > serveMaxResult {
		c.row = entry{What: "run", Status: "fail", Result: fmt.Sprintf("not read: result.json is %d MB, more than serve reads (%d MB)", st.Size()>>20, serveMaxResult>>20)}
	} else if r, err := report.ReadResult(dir); err != nil {
		c.row = entry{What: "run", Status: "fail", Result: "refused: " + b.shown(err)}
	} else {
		c.skip = r.NeverLoaded() || strings.Contains(name, string(filepath.Separator)+"segments"+string(filepath.Separator))
		c.row = runEntry(r)
	}
	b.rows.mu.Lock()
	b.rows.m[p] = c
	b.rows.mu.Unlock()
	return c.row, !c.skip
}

var listPage = template.Must(template.New("list").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tpslab runs</title>
<style>body{font:14px system-ui,sans-serif;margin:20px}td,th{padding:3px 12px 3px 0;text-align:left;vertical-align:top}
.ok{border-left:4px solid #15803d;padding-left:6px}.warn{border-left:4px solid #d97706;padding-left:6px}.fail{border-left:4px solid #b91c1c;padding-left:6px}
.st-ok{color:#15803d}.st-warn{color:#b45309}.st-fail{color:#b91c1c}td:nth-child(-n+3){white-space:nowrap}</style></head><body>
<h1>tpslab runs in {{.Dir}}</h1>
<form action="/compare">compare <input name="a" placeholder="run or set"> with <input name="b" placeholder="run or set"> <button>compare</button></form>
<table><tr><th>name</th><th>what</th><th>started</th><th>result</th><th></th></tr>
{{range .Runs}}<tr data-run="{{.Name}}" data-what="{{.What}}" data-status="{{.Status}}"><td class="{{.Status}}">{{.Name}}</td><td>{{.What}}</td><td>{{.Started}}</td><td class="st-{{.Status}}">{{.Verdict}}</td><td>{{if eq .What "run"}}<a href="/run/{{.Name}}/">page</a> · <a href="/run/{{.Name}}/report.html">report</a>{{else if .Page}}<a href="/run/{{.Name}}/{{.Page}}">{{.Page}}</a>{{else}}<a href="/compare?a={{.Name}}">compare</a>{{end}}</td></tr>
{{else}}<tr><td colspan="5">none yet: tpslab run writes its results here</td></tr>{{end}}</table>
{{if .Series}}<h2>history</h2><ul>{{range .Series}}<li><a href="/history?series={{.}}">{{.}}</a></li>{{end}}</ul>{{end}}
</body></html>`))

type listed struct {
	Name, What, Started, Verdict, Status string
	Page, Report                         string // under /run/NAME/
}

// list is every run and campaign under the directory, as tpslab runs
// lists them (campaigns).
func (b browser) list(w http.ResponseWriter, _ *http.Request) {
	var runs []listed
	for _, e := range campaigns(b.dir, b.row) {
		started := ""
		if !e.Started.IsZero() {
			started = e.Started.Format("2006-01-02 15:04")
		}
		runs = append(runs, listed{Name: e.Name, What: e.What, Started: started, Verdict: e.Result, Status: e.Status, Page: e.Page, Report: e.Report})
	}
	names, _ := history.Store{Path: b.store}.Names()
	var series []string
	for n := range names {
		series = append(series, n)
	}
	sort.Strings(series)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	listPage.Execute(w, map[string]any{"Dir": filepath.Base(b.root), "Runs": runs, "Series": series})
}

// run serves a finished run's live page (the dashboard at its end), its
// state, and its report.
func (b browser) run(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	rel, leaf := p, ""
	for _, l := range []string{"api/live", "report.html", "uplot.js", "uplot.css", "find-max.html", "compare.html", "envelopes.html", "why.html", "bisect.html"} {
		if strings.HasSuffix(p, "/"+l) {
			rel, leaf = strings.TrimSuffix(p, "/"+l), l
		}
	}
	rel = strings.TrimSuffix(rel, "/")
	dir, ok := b.runDir(rel)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if leaf == "" && !strings.HasSuffix(p, "/") {
		http.Redirect(w, r, "/run/"+p+"/", http.StatusFound)
		return
	}
	if leaf == "find-max.html" || leaf == "compare.html" || leaf == "envelopes.html" || leaf == "why.html" || leaf == "bisect.html" {
		// A campaign's page, rendered here from its data with tpslab's own
		// templates: an HTML file inside a run folder is never passed
		// through (a script placed there would run on serve's origin).
		var err error
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch leaf {
		case "find-max.html":
			err = renderFindMax(w, dir)
		case "envelopes.html":
			err = renderSweep(w, dir)
		case "why.html":
			err = renderWhy(w, dir)
		case "bisect.html":
			err = renderBisect(w, dir)
		default:
			err = renderAB(w, dir)
		}
		if err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			http.Error(w, b.shown(err), http.StatusNotFound)
		}
		return
	}
	res, err := b.readRun(r.Context(), dir)
	if err != nil {
		http.Error(w, b.shown(err), http.StatusNotFound)
		return
	}
	if dashboard.ServeAsset(w, leaf) {
		return
	}
	switch leaf {
	case "report.html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := report.WriteHTML(w, res); err != nil {
			http.Error(w, b.shown(err), http.StatusInternalServerError)
		}
		return
	}
	d, err := dashboard.Finished(res)
	if err != nil {
		http.Error(w, b.shown(err), http.StatusInternalServerError)
		return
	}
	d.SetAfter(provenanceLine(res), dashboard.Link{Text: "all runs", Href: "/"}, dashboard.Link{Text: "this run's report", Href: "report.html"})
	if leaf == "api/live" {
		d.ServeLive(w, r)
		return
	}
	d.ServePage(w, r)
}

// provenanceLine says what the run ran on, for its page: the network's
// programs by name, version and hash, the genesis, tpslab's build, and how
// to re-count it.
func provenanceLine(r *report.Result) string {
	var parts []string
	if n := r.Network; n != nil && n.Provenance != nil {
		for _, p := range n.Provenance.Programs {
			v := p.Version
			if v == "" {
				v = "no version output"
			}
			parts = append(parts, fmt.Sprintf("%s (%s; sha256 %.12s…)", filepath.Base(p.Path), v, p.SHA256))
		}
		if g := n.Provenance.GenesisSHA256; g != "" {
			parts = append(parts, fmt.Sprintf("genesis %.20s…", g))
		}
	} else if n != nil && n.Reported != "" {
		parts = append(parts, "the endpoint says it is "+n.Reported)
	}
	if e := r.Environment; e.BinarySHA256 != "" {
		parts = append(parts, fmt.Sprintf("tpslab %.12s (sha256 %s…)", e.GitCommit, e.BinarySHA256))
	}
	if len(parts) == 0 {
		return ""
	}
	return "ran on: " + strings.Join(parts, "; ") + " — tpslab verify re-counts it from the chain"
}

// compare serves the comparison of ?a= with ?b= (runs or sets).
func (b browser) compare(w http.ResponseWriter, r *http.Request) {
	var sets []compare.Set
	for _, k := range []string{"a", "b"} {
		dir, ok := b.runDir(r.URL.Query().Get(k))
		if !ok || r.URL.Query().Get(k) == "" {
			http.Error(w, fmt.Sprintf("compare: ?%s= names no run or set under RUNS_DIR", k), http.StatusBadRequest)
			return
		}
		s, err := compare.Load(dir)
		if err != nil {
			http.Error(w, b.shown(err), http.StatusBadRequest)
			return
		}
		sets = append(sets, s)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	compare.Run(sets).WriteHTML(w)
}

// history serves one series' trend and change points.
func (b browser) history(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("series")
	entries, err := history.Store{Path: b.store}.Series(name)
	if err != nil || len(entries) == 0 {
		http.Error(w, fmt.Sprintf("history: no series %q in the history store", name), http.StatusNotFound)
		return
	}
	metric := r.URL.Query().Get("metric")
	if metric == "" {
		metric = "committed_tps"
	}
	a, err := history.Analyze(r.Context(), name, entries, metric)
	if err != nil {
		http.Error(w, b.shown(err), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	a.WriteHTML(w)
}

// renderFindMax renders a find-max folder's page from its find-max.json.
func renderFindMax(w io.Writer, dir string) error {
	raw, err := readBounded(filepath.Join(dir, "find-max.json"), serveMaxResult)
	if err != nil {
		return err
	}
	var f struct {
		Objective string          `json:"objective"`
		TookS     float64         `json:"took_s"`
		Outcome   findmax.Outcome `json:"outcome"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("find-max.json: %v", err)
	}
	return findmax.WriteHTML(w, f.Outcome, f.Objective, (time.Duration(f.TookS * float64(time.Second))).Round(time.Second).String())
}

// renderAB renders an A/B folder's comparison from its a/ and b/ runs.
func renderAB(w io.Writer, dir string) error {
	var sets []compare.Set
	for _, side := range []string{"a", "b"} {
		s, err := compare.LoadWith(filepath.Join(dir, side), true)
		if err != nil {
			return fmt.Errorf("no comparison here: %v", err)
		}
		sets = append(sets, s)
	}
	return compare.RunWith(sets, compare.Options{}).WriteHTML(w)
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", filepath.Base(path), limit)
	}
	return os.ReadFile(path)
}

// renderSweep renders an envelope sweep's page from its SweepFile: the
// table, the conclusion, a link to each envelope's search.
func renderSweep(w io.Writer, dir string) error {
	raw, err := readBounded(filepath.Join(dir, campaign.SweepFile), serveMaxResult)
	if err != nil {
		return err
	}
	var s campaign.SweepSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %v", campaign.SweepFile, err)
	}
	return sweepPage.Execute(w, s)
}

var sweepPage = template.Must(template.New("sweep").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tpslab envelopes</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}td.n{text-align:right}</style></head><body>
<p><a href="/">all runs</a></p>
<h1>What each envelope sustains: {{.Resource}} per node</h1>
<p>{{.Conclusion}} under {{.Objective}}.</p>
<table><tr><th>{{.Resource}} per node</th><th>sustainable tx/s</th><th>confirmed</th><th>p99 commit ms</th><th>busiest node CPU %</th><th>limit at the first miss</th><th>search</th></tr>
{{range .Rows}}<tr data-envelope="{{.Envelope}}"><td>{{.Envelope}}</td><td class="n">{{printf "%.0f" .Sustainable}}</td><td>{{.Confirmed}}</td><td class="n">{{printf "%.0f" .P99Ms}}</td><td class="n">{{printf "%.0f" .BusiestNodeCPU}}</td><td>{{.Limit}}</td><td><a href="{{.Dir}}/find-max.html">find-max</a></td></tr>
{{end}}</table></body></html>
`))

// renderWhy renders a why folder's page from its WhyFile: the
// experiments, their verdicts, a link to each variant's runs' comparison.
func renderWhy(w io.Writer, dir string) error {
	raw, err := readBounded(filepath.Join(dir, campaign.WhyFile), serveMaxResult)
	if err != nil {
		return err
	}
	var s campaign.WhySummary
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %v", campaign.WhyFile, err)
	}
	return whyPage.Execute(w, map[string]any{"S": s})
}

var whyPage = template.Must(template.New("why").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tpslab why</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}td.n{text-align:right}.confirmed{color:#1a7f37;font-weight:600}.worse{color:#b42318}</style></head><body>
<p><a href="/">all runs</a></p>
<h1>Why: {{.S.Run}}</h1>
<p>The run named {{.S.Limit}}. Each resource relaxed on fresh networks beside the baseline, {{.S.Repeat}} run(s) each, interleaved.</p>
<p>{{.S.Conclusion}}</p>
<table><tr><th>resource</th><th>setting</th><th>committed tx/s</th><th>p99 commit ms</th><th>change (95% interval)</th><th>verdict</th></tr>
{{range .S.Rows}}<tr data-resource="{{.Resource}}" data-verdict="{{.Verdict}}"><td>{{.Resource}}{{if .Named}} (named){{end}}</td><td>{{.Setting}} {{.From}} → {{.To}}</td><td class="n">{{printf "%.0f" .BaseTPS}} → {{printf "%.0f" .TPS}}</td><td class="n">{{printf "%.0f" .BaseP99}} → {{printf "%.0f" .P99}}</td><td class="n">{{printf "%+.1f" .ChangePct}}% ({{printf "%+.1f" .CILowPct}}% .. {{printf "%+.1f" .CIHighPct}}%)</td><td class="{{if eq .Verdict "confirmed"}}confirmed{{else if eq .Verdict "worse"}}worse{{end}}">{{.Verdict}}</td></tr>
{{end}}</table></body></html>
`))

// renderBisect renders a bisect folder's page from its BisectFile.
func renderBisect(w io.Writer, dir string) error {
	raw, err := readBounded(filepath.Join(dir, campaign.BisectFile), serveMaxResult)
	if err != nil {
		return err
	}
	var s campaign.BisectSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %v", campaign.BisectFile, err)
	}
	var steps []string
	for k, st := range s.Steps {
		line := fmt.Sprintf("step %d: %s .. %s .. %s: %s", k+1, s.Builds[st.Good], s.Builds[st.Mid], s.Builds[st.Bad], st.Decided)
		for _, c := range st.Changes {
			line += fmt.Sprintf("; %s → %s %+.1f%% (%+.1f%% .. %+.1f%%)", s.Builds[c.From], s.Builds[c.To], c.ChangePct, c.CILowPct, c.CIHighPct)
		}
		steps = append(steps, line)
	}
	return bisectPage.Execute(w, map[string]any{"S": s, "Steps": steps})
}

var bisectPage = template.Must(template.New("bisect").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tpslab bisect</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}li{margin:4px 0}</style></head><body>
<p><a href="/">all runs</a></p>
<h1>Bisect: {{.S.Figure}}, {{.S.Repeat}} run(s) a build a step</h1>
<p id="conclusion">{{.S.Conclusion}}</p>
<ol>{{range .S.Builds}}<li>{{.}}</li>{{end}}</ol>
<ul>{{range .Steps}}<li>{{.}}</li>{{end}}</ul></body></html>
`))
