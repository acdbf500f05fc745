package report

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The verdict corpus: result directories of real runs, each with the true
// outcome and cause written beside it (testdata/verdicts/*/cause.txt:
// "outcome:", "cause:", how the run was made, and the headline tpslab
// gave it before issue 51). Every wrong headline found becomes one more
// entry; the judgement must name each one's true cause.
func TestVerdictCorpus(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "verdicts", "*", "cause.txt"))
	if len(dirs) < 8 {
		t.Fatalf("the corpus holds %d situations, expected at least 8", len(dirs))
	}
	for _, p := range dirs {
		dir := filepath.Dir(p)
		want := readCause(t, p)
		r, err := ReadResult(dir)
		if err != nil {
			t.Fatal(err)
		}
		// This version's judgement, not the one the run stored.
		j := r.Seal("test")
		v := r.Verdict()
		t.Logf("%s: %s", filepath.Base(dir), v)
		if string(j.Outcome) != want["outcome"] || string(j.Limit.Cause) != want["cause"] {
			t.Errorf("%s (%s): outcome %s, cause %q; want %s, %q\n  headline: %s\n  limit: %s",
				filepath.Base(dir), want["situation"], j.Outcome, j.Limit.Cause, want["outcome"], want["cause"], v, j.Limit.Figures)
		}
		if res := want["resource"]; res != "" && j.Limit.Resource != res {
			t.Errorf("%s: the limit's resource %q, want %q (%s)", filepath.Base(dir), j.Limit.Resource, res, j.Limit.Phrase())
		}
		// No candidate set aside is the true cause: each "not ..." line
		// must name another resource than the limit.
		for _, a := range j.SetAside() {
			for _, c := range []string{want["cause"], want["resource"]} {
				if c != "" && strings.HasPrefix(a, "not "+strings.ReplaceAll(c, "_", " ")+":") {
					t.Errorf("%s: the true cause set aside: %s", filepath.Base(dir), a)
				}
			}
		}
		if h := want["headline contains"]; h != "" && !strings.Contains(v, h) {
			t.Errorf("%s: headline %q does not contain %q", filepath.Base(dir), v, h)
		}
		for _, w := range r.Summary.Warnings {
			if contradicts(j, w) {
				t.Errorf("%s: the warning %q contradicts the headline's %s", filepath.Base(dir), w, j.Outcome)
			}
		}
	}
}

// contradicts: a warning that says the generator limited a run whose
// judgement names another cause, or the reverse.
func contradicts(j Judgement, w string) bool {
	genWarn := strings.HasPrefix(w, "the load generator, not the system under test, was limiting")
	gen := j.Limit.Cause == CauseGenerator || j.Limit.Cause == CauseLate
	return genWarn && j.Outcome != OutcomeKeptUp && !gen
}

// readCause reads a corpus entry's "key: value" lines.
func readCause(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if m["outcome"] == "" {
		t.Fatalf("%s: no outcome line", path)
	}
	return m
}
