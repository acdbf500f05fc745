// Package dashboard serves a run's live web page (run --dashboard): the
// rates, latencies, latency by stage, in-flight and mempool, each node's
// CPU and memory, events and thresholds, updated every second, and the
// verdict when the run ends. It is an observer like the result file: the
// runner hands it each collected second and each checkpoint's result, so it
// costs the hot path nothing. A segmented run feeds it the segments'
// seconds merged (Tail). The page and its script are embedded: it makes no
// outside request.
package dashboard

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/threshold"
)

//go:embed page.html
var page []byte

// DefaultAddr is where the dashboard listens unless told otherwise (k6's
// dashboard port); a busy port falls back to a free one.
const DefaultAddr = "127.0.0.1:5665"

// Point is one second as the page draws it. Latencies are -1 when the
// second had none.
type Point struct {
	T         float64                       `json:"t"`
	Phase     string                        `json:"phase"`
	Offered   int64                         `json:"offered"`
	Sent      int64                         `json:"sent"`
	Committed int64                         `json:"committed"`
	Rejected  int64                         `json:"rejected"`
	Errors    int64                         `json:"errors"` // failed in a block, expired, unacked
	CommitP50 float64                       `json:"commit_p50"`
	CommitP99 float64                       `json:"commit_p99"`
	AckP99    float64                       `json:"ack_p99"`
	InFlight  int                           `json:"in_flight"`
	Mempool   int                           `json:"mempool"`
	Nodes     map[string]map[string]float64 `json:"nodes,omitempty"` // node -> cpu_percent, rss_bytes
}

