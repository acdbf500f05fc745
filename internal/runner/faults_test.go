package runner_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// downFresh stops the network as net.json now says: a fault may have
// restarted a node under a new pid.
func downFresh(n *testnet.Net) {
	if fresh, err := testnet.Load(n.Home); err == nil {
		n = fresh
	}
	_ = n.Down()
}

// faultRun runs rate payments per second from senders accounts for d on
// 4 validators linked by topology, with one fault, and checks the run as
// checkFaultRun does.
func faultRun(t *testing.T, seed, topology string, rate float64, d time.Duration, senders int, fault string, slack int64) (*report.Result, report.FaultEffect) {
	t.Helper()
	g := chain.Genesis{Seed: seed, Accounts: 1000, Balance: 1_000_000_000}
	n := startLinkedNet(t, g, topology)
	sc := loadScenario(filepath.Join(t.TempDir(), "out"), rate, d, senders)
	sc.Target.NetHome = n.Home
	sc.Faults = faults(t, fault)
	res, err := run(t, context.Background(), sc)
	return res, checkFaultRun(t, n, res, err, senderSet(g, senders), slack)
}

func faults(t *testing.T, specs ...string) []scenario.Fault {
	var out []scenario.Fault
	for _, s := range specs {
		f, err := scenario.ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// checkFaultRun holds what every run with faults must show: exit 0, the
// fault and its undoing as events, nothing lost, the count equal to the
// blocks' (the blocks may hold up to slack more of ours), and a clean net
// check.
func checkFaultRun(t *testing.T, n *testnet.Net, res *report.Result, err error, senders map[chain.Address]bool, slack int64) report.FaultEffect {
	t.Helper()
	if err != nil {
		t.Fatalf("run with a fault: %v", err)
	}
	s := res.Summary
	if len(s.Faults) != 1 {
		t.Fatalf("faults in the summary: %+v", s.Faults)
	}
	f := s.Faults[0]
	kinds := map[string]bool{}
	for _, e := range res.Events {
		kinds[e.Kind] = true
	}
	if !kinds["fault"] || !kinds["fault_end"] || f.Error != "" {
		t.Errorf("events %+v, fault %+v", res.Events, f)
	}
	if s.Lost != 0 || f.Lost != 0 {
		t.Errorf("%d payments lost", s.Lost)
	}
	if s.NetCheck == nil || !s.NetCheck.OK {
		t.Errorf("net check after the fault: %+v", s.NetCheck)
	}
	// A payment that expired and then committed anyway (a slowed node's
	// mempool) is a late commit: in the blocks, not in committed.
	ok, bad := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if d := ok - s.Committed - s.LateCommits; d < 0 || d > slack {
		t.Errorf("committed %d, blocks hold %d (expired %d, late commits %d, unacked %d, rejected %v, mismatches %v, resubmitted %d, re-signed %d, failed %v, blocks %d..%d; blocks failed %d)",
			s.Committed, ok, s.Expired, s.LateCommits, s.UnackedTotal, s.Rejected, s.Mismatches, s.Resubmitted, s.Resigned, s.Failed, res.Chain.FirstHeight, res.Chain.LastHeight, bad)
	}
	return f
}

// A validator of four crashed for 8 s: the run completes with exit 0, the
// report names the fault, the gap and the recovery, the validator comes
// back and catches up, and nothing is lost.
func TestCrashFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	_, f := faultRun(t, "crash-fault", "", 300, 30*time.Second, 300, "10s:crash:node1:8s", 0)
	// Never before its time, and held its 8 s (a loaded machine may act late).
	if f.StartS < 9.95 || f.EndS-f.StartS < 7.95 {
		t.Errorf("fault from %.1f to %.1f s, want from 10 s for 8 s", f.StartS, f.EndS)
	}
	if f.CaughtUpS == nil || *f.CaughtUpS < 0 {
		t.Errorf("the restarted validator did not catch up: %+v", f)
	}
	// The chain carried on and came back to 90% of its own rate before the
	// crash, within the run (a relation inside it, not a machine's rate).
	if f.RecoveryS < 0 || f.BeforeTPS <= 0 || f.AfterTPS <= 0 {
		t.Errorf("throughput before %.1f, after %.1f, recovery %.1f s at 300 offered", f.BeforeTPS, f.AfterTPS, f.RecoveryS)
	}
	if f.LongestGapS <= 0 {
		t.Errorf("no gap measured: %+v", f)
	}
}

// A partition of 2 of 4 validators halts the chain (neither side has two
// thirds); healed, it resumes, and every payment commits or expires.
func TestPartitionHaltsAndHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	res, f := faultRun(t, "partition", "loopback", 200, 35*time.Second, 300, "10s:partition:node0+node1:10s", 0)
	if f.LongestGapS < 9 || f.DuringTPS > f.BeforeTPS/4 {
		t.Errorf("the chain went on through a 2-of-4 partition: %+v", f)
	}
	if f.AfterTPS < 100 || f.RecoveryS < 0 {
		t.Errorf("the chain did not resume after healing: %+v", f)
	}
	// The rate cannot be back before a block is (issue 23, case 4).
	if f.FirstBlockS == nil || *f.FirstBlockS < 0 || f.RecoveryS < *f.FirstBlockS {
		t.Errorf("first block %v s, recovery %.2f s after the heal", f.FirstBlockS, f.RecoveryS)
	}
	if !strings.Contains(strings.Join(res.Summary.Warnings, ";"), "no block for") {
		t.Errorf("the halt is not among the warnings: %v", res.Summary.Warnings)
	}
	// DURING counts the blocks committed inside the fault: at most the one
	// the majority committed with messages in flight as the cut began
	// (issue 51: 484.7 tx/s from two blocks made before it; CI: 119.9 from
	// the backlog dated by the last commit). The headline names the halt,
	// not "kept up" or "machine busy".
	if f.DuringTPS > f.BeforeTPS/5 {
		t.Errorf("DURING %.1f tx/s while no block could be made (before %.1f)", f.DuringTPS, f.BeforeTPS)
	}
	if j := res.Judge(); j.Limit.Cause != report.CauseHalt {
		t.Errorf("limit %s (%s), want the halt: %s", j.Limit.Cause, j.Limit.Figures, res.Verdict())
	}
}

