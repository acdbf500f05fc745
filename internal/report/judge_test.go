package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/telemetry"
)

// The candidates are weighed in the documented order (docs/metrics.md,
// "What limited it"); the machine comes before the target's answers only
// when it starved a system that needed the CPU.
func TestCandidatesInTheDocumentedOrder(t *testing.T) {
	r := outcomeRun(500, 600, 600)
	var got []Cause
	for _, e := range r.Judge().Considered {
		got = append(got, e.Cause)
	}
	if !slices.Equal(got, order) {
		t.Errorf("candidates %v, want %v", got, order)
	}
	r.Summary.Generator = Generator{Cores: 2, MachineCPUPercent: 100, OthersCPUPercent: 120}
	r.Summary.Telemetry = map[string]telemetry.Stat{"node0.cpu_percent": {Mean: 70}}
	j := r.Judge()
	if j.Limit.Cause != CauseMachine || j.Outcome != OutcomeMachine {
		t.Errorf("a system starved by others: limit %s, outcome %s", j.Limit.Cause, j.Outcome)
	}
}

// A part that went down under a scheduled fault, or while the system
// carried on, limited nothing; one after which commits stopped did.
func TestDiedOnlyWhenTheSystemStopped(t *testing.T) {
	r := outcomeRun(990, 600, 600)
	for i := range r.Series {
		r.Series[i].Committed = 990
	}
	r.Events = []Event{{T: 4, Kind: "node_down", Target: "node3", Detail: "pid 9 exited"}}
	if j := r.Judge(); j.Outcome == OutcomeDied {
		t.Errorf("a validator of four down, commits going on: %s", r.Verdict())
	}
	r.Summary.Faults = []FaultEffect{{Fault: "3s:crash:node3:5s"}}
	if died, _ := r.died(); died {
		t.Error("a scheduled crash counted as a death")
	}
	r = outcomeRun(300, 600, 600)
	for i := range r.Series {
		if r.Series[i].T > 4 {
			r.Series[i].Committed = 0
		} else {
			r.Series[i].Committed = 1000
		}
	}
	r.Events = []Event{{T: 4, Kind: "node_down", Target: "postgres", Detail: "pid 7 exited"}}
	if j := r.Judge(); j.Outcome != OutcomeDied {
		t.Errorf("commits stopped when postgres died: %s", r.Verdict())
	}
}

// A generator whose own clock stopped sent late for its own sake, though
// its payments then also waited in full windows and the rest caught up
// (a frozen segment: "kept up … p99 commit 10.50 s" before).
func TestPausedGeneratorIsNamed(t *testing.T) {
	r := outcomeRun(600, 600, 600)
	s := &r.Summary
	s.LatencyMs.ScheduleLag.P99, s.LatencyMs.CommitUncorrected.P99 = 9700, 10000
	s.WindowWaits = s.Offered / 10
	s.Generator = Generator{Cores: 2, CPUPercent: 3, MachineCPUPercent: 100, OthersCPUPercent: 180}
	if j := r.Judge(); j.Limit.Cause == CauseLate {
		t.Fatalf("without a measured pause the window waits explain the lag; got %s", r.Verdict())
	}
	s.Generator.PausedS, s.Generator.LongestPauseMs = 8.2, 8100
	j := r.Judge()
	if j.Limit.Cause != CauseLate || j.Outcome != OutcomeGenerator {
		t.Errorf("a paused generator: limit %s, outcome %s: %s", j.Limit.Cause, j.Outcome, r.Verdict())
	}
	s.LatencyMs.ScheduleLag.P99 = 40 // a pause that delayed nothing
	if j := r.Judge(); j.Limit.Cause == CauseLate {
		t.Errorf("a pause with no lag named: %s", r.Verdict())
	}
}

// A capacity every node has of its own (a mempool) is weighed by the
// fullest node, not the nodes' sum: four mempools a quarter full are not
// one full mempool, and one full mempool among idle ones is.
func TestEachNodesCapacityIsItsOwn(t *testing.T) {
	r := outcomeRun(400, 600, 3000)
	r.Capacities = []Capacity{{Name: "mempool_txs", Class: CauseBlocks, Capacity: 1000, Unit: "transactions", Use: ".mempool_txs", Each: true}}
	r.Summary.Telemetry = map[string]telemetry.Stat{}
	for _, n := range []string{"node0", "node1", "node2", "node3"} {
		r.Summary.Telemetry[n+".mempool_txs"] = telemetry.Stat{Mean: 250}
	}
	if j := r.Judge(); j.Limit.Resource == "mempool_txs" {
		t.Errorf("four mempools a quarter full named: %s", j.Limit.Figures)
	}
	r.Summary.Telemetry["node2.mempool_txs"] = telemetry.Stat{Mean: 990}
	j := r.Judge()
	if j.Limit.Cause != CauseBlocks || j.Limit.Resource != "mempool_txs" || j.Limit.Utilisation != 0.99 {
		t.Errorf("node2's mempool 99%% full: limit %s/%s at %.2f (%s)", j.Limit.Cause, j.Limit.Resource, j.Limit.Utilisation, j.Limit.Figures)
	}
}