// Figure is one headline figure from report's registry of metrics.
type Figure struct {
	Name  string  `json:"name"`
	Label string  `json:"label"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// Stage is one latency stage as report.html draws it: the p50 time it
// took from the end of the one before, and when it was done (the sum of
// the stages so far, from the intended send), in ms.
type Stage struct {
	Name  string  `json:"name"`
	Ms    float64 `json:"ms"`
	At    float64 `json:"at_ms"`
	Color string  `json:"color"`
}

// Threshold is a checked threshold with its actual value written with its
// unit, as the summary writes it.
type Threshold struct {
	report.ThresholdOutcome
	Text    string `json:"text"`
	Pending bool   `json:"pending,omitempty"` // not checked yet (before the first checkpoint)
}

// Link is a page linked from the dashboard (serve: the run's report, the
// list of runs).
type Link struct {
	Text string `json:"text"`
	Href string `json:"href"`
}

// State is what /api/live answers.
type State struct {
	Run        string         `json:"run"`
	Segments   int            `json:"segments,omitempty"` // merged from this many segments
	Points     []Point        `json:"points"`
	Figures    []Figure       `json:"figures"`
	Stages     []Stage        `json:"stages"`
	StagesNote string         `json:"stages_note,omitempty"` // why there are none yet
	Thresholds []Threshold    `json:"thresholds"`
	Events     []report.Event `json:"events"`
	Verdict    string         `json:"verdict,omitempty"` // when the run has ended
	Final      bool           `json:"final"`
	After      string         `json:"after,omitempty"` // how to see the run again
	Links      []Link         `json:"links,omitempty"`
}

// maxPoints bounds the seconds kept (an hour); older ones are dropped.
const maxPoints = 3600

// shownFigures are the registry's metrics the page leads with, in order.
var shownFigures = []string{"committed_tps", "offered_tps", "sent_tps", "p50_commit", "p99_commit", "reject_rate", "node_cpu_us_per_tx", "generator_cpu_us_per_tx"}

// head is State without its points, encoded once per change: every
// viewer's answer is its points after ?since= and this, copied, never
// encoded again (50 viewers encoding the state each cost 25% of a core).
type head struct {
	Run        string         `json:"run"`
	Segments   int            `json:"segments,omitempty"`
	Figures    []Figure       `json:"figures"`
	Stages     []Stage        `json:"stages"`
	StagesNote string         `json:"stages_note,omitempty"`
	Thresholds []Threshold    `json:"thresholds"`
	Events     []report.Event `json:"events"`
	Verdict    string         `json:"verdict,omitempty"`
	Final      bool           `json:"final"`
	After      string         `json:"after,omitempty"`
	Links      []Link         `json:"links,omitempty"`
}

// MaxViewers bounds the pages served at once (a viewer is a connection
// that asked in the last viewerIdle); more are answered 503.
const (
	MaxViewers = 16
	viewerIdle = 3 * time.Second
)

// Dashboard holds the live state and serves it.
type Dashboard struct {
	mu        sync.Mutex
	st        State
	points    [][]byte // st.Points encoded, one each
	head      []byte   // st without points encoded; nil when it changed
	viewers   map[string]time.Time
	refused   int
	busy      time.Duration // spent answering /api/live
	answers   int
	most      int // viewers at once, at most
	started   time.Time
	lastPoll  time.Time // when a page last asked
	finalSeen chan struct{}
	seenOnce  sync.Once
	ths       []threshold.Threshold
	srv       *http.Server
	ln        net.Listener
}

// New makes a dashboard for run, checking thresholds (as the scenario
// gives them) at each checkpoint.
func New(run string, thresholds []string) (*Dashboard, error) {
	ths, err := threshold.ParseAll(thresholds)
	if err != nil {
		return nil, err
	}
	pending := []Threshold{}
	for _, th := range ths {
		pending = append(pending, Threshold{ThresholdOutcome: report.ThresholdOutcome{Expr: th.Expr}, Text: "not checked yet", Pending: true})
	}
	return &Dashboard{st: State{Run: run, Points: []Point{}, Figures: []Figure{}, Stages: []Stage{}, Thresholds: pending, Events: []report.Event{}},
		ths: ths, finalSeen: make(chan struct{}), viewers: map[string]time.Time{}, started: time.Now()}, nil
}

// Listen serves the page on addr; at DefaultAddr (or "") a taken port
// falls back to a free one.
func (d *Dashboard) Listen(addr string) error {
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && addr == DefaultAddr {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return err
	}
	d.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.ServePage)
	mux.HandleFunc("GET /api/live", d.ServeLive)
	mux.HandleFunc("GET /{asset}", func(w http.ResponseWriter, r *http.Request) {
		if !ServeAsset(w, r.PathValue("asset")) {
			http.NotFound(w, r)
		}
	})
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go d.srv.Serve(d.ln)
	return nil
}

// URL is the page's address.
func (d *Dashboard) URL() string { return "http://" + d.ln.Addr().String() + "/" }

// Linger gives a page that is watching (it asked in the last 3 s) up to
// wait to fetch the final state, the verdict, before the process exits.
func (d *Dashboard) Linger(wait time.Duration) {
	d.mu.Lock()
	watching := time.Since(d.lastPoll) < 3*time.Second
	d.mu.Unlock()
	if !watching {
		return
	}
	select {
	case <-d.finalSeen:
	case <-time.After(wait):
	}
}

// Close stops serving.
func (d *Dashboard) Close() error {
	if d.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return d.srv.Shutdown(ctx)
}

// ServePage serves the page (it asks for api/live beside it).
func (d *Dashboard) ServePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

// ServeAsset serves the page's chart library (uplot.js, uplot.css), the
// one report.html embeds: the page makes no outside request. It says
// whether name was one.
func ServeAsset(w http.ResponseWriter, name string) bool {
	js, css := report.UplotAssets()
	switch name {
	case "uplot.js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		io.WriteString(w, string(js))
	case "uplot.css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		io.WriteString(w, string(css))
	default:
		return false
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	return true
}

// SetAfter sets the line that says how to see the run once it has ended,
// and the links the page shows.
func (d *Dashboard) SetAfter(after string, links ...Link) {
	d.mu.Lock()
	d.st.After, d.st.Links = after, links
	d.head = nil
	d.mu.Unlock()
}

// Finished is the dashboard of a run that has ended, from its files: the
// page shows it as it stood at its end (tpslab serve).
func Finished(res *report.Result) (*Dashboard, error) {
	d, err := New(filepath.Base(res.Dir), nil)
	if err != nil {
		return nil, err
	}
	for i := range res.Series {
		d.Add(PointOf(&res.Series[i]))
	}
	d.SetSegments(len(res.Segments))
	d.Result(res, true)
	return d, nil
}

// ServeLive answers the state; ?since=T leaves out the seconds up to T
// (the page asks for what it has not drawn yet). At most MaxViewers are
// served at once.
func (d *Dashboard) ServeLive(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	since := -1.0
	if v := r.URL.Query().Get("since"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			since = f
		}
	}
	d.mu.Lock()
	if !d.admit(r.RemoteAddr, start) {
		d.refused++
		d.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the dashboard serves at most "+strconv.Itoa(MaxViewers)+" viewers at once; tpslab serve shows the run when it has ended", http.StatusServiceUnavailable)
		return
	}
	if d.head == nil {
		d.head, _ = json.Marshal(head{Run: d.st.Run, Segments: d.st.Segments, Figures: d.st.Figures, Stages: d.st.Stages, StagesNote: d.st.StagesNote,
			Thresholds: d.st.Thresholds, Events: d.st.Events, Verdict: d.st.Verdict, Final: d.st.Final, After: d.st.After, Links: d.st.Links})
	}
	i := sort.Search(len(d.st.Points), func(i int) bool { return d.st.Points[i].T > since })
	n := len(`{"points":[],`) + len(d.head)
	for _, p := range d.points[i:] {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"points":[`...)
	for k, p := range d.points[i:] {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	b = append(b, "],"...)
	b = append(b, d.head[1:]...)
	final := d.st.Final
	d.lastPoll = start
	d.mu.Unlock()
	if final {
		d.seenOnce.Do(func() { close(d.finalSeen) })
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
	d.mu.Lock()
	d.busy += time.Since(start)
	d.answers++
	d.mu.Unlock()
}

// admit says whether the viewer at addr is served: one seen lately, or a
// new one while there is room (d.mu held).
func (d *Dashboard) admit(addr string, now time.Time) bool {
	if _, ok := d.viewers[addr]; !ok {
		for a, at := range d.viewers {
			if now.Sub(at) > viewerIdle {
				delete(d.viewers, a)
			}
		}
		if len(d.viewers) >= MaxViewers {
			return false
		}
	}
	d.viewers[addr] = now
	d.most = max(d.most, len(d.viewers))
	return true
}

// Cost is the time spent answering viewers, and how many answers, viewers
// at most and refusals.
func (d *Dashboard) Cost() (busy time.Duration, answers, most, refused int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.busy, d.answers, d.most, d.refused
}

// costNote names the dashboard's cost when it passed 2% of a core over
// the run: tpslab's own CPU and schedule lag then include it.
func (d *Dashboard) costNote(now time.Time) string {
	el := now.Sub(d.started)
	if el <= 0 || d.busy.Seconds() <= 0.02*el.Seconds() {
		return ""
	}
	return fmt.Sprintf("the live dashboard took %.1f%% of one core (%d answers to up to %d viewers in %.0f s, %d refused past %d at once): tpslab's own CPU and schedule lag include it",
		100*d.busy.Seconds()/el.Seconds(), d.answers, d.most, el.Seconds(), d.refused, MaxViewers)
}

// nodeMetrics are the per-node figures the page's nodes and health panel
// shows: the process's and the health monitor's (docs/health.md).
var nodeMetrics = map[string]bool{"cpu_percent": true, "rss_bytes": true, "behind_blocks": true, "missed_signatures": true,
	"restarts": true, "log_errors": true, "peers": true}

// PointOf is one collected second as the page draws it.
func PointOf(s *report.Second) Point {
	p := Point{T: s.T, Phase: s.Phase, Offered: s.Offered, Sent: s.Sent, Committed: s.Committed,
		Rejected: measure.Sum(s.Rejected), Errors: measure.Sum(s.Failed) + s.Expired + measure.Sum(s.Unacked),
		CommitP50: -1, CommitP99: -1, AckP99: -1, InFlight: s.InFlight, Mempool: s.MempoolTxs}
	if s.CommitMs.Count > 0 {
		p.CommitP50, p.CommitP99 = s.CommitMs.P50, s.CommitMs.P99
	}
	if s.AckMs.Count > 0 {
		p.AckP99 = s.AckMs.P99
	}
	for name, v := range s.Telemetry {
		node, metric, ok := strings.Cut(name, ".")
		if !ok || node == "links" || !nodeMetrics[metric] {
			continue
		}
		if p.Nodes == nil {
			p.Nodes = map[string]map[string]float64{}
		}
		if p.Nodes[node] == nil {
			p.Nodes[node] = map[string]float64{}
		}
		p.Nodes[node][metric] = v
	}
	return p
}

// Second adds one collected second (runner.Observer).
func (d *Dashboard) Second(s *report.Second, _ *measure.Interval, _ bool) { d.Add(PointOf(s)) }

// Add appends a point (seconds come in order) and brings the rates up to
// this second: checkpoints come every few seconds, the page every second.
func (d *Dashboard) Add(p Point) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Points = append(d.st.Points, p)
	b, _ := json.Marshal(p)
	d.points = append(d.points, b)
	if n := len(d.st.Points); n > maxPoints {
		d.st.Points = append(d.st.Points[:0], d.st.Points[n-maxPoints:]...)
		d.points = append(d.points[:0], d.points[n-maxPoints:]...)
	}
	if !d.st.Final {
		d.liveRates()
	}
	d.head = nil
}

// liveRates sets committed, offered and sent per second over the steady
// seconds so far (over every second before the steady window begins), as
// the summary counts them (d.mu held).
func (d *Dashboard) liveRates() {
	var n, offered, sent, committed float64
	steady := false
	for _, p := range d.st.Points {
		steady = steady || p.Phase == "steady"
	}
	for _, p := range d.st.Points {
		if steady && p.Phase != "steady" {
			continue
		}
		n++
		offered += float64(p.Offered)
		sent += float64(p.Sent)
		committed += float64(p.Committed)
	}
	if n == 0 {
		return
	}
	d.setFigure(figureOf("committed_tps", committed/n))
	d.setFigure(figureOf("offered_tps", offered/n))
	d.setFigure(figureOf("sent_tps", sent/n))
}

// registry is report's metrics by name: the page's figures are theirs.
var registry = func() map[string]report.Def {
	m := map[string]report.Def{}
	for _, d := range report.Defs(nil) {
		m[d.Name] = d
	}
	return m
}()

// tileLabels name the tiles whose registry label is the metric's name.
var tileLabels = map[string]string{
	"offered_tps": "offered", "sent_tps": "sent",
	"node_cpu_us_per_tx": "nodes' CPU per payment", "generator_cpu_us_per_tx": "tpslab's CPU per payment",
}

// figureOf is metric name with value v, labelled as the registry says.
func figureOf(name string, v float64) Figure {
	def := registry[name]
	label := def.Label
	if l, ok := tileLabels[name]; ok {
		label = l
	}
	if label == "" {
		label = strings.ReplaceAll(name, "_", " ")
	}
	return Figure{Name: name, Label: label, Unit: def.Unit, Value: v}
}

// setFigure replaces the figure of f's name, or adds it (d.mu held).
func (d *Dashboard) setFigure(f Figure) {
	for i := range d.st.Figures {
		if d.st.Figures[i].Name == f.Name {
			d.st.Figures[i] = f
			return
		}
	}
	d.st.Figures = append(d.st.Figures, f)
}

// Result takes the result at a checkpoint or the end (runner.Observer):
// the figures, stages, thresholds and events, and the verdict at the end.
func (d *Dashboard) Result(res *report.Result, final bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &res.Summary
	d.st.Figures = d.st.Figures[:0]
	for _, name := range shownFigures {
		def, ok := registry[name]
		if !ok {
			continue
		}
		if v, ok := def.Run(s); ok {
			d.st.Figures = append(d.st.Figures, figureOf(name, v))
		}
	}
	d.st.Stages = d.st.Stages[:0]
	for _, st := range s.LatencyMs.Stages() {
		d.st.Stages = append(d.st.Stages, Stage{Name: st.Name, Ms: st.Ms, At: st.At, Color: st.Color})
	}
	outcomes := res.Thresholds
	if !final || len(res.Thresholds) == 0 {
		outcomes = nil
		for _, th := range d.ths {
			outcomes = append(outcomes, th.Check(s))
		}
	}
	d.st.Thresholds = d.st.Thresholds[:0]
	for _, o := range outcomes {
		d.st.Thresholds = append(d.st.Thresholds, Threshold{ThresholdOutcome: o, Text: o.Actually()})
	}
	d.st.Events = append(d.st.Events[:0], res.Events...)
	d.head = nil
	if final {
		d.st.Final, d.st.Verdict = true, res.Verdict()
		if n := d.costNote(time.Now()); n != "" {
			res.Notes = append(res.Notes, n)
		}
	} else {
		d.liveRates() // the checkpoint's steady window lags the page's seconds
	}
}

// SetSegments marks the state as merged from n segments.
func (d *Dashboard) SetSegments(n int) {
	d.mu.Lock()
	d.st.Segments = n
	if n > 1 {
		d.st.StagesNote = "none yet: each segment times its own stages; they are merged when the segments' results are, at the end"
	}
	d.head = nil
	d.mu.Unlock()
}
