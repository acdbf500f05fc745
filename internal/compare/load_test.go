package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// writeRun writes a finished run with n steady seconds at tps.
func writeRun(t *testing.T, dir string, n int, tps float64) {
	t.Helper()
	w, err := report.NewWriter(dir, &report.Result{SchemaVersion: report.SchemaVersion, Status: "running", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		w.Add(report.Second{T: float64(i), Phase: "steady", Counts: measure.Counts{Committed: int64(tps)}}, nil)
	}
	w.Update(func(r *report.Result) {
		r.Status, r.EndedBecause = "complete", "completed"
		r.Summary.Steady.DurationS = float64(n)
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A run whose series is gone or damaged is refused with one line naming
// the file; the intact side loads as before.
func TestLoadRefusesAMissingSeries(t *testing.T) {
	base, other := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	writeRun(t, base, 10, 1000)
	writeRun(t, other, 10, 1000)
	if _, err := Load(other); err != nil {
		t.Fatalf("an intact run: %v", err)
	}
	os.Remove(filepath.Join(other, "series.jsonl"))
	_, err := Load(other)
	if err == nil || !strings.Contains(err.Error(), "series.jsonl: missing") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a run without series.jsonl: %v, want one line naming it", err)
	}
	os.WriteFile(filepath.Join(other, "series.jsonl"), []byte("{\"t\":1,\"phase\":\"warmup\"}\n"), 0o644)
	if _, err := Load(other); err == nil || !strings.Contains(err.Error(), "no steady second") {
		t.Errorf("a series without steady seconds: %v", err)
	}
	s, err := Load(base)
	if err != nil || len(s.Runs[0].Series) != 10 {
		t.Errorf("the intact side: %v", err)
	}
}
