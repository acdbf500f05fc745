package runner_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/interrupt"
	"github.com/tpslab/tpslab/internal/measure/measuretest"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
)

// atLoad calls f once the run writing to out has been loading for d by
// its own clock: a line of its series.jsonl says t >= d.
func atLoad(t *testing.T, out string, d time.Duration, f func()) {
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if measuretest.LoadedFor(out) >= d.Seconds() {
				f()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("the run never loaded for %s", d)
	}()
}

func senderSet(g chain.Genesis, n int) map[chain.Address]bool {
	m := map[chain.Address]bool{}
	for _, k := range chain.DeriveKeys(g.Seed, n) {
		m[chain.AddressOf(k[32:])] = true
	}
	return m
}

func loadScenario(out string, rate float64, d time.Duration, senders int) scenario.Scenario {
	sc := scenario.Default()
	sc.Load.Rate = rate
	sc.Load.Duration = scenario.Duration(d)
	sc.Load.Warmup = scenario.Duration(2 * time.Second)
	sc.Workload.Mode = "live"
	sc.Workload.Senders = senders
	sc.Workload.Window = 4
	sc.Out = out
	return sc
}

// A chain that halts mid-run must be reported as halted: the printed rate
// covers the whole steady window, including the block-less tail, and the
// run says the chain stopped, with a non-zero exit. Sends to a dead
// endpoint are counted there, and the load moves to the live ones.
func TestHaltedChainIsReportedAsHalted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	g := chain.Genesis{Seed: "halt", Accounts: 1000, Balance: 1_000_000_000}
	n := startNet(t, g)
	senders := senderSet(g, 300)
	out := filepath.Join(t.TempDir(), "halt")
	sc := loadScenario(out, 250, 20*time.Second, 300)
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = n.RPCEndpoints()[:3] // as a user would: three of the four
	sc.Load.Drain = scenario.Duration(3 * time.Second)
	sc.CommitTimeout = scenario.Duration(time.Minute) // so the run completes: the halt is its finding
	atLoad(t, out, 5*time.Second, func() { n.Kill(2) })
	atLoad(t, out, 8*time.Second, func() { n.Kill(3) })
	res, err := run(t, context.Background(), sc)
	if res == nil {
		t.Fatal(err)
	}
	s := res.Summary
	if exitcode.Of(err) != exitcode.TargetFailed || !strings.Contains(err.Error(), "stopped committing") {
		t.Errorf("exit %d (%v), want 3 saying the chain stopped committing", exitcode.Of(err), err)
	}
	if s.Halted == "" || len(s.Stalls) == 0 || !s.Stalls[len(s.Stalls)-1].Ongoing {
		t.Errorf("no halt reported: halted %q, stalls %+v", s.Halted, s.Stalls)
	}
	if !strings.Contains(res.Verdict(), "stopped committing") {
		t.Errorf("verdict %q does not say the chain stopped", res.Verdict())
	}
	// The truth, read from the blocks: our code-0 payments in the steady
	// window's blocks over the whole steady window.
	steadyOK, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.SteadyFirstHeight, res.Chain.SteadyLastHeight, senders)
	truth := float64(steadyOK) / s.Steady.DurationS
	if steadyOK != s.Steady.Committed {
		t.Errorf("steady committed %d, blocks hold %d", s.Steady.Committed, steadyOK)
	}
	if s.CommittedTPS > 1.2*truth {
		t.Errorf("committed_tps %.1f, but the steady window committed %d in %.0f s (%.1f tx/s): the halted tail is not counted", s.CommittedTPS, steadyOK, s.Steady.DurationS, truth)
	}
	allOK, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if allOK != s.Committed {
		t.Errorf("committed %d, blocks %d..%d hold %d", s.Committed, res.Chain.FirstHeight, res.Chain.LastHeight, allOK)
	}
	dead := res.Endpoints[2]
	if dead.Up || dead.TransportErrors == 0 || dead.DownS < 5 {
		t.Errorf("the dead endpoint is not reported as such: %+v", dead)
	}
	for _, e := range res.Endpoints[:2] {
		if e.Sent <= dead.Sent {
			t.Errorf("load did not move off the dead endpoint: %+v vs %+v", e, dead)
		}
	}

	// A network with two of its four nodes down is refused before any load.
	sc2 := loadScenario(filepath.Join(t.TempDir(), "refused"), 100, 5*time.Second, 10)
	sc2.Target.NetHome = n.Home
	refused, err := run(t, context.Background(), sc2)
	if exitcode.Of(err) != exitcode.TargetFailed || !strings.Contains(err.Error(), "2 of 4 nodes are not running (node2, node3)") {
		t.Errorf("a half-dead network was not refused: %v", err)
	}
	if refused != nil && (refused.Summary.Offered != 0 || refused.Summary.Sent != 0) {
		t.Errorf("the refusal came after load: offered %d, sent %d", refused.Summary.Offered, refused.Summary.Sent)
	}

	// Bring them back; halt the chain again with a short commit_timeout:
	// the run ends early, saying the chain halted.
	for _, i := range []int{2, 3} {
		if err := n.Restart(i, testbin.Path(t)); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := testnet.Height(context.Background(), n.Nodes[0].RPC)
	if err := n.WaitForBlocks(context.Background(), h+2, time.Minute); err != nil {
		t.Fatal(err)
	}
	out3 := filepath.Join(t.TempDir(), "halt-early")
	sc3 := loadScenario(out3, 200, 40*time.Second, 300)
	sc3.Target.NetHome = n.Home
	sc3.CommitTimeout = scenario.Duration(5 * time.Second)
	atLoad(t, out3, 4*time.Second, func() { n.Kill(1); n.Kill(2) })
	res, err = run(t, context.Background(), sc3)
	if res == nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.EndedBecause, "chain_halted: no block for") || exitcode.Of(err) != exitcode.TargetFailed {
		t.Errorf("ended %q, exit %d: want chain_halted and exit 3", res.EndedBecause, exitcode.Of(err))
	}
	// Ended early by the run's own clock: before the 40 s it planned.
	if ss := readSeries(t, out3); len(ss) == 0 || ss[len(ss)-1].T >= 40 {
		t.Errorf("a chain halted at 4 s: the run's last second is %v, want one before the planned 40 s", lastT(ss))
	}
	kinds := map[string]bool{}
	for _, e := range res.Events {
		kinds[e.Kind+" "+e.Target] = true
	}
	if !kinds["node_down node1"] || !kinds["node_down node2"] {
		t.Errorf("node crashes not recorded as events: %+v", res.Events)
	}
}

