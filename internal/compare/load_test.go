package compare

import (
	"fmt"
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
		w.Add(report.Second{T: float64(i), Phase: "steady", Counts: measure.Counts{Committed: int64(tps)}}, nil, nil)
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

// Runs that did not run their course (interrupted, halted, a full disk)
// are refused unless --allow-incomplete (issue 51: compare and history
// took them as complete).
func TestLoadRefusesRunsThatEndedEarly(t *testing.T) {
	for _, ended := range []string{"interrupted (stopped offering at 3.1 s; drained in 0.2 s)", "chain_halted: no block for 30 s", "disk_full: no space left on device"} {
		dir := filepath.Join(t.TempDir(), "run")
		writeRun(t, dir, 10, 1000)
		r, err := report.ReadResult(dir)
		if err != nil {
			t.Fatal(err)
		}
		r.EndedBecause = ended
		if err := report.WriteJSON(filepath.Join(dir, "result.json"), *r); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "--allow-incomplete") {
			t.Errorf("a run that ended %q: %v, want a refusal naming --allow-incomplete", ended, err)
		}
		if _, err := LoadWith(dir, true); err != nil {
			t.Errorf("a run that ended %q, allowed: %v", ended, err)
		}
	}
}

// Same-settings noise is not a difference: a change under the largest
// change between runs of one set is not called, and only the primary
// figures vote; runs offered different rates are said to differ.
func TestNoiseFloorAndSettings(t *testing.T) {
	a, b := tpsSet("A", 1000, 1080, 960), tpsSet("B", 1050, 1110, 1070) // +5%, within A's 12.5% spread
	rows := Compare(a, b)
	if r := rows[0]; r.Significant || r.NoiseFloorPct < 12 || !r.Primary {
		t.Errorf("a change within the sets' own spread: %+v", r)
	}
	if v := Verdict(a, b, rows); !strings.Contains(v, "no significant difference") {
		t.Errorf("verdict %q", v)
	}
	a, b = tpsSet("A", 1000, 1010, 990), tpsSet("B", 3000, 3030, 2970)
	for _, s := range []Set{a, b} {
		for _, r := range s.Runs {
			r.Summary.OfferedTPS = r.Summary.CommittedTPS
		}
	}
	if v := Verdict(a, b, Compare(a, b)); !strings.HasPrefix(v, "NOT LIKE FOR LIKE (offered 1000 vs 3000 tx/s)") || !strings.Contains(v, "B is faster") {
		t.Errorf("different offered rates: %q", v)
	}
	// Two networks' database URLs are where each listened, not a setting;
	// their pre-loaded state is one.
	for i, s := range []Set{a, b} {
		for _, r := range s.Runs {
			r.Summary.OfferedTPS = 1000
			r.Network = &report.Network{Kind: "ledger", Settings: map[string]any{"database_url": fmt.Sprintf("postgres://127.0.0.1:%d/ledger", 4000+i), "batch": 1},
				State: uint64(i) * 10_000_000}
		}
	}
	if d := Differ(a, b); d != "pre-loaded state 0 vs 10000000 accounts" {
		t.Errorf("two ledgers' differences: %q", d)
	}
	if f := noiseFloor(report.Defs(nil)[0], nil, tpsSet("A", 1000), tpsSet("B", 1060)); f != SingleRunFloorPct {
		t.Errorf("single runs: noise floor %.1f%%, want %.0f%%", f, SingleRunFloorPct)
	}
}

// A series cut short is refused, not compared as if whole (issue 52).
func TestLoadRefusesASeriesCutShort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, 26, 1000)
	p := filepath.Join(dir, "series.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(p, []byte(strings.Join(lines[:12], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a series of 12 of 26 steady seconds: %v", err)
	}
}

// Networks that differ are named by the settings that differ, not dumped.
func TestNetworksDifferBySetting(t *testing.T) {
	net := func(tc int64) *report.Result {
		return &report.Result{Network: &report.Network{Kind: "builtin", Validators: 4, Settings: map[string]any{"timeout_commit": tc, "mempool_size": 50000}}}
	}
	got := netDiffer(net(500_000_000), net(2_000_000_000))
	if len(got) != 1 || got[0] != "timeout_commit 500ms vs 2s" {
		t.Errorf("differences %q", got)
	}
	if got := netDiffer(net(500_000_000), net(500_000_000)); len(got) != 0 {
		t.Errorf("same networks differ: %q", got)
	}
}
