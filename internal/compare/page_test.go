package compare

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// The compare page draws the two sets' committed rate and p99 commit over
// each other, in headless Chromium with no script error, and lists the
// primary figures first (issue 70).
func TestComparePageDrawsTheSetsOverEachOther(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not installed (test.sh installs Debian's chromium package)")
	}
	run := func(tps int64, p99 float64) *report.Result {
		r := &report.Result{Status: "complete"}
		r.Summary.CommittedTPS, r.Summary.Steady.DurationS = float64(tps), 8
		r.Summary.LatencyMs.Commit.P99, r.Summary.LatencyMs.Commit.Count = p99, 8*tps
		for i := 1; i <= 8; i++ {
			r.Series = append(r.Series, report.Second{T: float64(i), Phase: "steady", Counts: measure.Counts{Committed: tps + int64(i%3)},
				CommitMs: measure.Percentiles{Count: tps, P50: p99 / 2, P99: p99 + float64(i)}})
		}
		return r
	}
	c := Run([]Set{{Name: "a", Runs: []*report.Result{run(500, 900)}}, {Name: "b", Runs: []*report.Result{run(400, 1200)}}})
	page := filepath.Join(t.TempDir(), "compare.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=3000", "--dump-dom", "file://"+page).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	if !strings.Contains(dom, `data-charts="2"`) || strings.Contains(dom, "data-errors") {
		t.Errorf("the page drew %q charts, errors %q", regexp.MustCompile(`data-charts="\d+"`).FindString(dom), regexp.MustCompile(`data-errors="\d+"`).FindString(dom))
	}
	if n := len(regexp.MustCompile(`data-points="16"`).FindAllString(dom, -1)); n != 2 {
		t.Errorf("%d charts with both sets' 8 seconds each, want 2", n)
	}
	rows := regexp.MustCompile(`<tr><td>([^<]+)</td>`).FindAllStringSubmatch(dom, -1)
	if len(rows) < 3 || !strings.HasPrefix(rows[0][1], "committed TPS") || !strings.HasPrefix(rows[1][1], "p50 commit") {
		t.Errorf("rows %v: want the primary figures first", rows)
	}
}