// One crashed validator of four must not end the measurement: the chain
// goes on, so the run does, moving load off the dead node, and it records
// the crash. Nothing committed is lost from the count.
func TestCrashedValidatorDoesNotEndTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	g := chain.Genesis{Seed: "crash", Accounts: 1000, Balance: 1_000_000_000}
	n := startNet(t, g)
	senders := senderSet(g, 300)
	out := filepath.Join(t.TempDir(), "crash")
	sc := loadScenario(out, 300, 16*time.Second, 300)
	sc.Target.NetHome = n.Home
	atLoad(t, out, 6*time.Second, func() { n.Kill(1) })
	res, err := run(t, context.Background(), sc)
	if err != nil {
		t.Fatalf("a crash of one validator of four ended the run: %v", err)
	}
	s := res.Summary
	if res.EndedBecause != "completed" {
		t.Errorf("ended %q", res.EndedBecause)
	}
	crashed := false
	for _, e := range res.Events {
		crashed = crashed || e.Kind == "node_down" && e.Target == "node1"
	}
	if !crashed {
		t.Errorf("the crash is not an event: %+v", res.Events)
	}
	ok, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if ok != s.Committed {
		t.Errorf("committed %d, blocks hold %d", s.Committed, ok)
	}
	if s.Expired > s.Accepted/200 {
		t.Errorf("%d of %d accepted payments expired", s.Expired, s.Accepted)
	}
	// Each of the dead validator's turns to propose costs a round timeout
	// (about 3 s) without a block: a quarter of the heights, so the rate
	// falls below the offered one, but the chain goes on.
	// (Exact counts against the blocks are above; the rate only relates to
	// what was offered: some, and no more than it.)
	if s.CommittedTPS <= 0 || s.CommittedTPS > report.T.ShareCap*s.OfferedTPS {
		t.Errorf("committed_tps %.1f at %.0f offered with one of four validators down", s.CommittedTPS, s.OfferedTPS)
	}
	if e := res.Endpoints[1]; e.Up {
		t.Errorf("the crashed node's endpoint is reported up: %+v", e)
	}
	// The crashed validator comes back and catches up; the state is sound.
	if err := n.Restart(1, testbin.Path(t)); err != nil {
		t.Fatal(err)
	}
	h, _ := testnet.Height(context.Background(), n.Nodes[0].RPC)
	if err := n.WaitForBlocks(context.Background(), h+2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if r := n.Check(context.Background()); len(r.Problems) > 0 {
		t.Fatalf("net check: %v", r.Problems)
	}
}

