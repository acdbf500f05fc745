package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/dashboard"
	"github.com/tpslab/tpslab/internal/testbin"
)

// watchedRun starts the tpslab binary with stdout and stderr in one
// stream, as a CI log shows them, and returns its lines as they come.
type watchedRun struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	url   chan string
	done  chan struct{}
}

func startWatched(t *testing.T, args ...string) *watchedRun {
	t.Helper()
	w := &watchedRun{cmd: exec.Command(testbin.Path(t), args...), url: make(chan string, 1), done: make(chan struct{})}
	pr, pw := io.Pipe()
	w.cmd.Stdout, w.cmd.Stderr = pw, pw
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); pw.Close() }()
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l := sc.Text()
			t.Log(l)
			w.mu.Lock()
			w.lines = append(w.lines, l)
			w.mu.Unlock()
			if u, ok := strings.CutPrefix(l, "live dashboard: "); ok {
				w.url <- u
			}
		}
	}()
	t.Cleanup(func() { w.cmd.Process.Kill() })
	return w
}

// page loads url in headless Chromium and returns the DOM its script built.
func page(t *testing.T, url string) string {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not installed (test.sh installs Debian's chromium package)")
	}
	out, err := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=3000", "--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

// checkLivePage reads what a person sees mid-run: a committed rate above
// zero, the stage bar and a node's row, with no script error.
func checkLivePage(t *testing.T, dom string, stages int) {
	t.Helper()
	m := regexp.MustCompile(`data-metric="committed_tps" data-value="([0-9.e+]+)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no committed_tps on the page:\n%.3000s", dom)
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
		t.Errorf("committed_tps %s on the page mid-run", m[1])
	}
	if n := strings.Count(dom, `class="stage" data-stage=`); n < stages {
		t.Errorf("%d stages in the stage bar, want %d", n, stages)
	}
	if !strings.Contains(dom, `<tr data-node="node0">`) {
		t.Error("no node row on the page")
	}
	if !strings.Contains(dom, `data-errors="0"`) {
		t.Errorf("script errors: %s", regexp.MustCompile(`<body[^>]*>`).FindString(dom))
	}
	checkPanels(t, dom)
}

// checkPanels reads what each live chart's axes say (uPlot draws on a
// canvas; the page keeps each axis's tick labels beside it) and that no
// panel is blank: it shows its content or says "none" and why (issue 54).
func checkPanels(t *testing.T, dom string) {
	t.Helper()
	for _, id := range []string{"c-rates", "c-latency", "c-queue"} {
		tag := regexp.MustCompile(`<div class="chart" id="` + id + `"[^>]*>`).FindString(dom)
		x := regexp.MustCompile(`data-ticks-x="([^"]*)"`).FindStringSubmatch(tag)
		y := regexp.MustCompile(`data-ticks-y="([^"]*)"`).FindStringSubmatch(tag)
		if x == nil || y == nil || !regexp.MustCompile(`\d+ s .*\d+ s`).MatchString(x[1]) || !regexp.MustCompile(`\d.* .*\d`).MatchString(y[1]) {
			t.Errorf("chart %s: no axis ticks: %s", id, tag)
		}
		if !strings.Contains(dom, `class="uplot`) {
			t.Errorf("chart %s is not drawn by uPlot", id)
		}
	}
	stages := strings.Count(dom, `class="stage" data-stage=`) > 0 || regexp.MustCompile(`id="stages-none">none[^<]+<`).MatchString(dom)
	nodes := strings.Contains(dom, `<tr data-node=`) || regexp.MustCompile(`id="nodes-none">none[^<]+<`).MatchString(dom)
	thresholds := regexp.MustCompile(`<ul id="thresholds" data-metric="thresholds"><li`).MatchString(dom)
	events := regexp.MustCompile(`<ul id="events"><li`).MatchString(dom)
	if !stages || !nodes || !thresholds || !events {
		t.Errorf("a blank panel: stages %v, nodes %v, thresholds %v, events %v", stages, nodes, thresholds, events)
	}
}

// The first encounter (issue 35): a default run on 4 validators, not on a
// terminal, prints one screen with the verdict near its end and progress
// while it goes; its live page, loaded mid-run in Chromium, shows the
// committed rate, the stage bar and the nodes. (A 2-segment run's merged
// page is checked in TestTwoSegmentsMergeExactly.)
func TestLiveDashboardAndOneScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks and a browser")
	}
	dir := t.TempDir()
	w := startWatched(t, "run", "--duration", "10s", "--dashboard=127.0.0.1:0", "--out", filepath.Join(dir, "one"))
	var url string
	select {
	case url = <-w.url:
	case <-time.After(2 * time.Minute):
		t.Fatal("no dashboard address printed")
	}
	waitLive(t, url, 3)
	checkLivePage(t, page(t, url), 3)
	<-w.done
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := w.lines
	verdict, progress := -1, 0
	for i, l := range lines {
		// The headline, whatever the run's outcome on a busy CI machine.
		if regexp.MustCompile(`^(kept up|fell behind|refused|generator-limited|machine busy|committed nothing|the chain stopped committing|no steady window)\b`).MatchString(l) {
			verdict = i
		}
		if regexp.MustCompile(`^\s+\d+s (warmup|steady)\s+offered`).MatchString(l) && verdict < 0 {
			progress++
		}
	}
	// One screen (50 lines), the verdict near its top: on a busy machine
	// the warnings after it grow (CI: 41 lines after a verdict at line 10).
	if len(lines) > 50 || verdict < 0 || verdict > 15 || progress == 0 {
		t.Errorf("%d lines, the verdict at line %d, %d progress lines before it", len(lines), verdict+1, progress)
	}

}

// waitLive waits until the page's state has a committed rate, stages
// stages and a node: then a browser has something to show.
func waitLive(t *testing.T, url string, stages int) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		resp, err := http.Get(url + "api/live")
		if err != nil {
			continue
		}
		var st dashboard.State
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || len(st.Points) == 0 {
			continue
		}
		committed := 0.0
		for _, f := range st.Figures {
			if f.Name == "committed_tps" {
				committed = f.Value
			}
		}
		last = fmt.Sprintf("committed_tps %g, %d stages, nodes %v", committed, len(st.Stages), st.Points[len(st.Points)-1].Nodes != nil)
		if committed > 0 && len(st.Stages) >= stages && st.Points[len(st.Points)-1].Nodes != nil {
			return
		}
	}
	t.Fatalf("the live state never had what the page shows: %s", last)
}
