package report

import (
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
)

// A rare row takes a zero row's place instead of making the screen taller.
func TestRareRowsTakeZeroRowsPlaces(t *testing.T) {
	p := measure.Percentiles{Count: 10, P50: 1, P90: 2, P99: 3, Max: 4}
	s := &Summary{LatencyMs: Latency{ScheduleLag: p, Ack: p, Gossiped: p, Proposed: p, Commit: p}}
	s.Offered, s.Sent, s.Committed, s.FailedTotal = 10, 10, 9, 1
	var b strings.Builder
	printCountsAndLatency(&b, s)
	out := b.String()
	if lines := strings.Count(out, "\n"); lines != 6 || !strings.Contains(out, "failed in block") || strings.Contains(out, "rejected") || !strings.Contains(out, "expired") {
		t.Errorf("%d lines, expected the header and 5 rows, failed in block in rejected's place:\n%s", lines, out)
	}
	s.RejectedTotal = 2
	b.Reset()
	printCountsAndLatency(&b, s)
	if out := b.String(); strings.Contains(out, "expired") || !strings.Contains(out, "rejected") {
		t.Errorf("a count that is not zero stays, a zero one goes first:\n%s", out)
	}
}
