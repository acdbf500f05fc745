package segment

import (
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// A segment killed between sending payments and recording their answers
// leaves a series whose sent exceeds its answers: they count as unacked
// (they may have reached the system), so the identities hold (CI saw
// "sent 1505 != accepted 1502 + rejected 0 + unacked 0").
func TestDeadSegmentSentWithoutAnswers(t *testing.T) {
	r := &report.Result{Series: []report.Second{
		{T: 1, Phase: "steady", Counts: measure.Counts{Offered: 100, Sent: 100, Accepted: 100, Committed: 90}},
		{T: 2, Phase: "steady", Counts: measure.Counts{Offered: 100, Sent: 100, Accepted: 97, Committed: 95}},
	}}
	deadCounts(r)
	c := r.Summary.Counts
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.Unacked["no answer when its segment died"] != 3 || c.InFlightEnd != 15 {
		t.Errorf("unacked %v, in flight at the end %d; expected 3 without an answer and 15 in flight", c.Unacked, c.InFlightEnd)
	}
}
