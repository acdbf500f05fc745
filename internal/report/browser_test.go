package report_test

import (
	"context"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// chromiumArgs runs Chromium on a profile of its own in the test's
// temporary folder (removed with it).
func chromiumArgs(t *testing.T, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, extra...)
}

// A real staged run's report opens in headless Chromium with every chart
// drawn with data and no script or console error; a screenshot is kept in
// artifacts/.
func TestReportRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network and a browser")
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not installed (test.sh installs Debian's chromium package)")
	}
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 4, Home: filepath.Join(t.TempDir(), "net"), ChainID: "report",
		Genesis: chain.Genesis{Seed: "report", Accounts: 1000, Balance: 1 << 40}, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Down()
	sc := scenario.Default()
	sc.Target.NetHome = n.Home
	sc.Workload.Senders = 500
	sc.Load.Stages = []scenario.Stage{{Duration: scenario.Duration(4 * time.Second), Target: 200, Ramp: "step"}, {Duration: scenario.Duration(4 * time.Second), Target: 400, Ramp: "step"}}
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Profile = []string{"cpu", "allocs"}
	sc.Out = filepath.Join(t.TempDir(), "run")
	if _, err := runner.Run(context.Background(), sc, runner.Options{Kinds: all.Registry()}); err != nil {
		t.Fatal(err)
	}
	r, err := report.ReadResult(sc.Out)
	if err != nil {
		t.Fatal(err)
	}
	measuretest.Identities(t, r.Summary.Counts)
	// An event, as a crashed node leaves one: a table row and a line on the charts.
	r.Events = append(r.Events, report.Event{T: 4, Kind: "node_down", Target: "node3", Detail: "pid 1 exited"})
	page, err := report.WriteHTMLFile(r)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	if regexp.MustCompile(`(src|href)="https?://`).Match(html) {
		t.Error("the report loads something from an outside host")
	}
	wantCharts := strings.Count(string(html), `class="chart"`)
	out, err := exec.Command(browser, chromiumArgs(t, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	if m := regexp.MustCompile(`data-errors="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != "0" {
		t.Errorf("page errors: %v", m)
	}
	// The charts of what was read inside the nodes are added by the page
	// itself: CPU, memory, mempool, allocation rate, p2p bytes, storage
	// writes and bytes on the wire per payment.
	inside := strings.Count(dom, `id="c-inside-`)
	for _, title := range []string{"CPU by process", "Memory by process", "Mempool by node", "Allocation rate by node", "p2p bytes sent and received", "Bytes on the wire per committed payment", "Storage writes"} {
		if !strings.Contains(dom, title) {
			t.Errorf("no chart %q of the nodes' insides", title)
		}
	}
	if inside < 7 {
		t.Errorf("%d charts of the nodes' insides, want 7", inside)
	}
	// The cost and the profiles' top functions, as tables.
	for _, id := range []string{`<table id="cost">`, `<table id="cpu-top">`, `<table id="alloc-top">`, "node_cpu_us_per_tx", "wire_bytes_per_tx"} {
		if !strings.Contains(dom, id) {
			t.Errorf("the report has no %s", id)
		}
	}
	wantCharts += inside
	m := regexp.MustCompile(`data-charts="(\d+)"`).FindStringSubmatch(dom)
	if m == nil || m[1] != strconv.Itoa(wantCharts) || wantCharts < 11 {
		t.Errorf("charts drawn %v, want %d (with the knee chart and %d inside)", m, wantCharts, inside)
	}
	for _, p := range regexp.MustCompile(`data-points="(\d+)"`).FindAllStringSubmatch(dom, -1) {
		if p[1] == "0" {
			t.Error("a chart has no data")
		}
	}
	if !strings.Contains(dom, `<table id="events">`) || !strings.Contains(dom, "node_down") {
		t.Error("the event is not in the report")
	}
	if c := strings.Count(dom, "<canvas"); c < wantCharts {
		t.Errorf("%d canvases for %d charts", c, wantCharts)
	}
	_, file, _, _ := runtime.Caller(0)
	art := filepath.Join(filepath.Dir(file), "..", "..", "artifacts")
	os.MkdirAll(art, 0o755)
	shot := filepath.Join(art, "report.png")
	if err := exec.Command(browser, chromiumArgs(t, "--window-size=1200,2600", "--screenshot="+shot, "file://"+page)...).Run(); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Fatalf("screenshot missing or empty: %v", err)
	}
}
