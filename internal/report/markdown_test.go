package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The markdown summary is a bold verdict and a two-column table: every
// table line starts and ends with a pipe and has two cells.
func TestMarkdownSummaryIsATable(t *testing.T) {
	r := &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now(), Network: &Network{Kind: "builtin", Validators: 4}}
	r.Summary.Offered, r.Summary.Sent, r.Summary.Committed = 1000, 1000, 990
	r.Summary.CommittedTPS, r.Summary.Steady.DurationS = 99, 10
	var b bytes.Buffer
	Markdown(&b, r)
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "**sustained 99 committed tx/s") || !strings.HasSuffix(lines[0], "**") {
		t.Errorf("verdict line %q", lines[0])
	}
	rows := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		rows++
		if !strings.HasSuffix(l, "|") || strings.Count(l, "|") != 3 {
			t.Errorf("row %q: want two cells", l)
		}
	}
	if rows < 5 || !strings.Contains(b.String(), "|---|---:|") {
		t.Errorf("no table:\n%s", b.String())
	}
}