// An interrupted run stops offering and waits for what is in flight, so
// payments are counted as what they became, not as expired; a second
// interruption skips the wait. The last partial second is never warm-up.
func TestInterruptDrainsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	n, off := sharedNet(t)
	senders := sendersFrom(sharedGenesis, off, 300)
	out := filepath.Join(t.TempDir(), "drain")
	sc := loadScenario(out, 300, 30*time.Second, 300)
	sc.Workload.SendersOffset = off
	sc.Target.NetHome = n.Home
	ctx, cancel := context.WithCancel(context.Background())
	// Late in a second: the second it falls in is partial (issue 34).
	atLoad(t, out, 6800*time.Millisecond, cancel)
	res, err := run(t, ctx, sc)
	if res == nil {
		t.Fatal(err)
	}
	s := res.Summary
	if exitcode.Of(err) != exitcode.TargetFailed || !strings.HasPrefix(res.EndedBecause, "interrupted") || !strings.Contains(res.EndedBecause, "drained in") {
		t.Errorf("ended %q (exit %d)", res.EndedBecause, exitcode.Of(err))
	}
	if s.Expired != 0 || s.Committed != s.Accepted {
		t.Errorf("after the drain: accepted %d, committed %d, expired %d", s.Accepted, s.Committed, s.Expired)
	}
	ok, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if ok != s.Committed {
		t.Errorf("committed %d, blocks hold %d", s.Committed, ok)
	}
	onDisk, rerr := report.ReadResult(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	last := onDisk.Series[len(onDisk.Series)-1]
	if last.Phase != "drain" {
		t.Errorf("the last partial second (t=%.1f) is labelled %q", last.T, last.Phase)
	}
	var stopped float64
	if _, err := fmt.Sscanf(res.EndedBecause[strings.Index(res.EndedBecause, "stopped offering at"):], "stopped offering at %f s", &stopped); err != nil {
		t.Fatalf("ended %q: %v", res.EndedBecause, err)
	}
	for _, p := range onDisk.Series {
		if p.Phase == "warmup" && p.T > 2 {
			t.Errorf("second %.1f after the warm-up is labelled warmup", p.T)
		}
		if p.Phase == "steady" && p.T > stopped+0.05 {
			t.Errorf("second %.1f, partial (offering stopped at %.1f s), is labelled steady", p.T, stopped)
		}
	}
	// Offered is everything due until the interrupt, at 300/s.
	if due := 300 * stopped; math.Abs(float64(s.Offered)-due) > 60 {
		t.Errorf("offered %d, due about %.0f by the interrupt at %.1f s", s.Offered, due, stopped)
	}

	// A second interruption right after the first: no wait.
	out2 := filepath.Join(t.TempDir(), "hard")
	sc2 := loadScenario(out2, 300, 30*time.Second, 300)
	sc2.Workload.SendersOffset = off
	sc2.Target.NetHome = n.Home
	sc2.Load.Drain = scenario.Duration(20 * time.Second)
	soft, cancelSoft := context.WithCancel(context.Background())
	hard, cancelHard := context.WithCancel(context.Background())
	atLoad(t, out2, 4*time.Second, func() { cancelSoft(); time.Sleep(50 * time.Millisecond); cancelHard() })
	res, _ = run(t, interrupt.WithHard(soft, hard), sc2)
	if res == nil || !strings.Contains(res.EndedBecause, "cut short by a second interruption") {
		t.Errorf("ended %q", res.EndedBecause)
	}
	// The 20 s drain did not run: at most the second it was cut in.
	drain := 0
	for _, sec := range readSeries(t, out2) {
		if sec.Phase == "drain" {
			drain++
		}
	}
	if drain > 2 {
		t.Errorf("a second interruption still waited: %d seconds of the 20 s drain ran", drain)
	}
}

