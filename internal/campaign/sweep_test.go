package campaign_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// An envelope sweep on one built-in validator: a fresh network per
// envelope, each node in a cgroup of its limit. Eight times the CPU
// sustains more (the same steps from the same start), and at each
// envelope the busiest node's CPU, read from /proc, stays within its
// limit (issue 68).
func TestEnvelopeSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two validators")
	}
	if err := testnet.EnvelopesOffered(); err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "sweep")
	var table strings.Builder
	sc := scenario.Default()
	sc.Network.Validators, sc.Network.Accounts = 1, 2000
	sc.Workload.Mode, sc.Workload.Senders = "live", 1000
	sc.Out = out
	fm := campaign.FindMax{Objective: findmax.Objective{MinRatio: 0.9, MaxGrowth: 1}, Describe: "committed/offered >= 0.90",
		Search: findmax.Options{Start: 100, Factor: 2, Tolerance: 0.1, MaxRate: 100000, MaxSteps: 3},
		Step:   5 * time.Second, Warm: time.Second, Log: testLog{t}, Output: &table,
		Run: runner.Options{Kinds: all.Registry(), Binary: testbin.Path(t), Command: "find-max", Log: io.Discard}}
	if err := (campaign.Sweep{FindMax: fm, Resource: "cpu", Values: []string{"50m", "400m"}}).Do(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	t.Logf("the sweep:\n%s", table.String())
	b, err := os.ReadFile(filepath.Join(out, campaign.SweepFile))
	if err != nil {
		t.Fatal(err)
	}
	var s campaign.SweepSummary
	if err := json.Unmarshal(b, &s); err != nil || len(s.Rows) != 2 {
		t.Fatalf("%s: %v, %d rows, want 2", campaign.SweepFile, err, len(s.Rows))
	}
	small, big := s.Rows[0], s.Rows[1]
	if small.Sustainable <= 0 || big.Sustainable <= small.Sustainable {
		t.Errorf("50m sustained %.0f tx/s, 400m %.0f: want more at eight times the CPU", small.Sustainable, big.Sustainable)
	}
	for _, r := range s.Rows {
		limit := map[string]float64{"50m": 5, "400m": 40}[r.Envelope]
		// /proc counts CPU in ticks of 10 ms: a second's reading is
		// within one tick (1% of a core) each side, their mean too.
		if r.BusiestNodeCPU <= 0 || r.BusiestNodeCPU > limit+2 {
			t.Errorf("at %s the busiest node used %.1f%% of a core, want at most %.0f%%", r.Envelope, r.BusiestNodeCPU, limit)
		}
		if _, err := os.Stat(filepath.Join(out, r.Dir, "find-max.json")); err != nil {
			t.Errorf("envelope %s: its search: %v", r.Envelope, err)
		}
	}
	if !strings.Contains(s.Conclusion, "0.05 cores: ") {
		t.Errorf("conclusion %q", s.Conclusion)
	}
}
