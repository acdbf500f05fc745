package cli_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/measure/measuretest"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testbin"
)

// Two builds of the built-in node, one deliberately slower (every signature
// checked 101 times: -tags slowverify): ab names B worse with an interval
// that excludes zero and exits 1 (issue 27). Three pairs of 4 s loads: two
// give one degree of freedom, too few to resolve even -85% at the primary
// figures' family level (issue 51); the verdict's statistics (identical
// builds, drift, regressions) are unit tests on written results
// (internal/campaign TestABVerdicts).
func TestABNamesTheSlowerBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 loads on fresh networks")
	}
	bin, slow := testbin.Path(t), testbin.SlowVerify(t)
	ab := func(b string) (string, int) {
		out := filepath.Join(t.TempDir(), "ab")
		cmd := exec.Command(bin, "ab", "--binary-a", bin, "--binary-b", b, "--repeat", "3", "--validators", "1",
			"--rate", "800", "--duration", "4s", "--warmup", "1s", "--out", out, "--summary-format", "markdown")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("%s\n%s", stderr.String(), stdout.String())
		for _, side := range []string{"a", "b"} {
			reps, _ := filepath.Glob(filepath.Join(out, side, "rep-*", "result.json"))
			if len(reps) != 3 {
				t.Errorf("build %s: %d repetitions written, want 3", side, len(reps))
			}
			for _, rep := range reps {
				if r, err := report.ReadResult(filepath.Dir(rep)); err != nil {
					t.Error(err)
				} else {
					measuretest.Identities(t, r.Summary.Counts)
				}
			}
		}
		return stdout.String(), exitCode(err)
	}
	md, code := ab(slow)
	if code != 1 || !strings.Contains(md, "**B is slower than A: ") {
		t.Errorf("a slower build: exit %d, want 1 and a verdict naming B slower", code)
	}
	checkMarkdownTable(t, md)
}

// checkMarkdownTable asserts text holds a markdown table: a header row, a
// separator of the same width, and rows of that width, each line
// beginning and ending with a pipe.
func checkMarkdownTable(t *testing.T, text string) {
	t.Helper()
	var table []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		} else if len(table) > 0 {
			break
		}
	}
	if len(table) < 3 {
		t.Fatalf("no markdown table in:\n%s", text)
	}
	cells := func(l string) int { return strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") - 1 }
	w := cells(table[0])
	for i, l := range table {
		if !strings.HasSuffix(l, "|") || cells(l) != w {
			t.Errorf("row %d %q: %d cells, want %d, ending with a pipe", i, l, cells(l), w)
		}
	}
	for _, c := range strings.Split(strings.Trim(table[1], "|"), "|") {
		if strings.Trim(c, "-: ") != "" || !strings.Contains(c, "---") {
			t.Errorf("separator row %q", table[1])
		}
	}
}

// A history of 12 runs with a 20% drop planted at the 8th finds the change
// point there; noise alone finds none; a 13th run 20% below the rest is a
// regression (exit 1); show writes the trend with the change marked
// (issue 27).
func TestHistoryFindsThePlantedStep(t *testing.T) {
	dir := t.TempDir()
	tpslab := func(args ...string) (string, int) {
		stdout, stderr, code := tpslabIn(t, args...)
		if code == 2 {
			t.Fatalf("%v: %s", args, stderr)
		}
		return stdout, code
	}
	rng := rand.New(rand.NewSource(7))
	store := filepath.Join(dir, "history.jsonl")
	add := func(series string, i int, tps float64) {
		run := writeResult(t, filepath.Join(dir, fmt.Sprintf("%s-%02d", series, i)), "complete", 10, int64(10*tps))
		if _, code := tpslab("history", "add", run, "--store", store, "--series", series, "--label", fmt.Sprintf("c%02d", i)); code != 0 {
			t.Fatalf("history add: exit %d", code)
		}
	}
	for i := 1; i <= 12; i++ {
		noise := 1 + 0.02*rng.NormFloat64()
		step := 1.0
		if i >= 8 {
			step = 0.8
		}
		add("stepped", i, 1000*step*noise)
		add("flat", i, 1000*(1+0.02*rng.NormFloat64()))
	}
	out, code := tpslab("history", "check", "stepped", "--store", store, "--html", filepath.Join(dir, "trend.html"))
	if code != 0 || !strings.Contains(out, "change point at #8 (c08)") || strings.Count(out, "change point at") != 1 {
		t.Errorf("stepped: exit %d\n%s", code, out)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "trend.html"))
	if !bytes.Contains(page, []byte(`"index":7`)) || !bytes.Contains(page, []byte("uPlot")) {
		t.Errorf("the trend page does not mark the change point at entry 8")
	}
	out, code = tpslab("history", "check", "flat", "--store", store)
	if code != 0 || !strings.Contains(out, "change points: none") {
		t.Errorf("flat: exit %d\n%s", code, out)
	}
	add("flat", 13, 800)
	out, code = tpslab("history", "check", "flat", "--store", store, "--summary-format", "markdown")
	if code != 1 || !strings.Contains(out, "REGRESSION") {
		t.Errorf("a 20%% drop in the newest run: exit %d\n%s", code, out)
	}
	checkMarkdownTable(t, out)
	out, _ = tpslab("history", "show", "--store", store)
	if !strings.Contains(out, "stepped\t12 entries") || !strings.Contains(out, "flat\t13 entries") {
		t.Errorf("series list:\n%s", out)
	}
}
