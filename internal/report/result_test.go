package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

func TestParseResultRefusesWhatItCannotTrust(t *testing.T) {
	for body, want := range map[string]string{
		`{"schema_version": 99, "status": "complete"}`: "schema_version 99, expected 1..2",
		`{"schema_version": null}`:                     "no schema_version",
		`{}`:                                           "no schema_version",
		`[1,2]`:                                        "not valid JSON",
		`{"schema_version": "2"}`:                      "expected an integer",
		`{"schema_version": 2, "status": "done"}`:       `status "done"`,
		`{"schema_version": 2, "status": "complete"}`:   "no started_at",
		`{"schema_version": 2, "status": "complete", "`: "not valid JSON",
	} {
		if _, err := ParseResult([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// A run killed mid-write leaves a cut last line: it is left out; a bad line
// in the middle is an error.
func TestReadResultToleratesACutLastLine(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, &Result{SchemaVersion: SchemaVersion, Status: "running", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(Second{T: 1}, nil, nil)
	w.Add(Second{T: 2}, nil, nil)
	w.Close()
	f, _ := os.OpenFile(filepath.Join(dir, "series.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte(`{"t":3,"pha`))
	f.Close()
	r, err := ReadResult(dir)
	if err != nil || len(r.Series) != 2 {
		t.Fatalf("%v, %d seconds", err, len(r.Series))
	}
	if r.Incomplete() != "interrupted, no final summary" || !strings.HasPrefix(r.Verdict(), "incomplete") {
		t.Errorf("a running result from a dead process: %q / %q", r.Incomplete(), r.Verdict())
	}
	os.WriteFile(filepath.Join(dir, "series.jsonl"), []byte("{\"t\":1}\nnot json\n{\"t\":3}\n"), 0o644)
	if _, err := ReadResult(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad middle line: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".reserve")); err == nil {
		t.Error("the space reserve is left behind after Close")
	}
}

// A line too long to be tpslab's is refused naming the file and line.
func TestOverlongSeriesLineNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(Second{T: 1}, nil, nil)
	w.Close()
	f, _ := os.OpenFile(filepath.Join(dir, "series.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.Write(append([]byte(`{"t":2,"phase":"`), bytes.Repeat([]byte("x"), maxLine+1)...))
	f.Write([]byte("\"}\n"))
	f.Close()
	_, err = ReadResult(dir)
	if err == nil || !strings.Contains(err.Error(), "series.jsonl: line 2 is longer than 64 MiB") {
		t.Errorf("%v", err)
	}
}

func FuzzParseResult(f *testing.F) {
	f.Add([]byte(`{"schema_version":2,"status":"complete","started_at":"2026-01-01T00:00:00Z","summary":{"committed":5}}`))
	f.Add([]byte(`{"schema_version":1,"status":"running","started_at":"2026-01-01T00:00:00Z","series":[{"t":1}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseResult(b)
		if err == nil {
			_ = r.Verdict()
			_ = r.Incomplete()
		}
	})
}

// A fault's effect with a first block and a catch-up time (pointers in the
// result) renders: the template compares their values.
func TestHTMLRendersFaultEffects(t *testing.T) {
	first, caught, none := 1.5, 4.2, -1.0
	for _, fb := range []*float64{&first, &none, nil} {
		r := &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now(),
			Summary: Summary{Faults: []FaultEffect{{Fault: "5s:crash:node3:4s", StartS: 5, EndS: 9, FirstBlockS: fb, CaughtUpS: &caught}}}}
		var b strings.Builder
		if err := WriteHTML(&b, r); err != nil {
			t.Fatalf("first block %v: %v", fb, err)
		}
		if !strings.Contains(b.String(), "5s:crash:node3:4s") || !strings.Contains(b.String(), "4.2") {
			t.Errorf("first block %v: the fault's row is missing", fb)
		}
	}
}

// A mix's kinds get a row each, in the text summary and the HTML report,
// with their commit latency.
func TestByKindTableRenders(t *testing.T) {
	r := &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now(),
		Summary: Summary{ByKind: map[string]KindFigures{
			"send":       {Sent: 70, Committed: 69, CommittedTPS: 6.9, CommitMs: measure.Percentiles{Count: 69, P50: 412.5, P99: 880.1}},
			"multi_send": {Sent: 20, Committed: 20, CommittedTPS: 2, CommitMs: measure.Percentiles{Count: 20, P50: 433.3, P99: 901.7}},
		}}}
	var h, txt strings.Builder
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	PrintFullSummary(&txt, r)
	for _, want := range []string{"multi_send", "433.3", "901.7", "880.1"} {
		if !strings.Contains(h.String(), want) || !strings.Contains(txt.String(), want) {
			t.Errorf("%q missing: html has it %v, text %v", want, strings.Contains(h.String(), want), strings.Contains(txt.String(), want))
		}
	}
	if i, j := strings.Index(txt.String(), "multi_send"), strings.Index(txt.String(), "send  "); i < 0 || j < i {
		t.Errorf("kinds not in name order:\n%s", txt.String())
	}
}

// A threshold's actual value carries its metric's unit, written with or
// without spaces around the operator (docs/reports.md).
func TestThresholdActualHasItsUnit(t *testing.T) {
	for expr, want := range map[string]string{
		"committed_tps>=1000": "actual 1252 tx/s",
		"p99_commit <= 2s":    "actual 1252 ms",
		"reject_rate<1%":      "actual 12.52%", // a fraction, 0.1252
	} {
		actual := 1252.0
		if expr == "reject_rate<1%" {
			actual = 0.1252
		}
		if got := (ThresholdOutcome{Expr: expr, Actual: actual}).Actually(); got != want {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}
