package runner_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// abort_on_fail ends a 120 s run whose p99 bound is impossible within the
// warm-up, the grace and 5 s, with a complete result that says why and
// exit 1; a bound missed only while two of four validators are paused for
// 3 s (shorter than the grace) does not end the run (issue 56).
func abortOnFail(t *testing.T, n *testnet.Net) {
	sc := loadScenario(filepath.Join(t.TempDir(), "lost"), 100, 120*time.Second, 200)
	sc.Target.NetHome = n.Home
	sc.Thresholds = []string{"p99_commit<=1ms", "committed_tps>=1"}
	sc.AbortOnFail, sc.AbortGrace = true, scenario.Duration(5*time.Second)
	res, err := run(t, context.Background(), sc)
	if exitcode.Of(err) != exitcode.ThresholdsFailed || res == nil || res.Status != "complete" {
		t.Fatalf("an impossible bound: %v (want exit 1 and a complete result)", err)
	}
	t.Logf("ended_because: %s", res.EndedBecause)
	if !strings.HasPrefix(res.EndedBecause, "aborted: p99_commit ") || !strings.Contains(res.EndedBecause, " > 1 ms for ") {
		t.Errorf("ended_because %q, want aborted naming p99_commit", res.EndedBecause)
	}
	onDisk, err := report.ReadResult(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, s := range onDisk.Series {
		if s.Phase != "drain" {
			loaded++
		}
	}
	if limit := 2 + 5 + 5; loaded > limit {
		t.Errorf("the load lasted %d s, want at most %d (warm-up + grace + 5 s)", loaded, limit)
	}
	if len(res.Thresholds) != 2 || res.Thresholds[0].OK || !strings.HasPrefix(res.Thresholds[0].Note, "ended the load: ") || !res.Thresholds[1].OK {
		t.Errorf("thresholds %+v: want the p99 one failed, saying it ended the load, and the other held", res.Thresholds)
	}

	brief := loadScenario(filepath.Join(t.TempDir(), "brief"), 100, 16*time.Second, 200)
	brief.Target.NetHome = n.Home
	brief.Thresholds = []string{"p99_commit<=1500ms"}
	brief.AbortOnFail, brief.AbortGrace = true, scenario.Duration(8*time.Second)
	brief.Faults = faults(t, "6s:pause:node2:3s", "6s:pause:node3:3s")
	if res, _ = run(t, context.Background(), brief); res == nil {
		t.Fatal("no result")
	}
	if res, err = report.ReadResult(res.Dir); err != nil { // its series, from disk
		t.Fatal(err)
	}
	worst := 0.0
	for _, s := range res.Series {
		if s.Phase == "steady" {
			worst = max(worst, s.CommitMs.P99)
		}
	}
	t.Logf("a 3 s halt: worst second's p99 commit %.0f ms; ended_because %s", worst, res.EndedBecause)
	if worst <= 1500 {
		t.Errorf("no second's p99 passed 1500 ms: the halt did not happen")
	}
	if res.EndedBecause != "completed" {
		t.Errorf("a bound missed for less than the grace ended the run: %s", res.EndedBecause)
	}
}