// A 1 Mbit/s cut on node3's links caps the traffic through them; the other
// links carry more. Round trips are measured before the load.
func TestBandwidthFaultCapsLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	// A node starved of bandwidth lags; payments it refuses as
	// sequence_too_high are counted rejected, and now and then (0 to 2 in
	// about 14,000, in 2 of 6 runs on a busy machine) the blocks hold that
	// many more of ours than were counted: an open discrepancy (see the
	// closing note of issue 12), allowed here and nowhere else.
	res, _ := faultRun(t, "bandwidth", "lan", 1000, 15*time.Second, 600, "1s:bandwidth:node3:1mbit", 3)
	if len(res.Summary.Links) != 6 {
		t.Fatalf("links: %+v", res.Summary.Links)
	}
	const limit = 2 * 125_000 // bytes/s, both directions together
	var other, capped, busiest float64
	var rtts []float64
	for _, l := range res.Summary.Links {
		if l.MeasuredRTTMs <= 0 {
			t.Errorf("%s: round trip on a lan link measured %.2f ms", l.Name, l.MeasuredRTTMs)
		}
		rtts = append(rtts, l.MeasuredRTTMs)
		if strings.HasSuffix(l.Name, "node3") {
			// Toxiproxy's bandwidth toxic repays an overslept delay with a
			// burst, so a busy machine sees busier seconds (1.83x the cap in
			// one second with other test packages running beside this one);
			// the mean holds, and bounds the link.
			capped, busiest = max(capped, l.BytesPerS), max(busiest, l.MaxBytesPerS)
			if l.BytesPerS > 1.05*limit || l.MaxBytesPerS > 2.2*limit {
				t.Errorf("%s at 1mbit carried %.0f bytes/s on average, %.0f in its busiest second", l.Name, l.BytesPerS, l.MaxBytesPerS)
			}
		} else {
			other = max(other, l.BytesPerS)
		}
	}
	// Most lan round trips are small; on a machine busy compiling (a cold
	// CI run) one of six measured 11.5 ms, so the median is what is bound.
	slices.Sort(rtts)
	// With the other packages running beside this one, the median itself
	// reached 5.9 ms (CI, issue 51's session): a lan link is still well
	// under a wan link's tens of milliseconds.
	if m := rtts[len(rtts)/2]; m > 10 {
		t.Errorf("lan links: median round trip %.2f ms of %v", m, rtts)
	}
	t.Logf("capped links: at most %.0f bytes/s on average, %.0f in a busiest second; the others: up to %.0f", capped, busiest, other)
	if capped < 0.7*limit {
		t.Errorf("the capped links carried at most %.0f bytes/s: the cap did not bind", capped)
	}
	if other < 1.1*capped {
		t.Errorf("the uncapped links carried at most %.0f bytes/s, the capped %.0f: the cap was not tested", other, capped)
	}
}
