package report

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/tpslab/tpslab/internal/measure"
)

// The CSV has a column for every counter, read from the registry: a new
// counter appears without touching the export (unsent, invalid and late
// commits were missing when it listed them by hand).
func TestCSVHasEveryCounter(t *testing.T) {
	var s Second
	s.T, s.Phase = 1, "steady"
	s.Offered, s.Sent, s.Unsent, s.LateCommits = 10, 8, 2, 3
	s.Rejected = map[string]int64{"mempool_full": 4}
	s.InvalidSent = map[string]int64{"bad_signature": 5}
	var b bytes.Buffer
	if err := WriteCSV(&b, &Result{Series: []Second{s}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %v", rows, err)
	}
	col := map[string]string{}
	for i, h := range rows[0] {
		col[h] = rows[1][i]
	}
	for _, c := range measure.Counters {
		if _, ok := col[c.Name]; !ok {
			t.Errorf("no column %s", c.Name)
		}
	}
	for name, want := range map[string]string{"offered": "10", "unsent": "2", "late_commits": "3", "rejected": "4", "invalid_sent": "5", "rejected_mempool_full": "4", "phase": "steady"} {
		if col[name] != want {
			t.Errorf("%s: %q, want %s", name, col[name], want)
		}
	}
}
