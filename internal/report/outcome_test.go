package report

import (
	"github.com/tpslab/tpslab/internal/telemetry"
	"strings"
	"testing"
)

// outcomeRun is a finished run of 10 steady seconds offering 1000 tx/s,
// committing tps with a p50 commit latency going from p50a to p50b.
func outcomeRun(tps float64, p50a, p50b float64) *Result {
	r := &Result{Status: "complete", EndedBecause: "completed"}
	s := &r.Summary
	s.Steady.DurationS = 10
	s.OfferedTPS, s.SentTPS, s.CommittedTPS = 1000, 1000, tps
	s.Offered, s.Sent, s.Accepted, s.Committed = 12000, 12000, 12000, int64(12*tps)
	s.LatencyMs.Commit.P99 = 2 * p50b
	for i := 0; i < 10; i++ {
		x := Second{T: float64(i + 1), Phase: "steady"}
		x.CommitMs.Count = int64(tps)
		x.CommitMs.P50 = p50a + (p50b-p50a)*float64(i)/9
		r.Series = append(r.Series, x)
	}
	return r
}

// Each kind of run gets the headline that says what the system did with
// what was offered (issue 34, case 7): never "kept up" for a rate that did
// not hold, never a fraction for a count.
func TestHeadlineOutcomes(t *testing.T) {
	cases := []struct {
		name string
		r    func() *Result
		want Outcome
		lead string
	}{
		{"kept up", func() *Result { return outcomeRun(985, 600, 640) }, OutcomeKeptUp, "kept up: committed 985 of 1,000 offered tx/s for 10 s"},
		{"a third of offered, latency 8 s", func() *Result { return outcomeRun(315, 3000, 8000) }, OutcomeFellBehind, "fell behind: committed 315 of 1,000 offered tx/s for 10 s (32% of offered, commit latency grew from 3.56 s to 7.44 s)"},
		{"latency growing at the offered rate", func() *Result { return outcomeRun(990, 500, 4000) }, OutcomeFellBehind, "fell behind: committed 990 of 1,000 offered tx/s for 10 s (commit latency grew"},
		{"expiries", func() *Result {
			r := outcomeRun(950, 600, 600)
			r.Summary.Expired, r.Summary.Committed = 571, 11429
			return r
		}, OutcomeFellBehind, "fell behind: committed 950 of 1,000 offered tx/s for 10 s (95% of offered); p99 commit 1.20 s; limit: the system under test"},
		{"refused", func() *Result {
			r := outcomeRun(800, 600, 600)
			r.Summary.RejectRate = 0.17
			r.Summary.Rejected = map[string]int64{"sequence_mismatch": 2040}
			return r
		}, OutcomeRefused, "refused: committed 800 of 1,000 offered tx/s"},
		{"generator-limited", func() *Result {
			r := outcomeRun(600, 600, 600)
			r.Summary.SentTPS = 600
			r.Summary.Shortfall = &Shortfall{Scheduled: 10000, Sent: 6000, Unsent: 3, By: "generator_cpu"}
			r.Summary.Generator = Generator{Cores: 2, CPUPercent: 198, MachineCPUPercent: 100, Limited: true}
			return r
		}, OutcomeGenerator, "generator-limited: sent 600 of 1,000 offered tx/s (3 never sent); committed 600 of 1,000 offered tx/s for 10 s; p99 commit 1.20 s; limit: the load generator (tpslab used 198% CPU of 2 core(s)"},
		{"machine busy", func() *Result {
			r := outcomeRun(600, 600, 600)
			r.Summary.SentTPS = 600
			r.Summary.Shortfall = &Shortfall{Unsent: 4000, By: "machine_cpu"}
			r.Summary.Generator = Generator{Cores: 2, CPUPercent: 20, MachineCPUPercent: 100, OthersCPUPercent: 150}
			return r
		}, OutcomeMachine, "machine busy: sent 600 of 1,000 offered tx/s (4,000 never sent); committed 600 of 1,000 offered tx/s for 10 s; p99 commit 1.20 s; limit: the machine (the machine was 100% busy on 2 cores; other processes used 150% of one core"},
		{"sent late on a quiet machine (a frozen generator)", func() *Result {
			r := outcomeRun(990, 600, 600)
			r.Summary.LatencyMs.ScheduleLag.P99 = 9600
			r.Summary.Generator = Generator{Cores: 2, CPUPercent: 3, MachineCPUPercent: 20}
			return r
		}, OutcomeGenerator, "generator sent late: committed 990 of 1,000 offered tx/s for 10 s; p99 commit 1.20 s; limit: the load generator sent late (schedule lag p99 9.60 s"},
		{"a third of the payments deliberately invalid, all valid ones committed", func() *Result {
			r := outcomeRun(700, 600, 600)
			r.Summary.OfferedTPS, r.Summary.InvalidOfferedTPS = 700, 300
			r.Summary.InvalidSent = map[string]int64{"bad_signature": 3600}
			r.Summary.Offered, r.Summary.Sent, r.Summary.Accepted, r.Summary.Committed = 12000, 8400, 8400, 8400
			return r
		}, OutcomeKeptUp, "kept up: committed 700 of 700 offered tx/s for 10 s"},
		{"a backlog committing in the window", func() *Result {
			r := outcomeRun(1340, 600, 600)
			r.Summary.Committed = 12000
			return r
		}, OutcomeKeptUp, "kept up: committed 1,340 tx/s for 10 s, more than the 1,000 offered"},
		{"fell behind on a machine others kept busy", func() *Result {
			r := outcomeRun(315, 3000, 8000)
			r.Summary.Generator = Generator{Cores: 2, CPUPercent: 5, MachineCPUPercent: 100, OthersCPUPercent: 120}
			return r
		}, OutcomeMachine, "machine busy: committed 315 of 1,000 offered tx/s for 10 s; p99 commit 16.00 s; limit: the machine (the machine was 100% busy on 2 cores; other processes used 120% of one core"},
		{"kept up on a busy machine", func() *Result {
			r := outcomeRun(985, 600, 640)
			r.Summary.Generator.MachineBusy = "the machine was 95% busy on 2 cores, load average 4.0: a hypervisor took 30% of its CPU (steal)"
			return r
		}, OutcomeKeptUp, "kept up: committed 985 of 1,000 offered tx/s for 10 s"},
		{"target could not take it", func() *Result {
			r := outcomeRun(192, 600, 600)
			r.Summary.SentTPS = 192
			r.Summary.Shortfall = &Shortfall{Unsent: 8080, By: "target"}
			return r
		}, OutcomeTargetShort, "fell behind: sent 192 of 1,000 offered tx/s (8,080 never sent); committed 192 of 1,000 offered tx/s for 10 s (19% of offered); p99 commit 1.20 s; limit: the target's answers"},
		{"a target slow on a busy machine stays the target's", func() *Result {
			r := outcomeRun(192, 600, 600)
			r.Summary.SentTPS = 192
			r.Summary.Shortfall = &Shortfall{Unsent: 8080, By: "target"}
			r.Summary.Generator = Generator{Cores: 2, CPUPercent: 1, MachineCPUPercent: 100, OthersCPUPercent: 150, BusyPercent: 100, WaitingPercent: 100}
			return r
		}, OutcomeTargetShort, "fell behind: sent 192 of 1,000 offered tx/s (8,080 never sent); committed 192 of 1,000 offered tx/s for 10 s (19% of offered); p99 commit 1.20 s; limit: the target's answers"},
		{"a sink that commits nothing", func() *Result {
			r := outcomeRun(0, 0, 0)
			r.Summary.Committed = 0
			return r
		}, OutcomeNothing, "committed nothing: 12,000 payments sent over 10 s, none in a block"},
		{"halted", func() *Result {
			r := outcomeRun(0, 0, 0)
			r.Summary.Halted = "no block for 52 s from t=3 s"
			return r
		}, OutcomeHalted, "the chain stopped committing (no block for 52 s from t=3 s)"},
	}
	for _, c := range cases {
		r := c.r()
		v := r.Verdict()
		t.Logf("%-38s %s", c.name+":", v)
		if got := r.Outcome(); got != c.want {
			t.Errorf("%s: outcome %s, want %s", c.name, got, c.want)
		}
		if !strings.HasPrefix(v, c.lead) {
			t.Errorf("%s: headline %q, want it to start %q", c.name, v, c.lead)
		}
		if strings.Contains(v, "sustained") || strings.Contains(v, ".0 never sent") || strings.Contains(v, ".0 expired") {
			t.Errorf("%s: headline %q", c.name, v)
		}
	}
}

