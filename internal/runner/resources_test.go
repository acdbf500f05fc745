package runner_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
)

// Resources no candidate list knew, judged from the kind's declared
// capacities and the processes' own limits, each against an independent
// reading: one validator whose blocks hold 512 KiB (under the 1 MiB evidence bound CometBFT defaults to), offered twice what they
// carry in 4 KB payments, names block bytes with the blocks' fill as the
// node's RPC gives it; the same validator restarted in an envelope of a
// tenth of a core (net up --node-cpu's cgroup) names its CPU limit, with
// the throttled time its cgroup counted.
func TestResourcesNoCandidateKnew(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator")
	}
	g := chain.Genesis{Seed: "resources", Accounts: 2000, Balance: 1_000_000_000}
	st := testnet.DefaultSettings()
	st.MaxBlockBytes = 1 << 19
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 1, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "resources-chain", Genesis: g, Settings: st, Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downFresh(n) })

	t.Run("block bytes", func(t *testing.T) {
		sc := loadScenario(filepath.Join(t.TempDir(), "bytes"), 1000, 8*time.Second, 1000)
		sc.Target.NetHome = n.Home
		sc.Workload.Mode, sc.Workload.Window, sc.Workload.Padding = "presigned", 8, 4000
		res, err := run(t, context.Background(), sc)
		if res == nil {
			t.Fatalf("no result: %v", err)
		}
		j := res.Judge()
		t.Logf("%s", res.Verdict())
		if j.Limit.Resource != report.BlockBytes || j.Outcome == report.OutcomeKeptUp {
			t.Fatalf("limit %s/%s (%s), want block bytes", j.Limit.Cause, j.Limit.Resource, j.Limit.Phrase())
		}
		// The blocks' fill as the node serves them, over the steady window.
		mean := steadyBytes(t, n.Nodes[0].RPC, res.Chain.SteadyFirstHeight, res.Chain.SteadyLastHeight)
		if u := mean / float64(1<<19); math.Abs(u-j.Limit.Utilisation) > 0.01 || u < report.T.Full {
			t.Errorf("the node's blocks held %.0f bytes on average (%.3f of 512 KiB); the judgement says %.3f", mean, u, j.Limit.Utilisation)
		}
		if j.Limit.Capacity != 1<<19 {
			t.Errorf("capacity %.0f, want the consensus max_bytes %d", j.Limit.Capacity, 1<<19)
		}
		// Judged once: the result on disk holds the judgement the run printed.
		back, err := report.ReadResult(sc.Out)
		if err != nil || back.Judgement == nil || back.Verdict() != res.Verdict() {
			t.Errorf("the stored judgement: %v, %+v", err, back)
		}
	})

	t.Run("cpu limit", func(t *testing.T) {
		// net up --node-cpu node0=0.1's path: the node's own cgroup,
		// which a restart goes back into.
		if err := testnet.EnvelopesOffered(); err != nil {
			t.Skip(err)
		}
		envs, err := testnet.ParseEnvelopes("node0=100m", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := n.ApplyEnvelopes(envs); err != nil {
			t.Fatal(err)
		}
		h, err := testnet.Height(context.Background(), n.Nodes[0].RPC)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Kill(0); err != nil {
			t.Fatal(err)
		}
		if err := n.Restart(0, ""); err != nil {
			t.Fatal(err)
		}
		if err := n.WaitForBlocks(context.Background(), h+2, time.Minute); err != nil {
			t.Fatal(err)
		}
		group := n.Nodes[0].Envelope.Groups[0]
		if b, _ := os.ReadFile(filepath.Join(group, "cgroup.procs")); !strings.Contains("\n"+string(b), fmt.Sprintf("\n%d\n", n.Nodes[0].PID)) {
			t.Fatalf("restarted node0 (pid %d) is not in its envelope %s: %q", n.Nodes[0].PID, group, b)
		}
		per0, thr0 := throttled(t, group)
		sc := loadScenario(filepath.Join(t.TempDir(), "cpu"), 3000, 8*time.Second, 1000)
		sc.Target.NetHome = n.Home
		sc.Workload.Mode, sc.Workload.Window, sc.Workload.SendersOffset = "presigned", 8, 1000
		res, err := run(t, context.Background(), sc)
		if res == nil {
			t.Fatalf("no result: %v", err)
		}
		per1, thr1 := throttled(t, group)
		j := res.Judge()
		t.Logf("%s", res.Verdict())
		if j.Limit.Cause != report.CauseCPULimit || j.Limit.Resource != n.Nodes[0].Name+".cpu_limit" {
			t.Fatalf("limit %s/%s (%s), want node0's CPU limit", j.Limit.Cause, j.Limit.Resource, j.Limit.Phrase())
		}
		if math.Abs(j.Limit.Capacity-0.1) > 1e-9 {
			t.Errorf("limit %.3f cores, want the quota's 0.1", j.Limit.Capacity)
		}
		// Throttled in most of its periods, by the judgement (the steady
		// window) and by the cgroup's own counts over the run.
		share := (thr1 - thr0) / math.Max(1, per1-per0)
		if s := j.Limit.Saturation; s < report.T.Throttled || s > 1 || share < report.T.Throttled {
			t.Errorf("throttled in %.2f of its periods by the judgement, %.2f by the cgroup (%.0f of %.0f)", s, share, thr1-thr0, per1-per0)
		}
	})
}

// steadyBytes is the mean bytes of the transactions in blocks [from, to].
func steadyBytes(t *testing.T, rpc string, from, to int64) float64 {
	t.Helper()
	c, err := rpchttp.New(rpc, "/websocket")
	if err != nil {
		t.Fatal(err)
	}
	var sum, blocks float64
	for h := from; h <= to; h++ {
		b, err := c.Block(context.Background(), &h)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		for _, tx := range b.Block.Txs {
			sum += float64(len(tx))
		}
		blocks++
	}
	return sum / math.Max(1, blocks)
}

// throttled is a group's periods and throttled periods, from its cpu.stat.
func throttled(t *testing.T, dir string) (periods, throttled float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, " ")
		n, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled
}