// Other processes keeping the machine busy are measured and named, not
// blamed on the system (issue 34: at load average 25-55 a run blamed the
// target's answers). Three busy loops take this machine's CPU during a run
// on the shared network.
func TestBusyMachineIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the 4-validator network")
	}
	n, off := sharedNet(t)
	hogs := max(3, runtime.NumCPU()+1)
	for i := 0; i < hogs; i++ {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	}
	out := filepath.Join(t.TempDir(), "busy")
	sc := loadScenario(out, 200, 5*time.Second, 300)
	sc.Workload.SendersOffset = off
	sc.Target.NetHome = n.Home
	res, _ := run(t, context.Background(), sc)
	if res == nil {
		t.Fatal("no result")
	}
	g := res.Summary.Generator
	t.Logf("machine %.0f%%, others %.0f%% of one core, steal %.0f%%, load average %.1f; %s", g.MachineCPUPercent, g.OthersCPUPercent, g.StealPercent, g.LoadAverage, res.Verdict())
	if g.MachineBusy == "" || g.OthersCPUPercent < 50 {
		t.Errorf("with %d busy loops: machine busy %q, others %.0f%% of one core", hogs, g.MachineBusy, g.OthersCPUPercent)
	}
	if o := res.Outcome(); o != report.OutcomeKeptUp && o != report.OutcomeMachine && o != report.OutcomeRefused {
		t.Errorf("outcome %s on a machine others kept busy: %s", o, res.Verdict())
	}
}

// A block that comes after the drain ends holds payments whose commit
// timeout has not passed: they are in flight at the end, never expired,
// and the next block holds exactly them (issue 51: evmd's block 144 came
// 9 s after a 15 s drain and its 1,617 payments were called expired).
func TestPaymentsInFlightWhenTheDrainEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	g := chain.Genesis{Seed: "late-block", Accounts: 200, Balance: 1_000_000_000}
	set := testnet.DefaultSettings()
	set.TimeoutCommit = 4 * time.Second // blocks far apart: the drain ends between two
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 1, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "late-chain", Genesis: g, Settings: set, Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downFresh(n) })
	sc := scenario.Default()
	sc.Target.NetHome = n.Home
	sc.Load.Rate = 100
	sc.Load.Duration = scenario.Duration(5 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Load.Drain = scenario.Duration(500 * time.Millisecond)
	sc.Workload.Senders = 200
	sc.Out = filepath.Join(t.TempDir(), "run")
	res, err := run(t, context.Background(), sc)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.InFlightEnd == 0 || s.Expired != 0 {
		t.Fatalf("in flight at the end %d, expired %d: want some in flight and none expired (commit timeout %s)", s.InFlightEnd, s.Expired, sc.CommitTimeout.D())
	}
	if !strings.Contains(res.Verdict(), "still in flight at the end") {
		t.Errorf("the headline does not say what was in flight: %s", res.Verdict())
	}
	senders := sendersFrom(g, 0, 200)
	ok, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if ok != s.Committed {
		t.Errorf("committed %d; blocks %d..%d hold %d", s.Committed, res.Chain.FirstHeight, res.Chain.LastHeight, ok)
	}
	// The blocks after the run hold the payments it left in flight.
	if err := n.WaitForBlocks(context.Background(), res.Chain.LastHeight+2, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	later, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.LastHeight+1, res.Chain.LastHeight+2, senders)
	if later != s.InFlightEnd {
		t.Errorf("in flight at the end %d; the next blocks hold %d of ours", s.InFlightEnd, later)
	}
}

// readSeries is a run's per-second series as written to disk.
func readSeries(t *testing.T, dir string) []report.Second {
	t.Helper()
	r, err := report.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r.Series
}

func lastT(ss []report.Second) any {
	if len(ss) == 0 {
		return "none"
	}
	return ss[len(ss)-1].T
}
