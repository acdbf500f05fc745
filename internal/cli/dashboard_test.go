package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

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
	w.read(t, pr, nil)
	t.Cleanup(func() { w.cmd.Process.Kill() })
	return w
}

// startInTerminal starts the tpslab binary in a pseudo-terminal cols wide,
// in dir, as a person at a terminal runs it; its lines are what stays on
// the screen: a line rewritten in place (\r) counts once, as last written.
func startInTerminal(t *testing.T, cols uint16, dir string, args ...string) *watchedRun {
	t.Helper()
	w := &watchedRun{cmd: exec.Command(testbin.Path(t), args...), url: make(chan string, 1), done: make(chan struct{})}
	w.cmd.Dir = dir
	w.cmd.Env = append(os.Environ(), "COLUMNS=", "TERM=xterm")
	tty, err := pty.StartWithSize(w.cmd, &pty.Winsize{Cols: cols, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	// The terminal reads to its end (EIO once the program has exited and
	// its output is drained), then the program is waited for.
	w.read(t, tty, func() { w.cmd.Wait(); tty.Close() })
	t.Cleanup(func() { w.cmd.Process.Kill() })
	return w
}

// waitFor waits until a line of w holds text.
func (w *watchedRun) waitFor(t *testing.T, text string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		w.mu.Lock()
		for _, l := range w.lines {
			if strings.Contains(l, text) {
				w.mu.Unlock()
				return
			}
		}
		w.mu.Unlock()
	}
	t.Fatalf("no line with %q within %s", text, within)
}

// ansi are the terminal controls tpslab writes (the progress line's erase).
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// read collects r's lines as a terminal would leave them, then calls
// after (if any).
func (w *watchedRun) read(t *testing.T, r io.Reader, after func()) {
	go func() {
		defer close(w.done)
		if after != nil {
			defer after()
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l := ansi.ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), "")
			if i := strings.LastIndexByte(l, '\r'); i >= 0 {
				l = l[i+1:]
			}
			t.Log(l)
			w.mu.Lock()
			w.lines = append(w.lines, l)
			w.mu.Unlock()
			if u, ok := strings.CutPrefix(l, "live dashboard: "); ok {
				w.url <- u
			}
		}
	}()
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
		// Two points a few seconds apart (a segmented run's first) may
		// give one tick on y.
		if x == nil || y == nil || !regexp.MustCompile(`\d+(\.\d)? s .*\d+(\.\d)? s`).MatchString(x[1]) || !regexp.MustCompile(`\d`).MatchString(y[1]) {
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

// The first encounter (issues 35, 54): a default run on 4 validators, in
// an 80-column terminal, leaves one screen: a progress line rewritten in
// place, then the summary with the verdict near its top, no line wider
// than the terminal; its live page, loaded mid-run in Chromium, shows the
// committed rate, the stage bar and the nodes. (A 2-segment run's merged
// page is checked in TestTwoSegmentsMergeExactly.)
func TestLiveDashboardAndOneScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks and a browser")
	}
	dir := t.TempDir()
	// --linger: a browser slow to start on a busy machine (CI: the run
	// ended first) still finds the page; it is loaded while the run goes.
	w := startInTerminal(t, 80, dir, "run", "--duration", "10s", "--dashboard=127.0.0.1:0", "--linger", "--out", "runs/one")
	var url string
	select {
	case url = <-w.url:
	case <-time.After(2 * time.Minute):
		t.Fatal("no dashboard address printed")
	}
	waitLive(t, url, 3)
	checkLivePage(t, page(t, url), 3)
	w.waitFor(t, "until Ctrl-C (--linger)", 2*time.Minute)
	w.cmd.Process.Signal(os.Interrupt)
	<-w.done
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after Ctrl-C on the lingering page", code)
	}
	// The screen a person at an 80-column terminal is left with (issue
	// 54): a run that kept up fits 24 lines; none is wider than 80.
	lines := w.lines
	verdict, progress := -1, 0
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, l)
		}
		// The headline, whatever the run's outcome on a busy CI machine.
		if regexp.MustCompile(`^(kept up|fell behind|refused|generator-limited|generator sent late|machine busy|committed nothing|the chain stopped committing|no steady window)\b`).MatchString(l) {
			verdict = i
		}
		if regexp.MustCompile(`^\s+\d+s (warmup|steady|drain)\s+offered`).MatchString(l) && verdict < 0 {
			progress++
		}
	}
	// A busy machine (CI) adds its WARNING paragraph to a run that kept
	// up: the screen is counted without it.
	warned, inWarning := 0, false
	for _, l := range lines {
		inWarning = strings.HasPrefix(l, "WARNING: ") || inWarning && strings.HasPrefix(l, "  ")
		if inWarning {
			warned++
		}
	}
	// The live page's two lines (its address first, that it stays after)
	// are --dashboard's: a default run's first screen is the rest, at most
	// 24 lines when it kept up (issue 70).
	own := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "live dashboard: ") || strings.HasPrefix(l, "the live page stays at ") {
			own++
		}
	}
	most := 50 // a busy machine's warnings after a verdict other than kept up
	if verdict >= 0 && strings.HasPrefix(lines[verdict], "kept up") {
		most = 24
	}
	if len(lines)-warned-own > most || verdict < 0 || verdict > 15 || progress != 1 {
		t.Errorf("%d lines (%d of them warnings, %d the live page's; at most %d others), the verdict at line %d, %d progress lines before it (one, rewritten in place)", len(lines), warned, own, most, verdict+1, progress)
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