// Blocks all at one count while a backlog waits are full at a cap of the
// chain's own, whatever the declared rows say (evmd's gas wanted: 30
// transfers a block at half the gas used).
func TestBlocksAtACap(t *testing.T) {
	r := outcomeRun(150, 3000, 9000)
	r.Capacities = []Capacity{{Name: BlockGas, Class: CauseBlocks, Capacity: 3e6, Unit: "gas", Use: "blocks.gas"}}
	b := &r.Summary.BlocksSummary
	b.Steady, b.SteadyGas, b.SteadyTxs, b.SteadyTxsMin, b.SteadyTxsMax = 26, 1.5e6, 30, 30, 30
	r.Summary.Telemetry = map[string]telemetry.Stat{"node0.mempool_txs": {Mean: 2034}}
	j := r.Judge()
	if j.Limit.Cause != CauseBlocks || j.Limit.Resource != "block_txs" || j.Limit.Capacity != 30 {
		t.Fatalf("limit %s/%s (%s), want blocks full at 30 transactions", j.Limit.Cause, j.Limit.Resource, j.Limit.Figures)
	}
	b.SteadyTxsMin = 12 // blocks of varying counts: no cap of their own
	if j := r.Judge(); j.Limit.Resource == "block_txs" {
		t.Errorf("varying blocks named full: %s", j.Limit.Figures)
	}
	b.SteadyTxsMin = 30
	r.Summary.Telemetry["node0.mempool_txs"] = telemetry.Stat{Mean: 4} // nothing waiting
	if j := r.Judge(); j.Limit.Resource == "block_txs" {
		t.Errorf("equal blocks with nothing waiting named full: %s", j.Limit.Figures)
	}
}

// Blocks full by bytes are at one count too: the declared limit that
// holds is named, the count set aside after it.
func TestDeclaredLimitExplainsTheCap(t *testing.T) {
	r := outcomeRun(150, 3000, 9000)
	r.Capacities = []Capacity{{Name: BlockBytes, Class: CauseBlocks, Capacity: 1 << 19, Unit: "bytes", Use: "blocks.bytes"}}
	b := &r.Summary.BlocksSummary
	b.Steady, b.SteadyBytes, b.SteadyTxs, b.SteadyTxsMin, b.SteadyTxsMax = 11, 520000, 125, 125, 125
	r.Summary.Telemetry = map[string]telemetry.Stat{"node0.mempool_txs": {Mean: 4137}}
	if j := r.Judge(); j.Limit.Resource != BlockBytes {
		t.Errorf("limit %s (%s), want block bytes", j.Limit.Resource, j.Limit.Figures)
	}
}

// A node whose cgroup met its memory limit over and over is named by its
// memory limit; one far under its limit is set aside with its figures.
func TestMemoryLimitIsNamed(t *testing.T) {
	r := outcomeRun(500, 600, 600)
	r.Summary.Telemetry = map[string]telemetry.Stat{
		"node0.memory_limit_bytes": {Mean: 256 << 20}, "node0.memory_limit_used_bytes": {Mean: 250 << 20, Max: 255 << 20}, "node0.memory_limit_hits": {Mean: 40},
		"node1.memory_limit_bytes": {Mean: 1 << 30}, "node1.memory_limit_used_bytes": {Mean: 100 << 20, Max: 120 << 20},
	}
	j := r.Judge()
	if j.Limit.Cause != CauseMemLimit || j.Limit.Resource != "node0.memory_limit" || !strings.Contains(j.Limit.Phrase(), "node0's memory limit") {
		t.Errorf("limit %+v (%s), want node0's memory limit", j.Limit, j.Limit.Phrase())
	}
	for _, e := range j.Considered {
		if e.Resource == "node1.memory_limit" && e.Holds {
			t.Errorf("node1 at 12%% of its limit held: %+v", e)
		}
	}
}
