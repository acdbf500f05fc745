// Package measuretest holds what every integration test asserts of a
// finished run's counts.
package measuretest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
)

// Identities fails t unless the counts keep the identities of
// docs/metrics.md (offered = sent + unsent; sent = accepted + rejected +
// unacked; accepted + unacked = committed + committed_failed + expired).
func Identities(t testing.TB, c measure.Counts) {
	t.Helper()
	if err := c.Check(); err != nil {
		t.Errorf("the counts break docs/metrics.md's identities: %v", err)
	}
}

// Result reads dir's result.json into v (a struct of the parts a test
// reads) and checks its summary's identities.
func Result(t testing.TB, dir string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct{ Summary measure.Counts }
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	Identities(t, sum.Summary)
}

// MeanP50 is the mean over the seconds in (from, to] of one latency's p50,
// as of (each second's figures, read from a result's series), for a test
// that compares a stretch under a fault with one before it.
func MeanP50[S any](series []S, at func(S) float64, of func(S) measure.Percentiles, from, to float64) float64 {
	var sum, k float64
	for _, x := range series {
		if p := of(x); at(x) > from && at(x) <= to && p.Count > 0 {
			sum, k = sum+p.P50, k+1
		}
	}
	return sum / max(k, 1)
}

// LoadedFor is the last t of the run's series on disk in dir (0 before
// the first second is written): how far a running load has got.
func LoadedFor(dir string) float64 {
	b, err := os.ReadFile(filepath.Join(dir, "series.jsonl"))
	if err != nil {
		return 0
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var sec struct {
			T float64 `json:"t"`
		}
		if json.Unmarshal(lines[i], &sec) == nil {
			return sec.T
		}
	}
	return 0
}
