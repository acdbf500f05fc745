package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

func second(t float64, phase string, offered, committed int64, p50 float64) report.Second {
	s := report.Second{T: t, Phase: phase, Counts: measure.Counts{Offered: offered, Sent: offered, Committed: committed},
		Telemetry: map[string]float64{"node0.cpu_percent": 30, "node0.rss_bytes": 1 << 20, "node0.goroutines": 80}}
	if committed > 0 {
		s.CommitMs = measure.Percentiles{Count: committed, P50: p50, P99: 2 * p50}
	}
	return s
}

func live(t *testing.T, d *Dashboard, query string) State {
	t.Helper()
	resp, err := http.Get(d.URL() + "api/live" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func figure(st State, name string) float64 {
	for _, f := range st.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return -1
}

// The page's state follows the seconds: rates over the steady seconds so
// far, only new seconds with ?since, thresholds checked at checkpoints, the
// verdict at the end; the page is served from the binary.
func TestLiveState(t *testing.T) {
	d, err := New("r", []string{"p99_commit < 2s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, s := range []report.Second{second(1, "warmup", 100, 0, 0), second(2, "steady", 100, 80, 400), second(3, "steady", 100, 120, 500)} {
		d.Second(&s, nil, false)
		if i == 0 {
			if st := live(t, d, ""); figure(st, "committed_tps") != 0 || st.Points[0].CommitP99 != -1 {
				t.Errorf("before a commit: %+v", st)
			}
		}
	}
	st := live(t, d, "?since=2")
	if len(st.Points) != 1 || st.Points[0].T != 3 || figure(st, "committed_tps") != 100 || st.Points[0].Nodes["node0"]["cpu_percent"] != 30 {
		t.Errorf("since 2: points %+v, committed_tps %g", st.Points, figure(st, "committed_tps"))
	}
	if _, ok := st.Points[0].Nodes["node0"]["goroutines"]; ok {
		t.Error("the page gets only CPU and memory by node")
	}
	res := &report.Result{SchemaVersion: report.SchemaVersion, Status: "complete"}
	res.Summary.Offered, res.Summary.Sent, res.Summary.Committed, res.Summary.CommittedTPS, res.Summary.OfferedTPS = 300, 300, 200, 100, 100
	res.Summary.Steady.DurationS = 2
	res.Summary.LatencyMs.Commit = measure.Percentiles{Count: 200, P50: 450, P99: 3000}
	res.Summary.LatencyMs.Ack = measure.Percentiles{Count: 300, P50: 10}
	d.Result(res, false)
	st = live(t, d, "?since=3")
	// report.html's stages: each the time from the end of the one before
	// (sent 0, acknowledged 10, committed 440), done at their sum.
	if len(st.Thresholds) != 1 || st.Thresholds[0].OK || st.Verdict != "" || len(st.Stages) != 3 || st.Stages[2].Name != "committed" ||
		st.Stages[2].Ms != 440 || st.Stages[2].At != 450 || !strings.Contains(st.Thresholds[0].Text, "actual") {
		t.Errorf("at a checkpoint: thresholds %+v, verdict %q, stages %+v", st.Thresholds, st.Verdict, st.Stages)
	}
	d.Result(res, true)
	if st = live(t, d, "?since=3"); !st.Final || !strings.HasPrefix(st.Verdict, "kept up") {
		t.Errorf("at the end: final %v, verdict %q", st.Final, st.Verdict)
	}
	resp, err := http.Get(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `id="figures"`) || regexp.MustCompile(`(src|href)="https?://|fetch\("https?://`).Match(b) {
		t.Error("the page is missing, or loads something from elsewhere")
	}
}

// Two segments' series merge second by second: counts summed, p99 the
// highest, a second waiting for the slower segment until it is 3 s behind.
func TestTailMergesSegments(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	write := func(dir string, secs ...report.Second) {
		f, err := os.OpenFile(filepath.Join(dir, "series.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secs {
			b, _ := json.Marshal(s)
			f.Write(append(b, '\n'))
		}
		f.Close()
	}
	write(dirs[0], second(1, "steady", 100, 50, 300), second(2, "steady", 100, 100, 300))
	write(dirs[1], second(1, "steady", 100, 150, 500))
	d, _ := New("m", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Tail(ctx, dirs)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		n := len(d.st.Points)
		d.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // another round: second 2 still waits for segment 1
	d.mu.Lock()
	pts := append([]Point(nil), d.st.Points...)
	segs := d.st.Segments
	d.mu.Unlock()
	if len(pts) != 1 || pts[0].Committed != 200 || pts[0].Offered != 200 || pts[0].CommitP99 != 1000 || pts[0].CommitP50 != 450 || segs != 2 {
		t.Fatalf("merged: %+v (segments %d)", pts, segs)
	}
}

// Viewers are bounded: MaxViewers connections are served, the next is
// answered 503 until one goes idle; a dashboard that cost more than 2% of
// a core over the run says so in the result (issue 52, case 7).
func TestViewersAreBoundedAndCostNamed(t *testing.T) {
	d, err := New("r", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := second(1, "steady", 100, 100, 300)
	d.Second(&s, nil, false)
	status := func(c *http.Client) int {
		resp, err := c.Get(d.URL() + "api/live")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var clients []*http.Client
	for i := 0; i <= MaxViewers; i++ {
		clients = append(clients, &http.Client{Transport: &http.Transport{}}) // a connection each
	}
	for i, c := range clients[:MaxViewers] {
		if code := status(c); code != 200 {
			t.Fatalf("viewer %d: %d", i, code)
		}
	}
	if code := status(clients[MaxViewers]); code != http.StatusServiceUnavailable {
		t.Errorf("viewer %d of %d: %d, expected 503", MaxViewers+1, MaxViewers, code)
	}
	if code := status(clients[0]); code != 200 {
		t.Errorf("a viewer already served, asking again: %d", code)
	}
	_, answers, most, refused := d.Cost()
	if answers != MaxViewers+1 || most != MaxViewers || refused != 1 {
		t.Errorf("cost: %d answers, %d viewers at most, %d refused; expected %d, %d, 1", answers, most, refused, MaxViewers+1, MaxViewers)
	}
	res := &report.Result{SchemaVersion: report.SchemaVersion, Status: "complete"}
	d.started = time.Now().Add(-time.Second) // a one-second run...
	d.busy = 100 * time.Millisecond          // ...a tenth of it answering
	d.Result(res, true)
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "the live dashboard took 10.0% of one core") {
		t.Errorf("notes %q, expected the dashboard's cost named", res.Notes)
	}
	quiet := &report.Result{SchemaVersion: report.SchemaVersion, Status: "complete"}
	d.busy = 10 * time.Millisecond
	d.Result(quiet, true)
	if len(quiet.Notes) != 0 {
		t.Errorf("a dashboard under 2%% of a core named: %q", quiet.Notes)
	}
}

// One answer to a viewer costs copying, not encoding: an hour of seconds
// and 50 viewers each asking for the newest second.
func BenchmarkServeLive(b *testing.B) {
	d, _ := New("r", nil)
	for i := 0; i < maxPoints; i++ {
		s := second(float64(i+1), "steady", 1000, 1000, 300)
		d.Add(PointOf(&s))
	}
	reqs := make([]*http.Request, 50)
	for i := range reqs {
		reqs[i], _ = http.NewRequest("GET", "/api/live?since="+strconv.Itoa(maxPoints-1), nil)
		reqs[i].RemoteAddr = "127.0.0.1:" + strconv.Itoa(40000+i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.ServeLive(discard{}, reqs[i%len(reqs)])
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
