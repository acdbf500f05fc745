// Package measuretest holds what every integration test asserts of a
// finished run's counts.
package measuretest

import (
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
