// Package measuretest holds what every integration test asserts of a
// finished run's counts.
package measuretest

import (
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