// The default summary fits one screen: the verdict first, four nodes as
// columns, a long warning wrapped, thresholds with units (issue 35).
func TestCompactSummaryFitsOneScreen(t *testing.T) {
	r := outcomeRun(985, 600, 640)
	r.Summary.Telemetry = map[string]telemetry.Stat{}
	for _, n := range []string{"node0", "node1", "node2", "node3"} {
		for _, m := range []string{"cpu_percent", "rss_bytes", "mempool_txs", "p2p_send_bytes", "write_bytes", "rounds", "goroutines", "heap_bytes", "alloc_bytes", "block_bytes"} {
			r.Summary.Telemetry[n+"."+m] = telemetry.Stat{Mean: 30, Max: 40}
		}
	}
	r.Summary.Warnings = []string{strings.Repeat("a long warning ", 20)}
	r.Thresholds = []ThresholdOutcome{{Expr: "p99_commit < 2s", OK: true, Actual: 1454}}
	var b strings.Builder
	PrintSummaryWith(&b, r, SummaryOptions{Width: 80})
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 30 || !strings.HasPrefix(lines[0], "kept up: ") {
		t.Errorf("%d lines, first %q:\n%s", len(lines), lines[0], out)
	}
	for _, l := range lines {
		if len([]rune(l)) > 100 {
			t.Errorf("a line of %d columns: %q", len([]rune(l)), l)
		}
	}
	// A run that kept up names its nodes in one line (the table is for a
	// run that did not, and --summary full).
	for _, want := range []string{"✓ p99_commit < 2s (actual 1454 ms)", "nodes: 4 at 30-30% of one core", "limit: none reached"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	var full strings.Builder
	PrintSummaryWith(&full, r, SummaryOptions{Full: true})
	if n := strings.Count(full.String(), "\n"); n < 2*len(lines) {
		t.Errorf("--summary full: %d lines, the compact one %d", n, len(lines))
	}
}

// The segments line names each segment's end when it has one, and writes
// no empty "()" for a segment that left none (issue 52).
func TestSegmentsLineWithoutAnEnd(t *testing.T) {
	r := outcomeRun(985, 600, 640)
	r.Segments = []SegmentInfo{{Index: 0, Count: 2, Where: "local", Committed: 2370, EndedBecause: "completed"}, {Index: 1, Count: 2, Where: "local", Committed: 2370}}
	var b strings.Builder
	PrintSummaryWith(&b, r, SummaryOptions{Width: 100})
	out := b.String()
	if !strings.Contains(out, "0/2 local committed 2370 (completed); 1/2 local committed 2370") || strings.Contains(out, "()") {
		t.Errorf("segments line:\n%s", out)
	}
}
