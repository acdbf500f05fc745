package findmax

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tpslab/tpslab/internal/report"
)

// Hints reads what the data collected at the knee points at: the last
// sustained step against the first failing one. Each hint names its
// evidence; when the data is silent it says so instead of guessing.
func Hints(pass, fail *Step) []string {
	if fail == nil || fail.Result == nil {
		return []string{"no failing step: no limit was reached"}
	}
	f := fail.Result.Summary
	var h []string
	// The failing step's judgement first: the same evidence and order as a
	// run's headline (report.Judge); the hints below add what the steps
	// around the knee show.
	j := fail.Result.Judge()
	if j.Limit.Cause != "" && j.Limit.Cause != report.CauseSystem {
		h = append(h, fmt.Sprintf("limit at %.0f tx/s: %s", fail.Rate, j.Limit.Phrase()))
		for _, a := range j.Also() {
			h = append(h, fmt.Sprintf("also held at %.0f tx/s: %s", fail.Rate, a))
		}
	}
	if f.Generator.Limited {
		h = append(h, "generator: "+f.Generator.Warning)
	}
	h = append(h, nodeHints(pass, fail)...)
	for _, x := range insideHints(fail) {
		if !(strings.HasPrefix(x, "CPU at") && hasPrefix(h, "nodes' CPU saturated")) {
			h = append(h, x)
		}
	}
	if g := f.Generator; g.MachineCPUPercent > 90 && !hasPrefix(h, "CPU") && !hasPrefix(h, "nodes' CPU") {
		h = append(h, fmt.Sprintf("CPU: the machine was %.0f%% busy (of %d cores) at %.0f tx/s, the generator using %.0f%% of one core: %s", g.MachineCPUPercent, g.Cores, fail.Rate, g.CPUPercent, whoseCPU(&f)))
	}
	sent := float64(f.Sent)
	share := func(n int64) float64 {
		if sent == 0 {
			return 0
		}
		return float64(n) / sent
	}
	if n := f.Rejected["mempool_full"]; share(n) > 0.01 {
		h = append(h, fmt.Sprintf("mempool: %d submissions (%.1f%%) were refused as mempool_full at %.0f tx/s", n, 100*share(n), fail.Rate))
	}
	if fail.Growth > 1 {
		h = append(h, fmt.Sprintf("mempool backlog: it grew by %.1f s of load during the step at %.0f tx/s (the chain includes less than is offered)", fail.Growth, fail.Rate))
	}
	seq := f.Rejected["sequence_too_low"] + f.Rejected["sequence_too_high"] + f.Failed["sequence_too_low"] + f.Failed["sequence_too_high"]
	if rej := f.RejectedTotal + f.FailedTotal; share(seq) > 0.01 && float64(seq) > 0.5*float64(rej) {
		why := ""
		if n := f.Failed["sequence_too_high"]; n > 0 {
			why = fmt.Sprintf("; %d committed with sequence_too_high: a proposer listed a sender's payments out of order (CometBFT's mempool can, when they reach a node from several peers at once, unless the application orders its proposals; docs/ledger.md)", n)
		}
		h = append(h, fmt.Sprintf("nonce handling: %d of %d rejections and failures were sequence mismatches (%d resyncs)%s", seq, rej, f.Resyncs, why))
	}
	if pass != nil && pass.Result != nil {
		p := pass.Result.Summary
		if pi, fi := p.BlocksSummary.IntervalMsMean, f.BlocksSummary.IntervalMsMean; pi > 0 && fi > 1.5*pi {
			h = append(h, fmt.Sprintf("consensus: the mean block interval grew from %.0f ms at %.0f tx/s to %.0f ms at %.0f tx/s (blocks of %.0f txs on average)", pi, pass.Rate, fi, fail.Rate, f.BlocksSummary.TxsMean))
		}
	}
	if tr := f.Rejected["transport_error"] + f.Rejected["timeout"]; share(tr) > 0.01 {
		h = append(h, fmt.Sprintf("transport: %d submissions (%.1f%%) failed with connection errors or timeouts", tr, 100*share(tr)))
	}
	if float64(f.ConnWaits) > 0.01*float64(f.Offered) && !f.Generator.Limited {
		h = append(h, fmt.Sprintf("submission: %d due payments waited for a busy connection (or their lane's batch in flight); ack p50 %.0f ms, p99 %.0f ms (the system answers submissions slower than they are offered: node RPC and CheckTx on a chain, the service on a ledger)", f.ConnWaits, f.LatencyMs.Ack.P50, f.LatencyMs.Ack.P99))
	}
	if float64(f.WindowWaits) > 0.01*float64(f.Offered) {
		h = append(h, fmt.Sprintf("commit latency: %d payments waited for room in their sender's in-flight window (commits arrive slower than payments are offered)", f.WindowWaits))
	}
	if len(h) == 0 {
		return []string{fmt.Sprintf("no clear limit found in the data collected (failed: %s)", strings.Join(fail.Why, "; "))}
	}
	return h
}

// whoseCPU says what a busy machine's CPU went to, as far as the run read
// it: a kind with no local processes (remote endpoints, a service tpslab
// did not start) shows nothing of them, and the hint must not guess.
func whoseCPU(f *report.Summary) string {
	cpu, by := sumOf(f, ".cpu_percent")
	if len(by) == 0 {
		return "tpslab read no process of this system (none runs here, or it started none), so it cannot say whose CPU it was"
	}
	return fmt.Sprintf("the system's processes used %.0f%% of one core: they are CPU-bound here", cpu)
}

// sumOf adds the steady means of every telemetry metric ending in suffix
// (every node's), and lists them by node.
func sumOf(s *report.Summary, suffix string) (sum float64, by map[string]float64) {
	by = map[string]float64{}
	for k, st := range s.Telemetry {
		if strings.HasSuffix(k, suffix) {
			sum += st.Mean
			by[strings.TrimSuffix(k, suffix)] = st.Mean
		}
	}
	return sum, by
}

// nodeHints read the validators' insides at the knee: CPU saturated, the
// allocation rate and the p2p bytes per payment growing, and any cost per
// payment (from the metric registry) that grew, each against the last
// sustained step.
func nodeHints(pass, fail *Step) []string {
	f := &fail.Result.Summary
	var p *report.Summary
	if pass != nil && pass.Result != nil {
		p = &pass.Result.Summary
	}
	var h []string
	var vals []string
	for _, m := range fail.Result.Telemetry {
		if m.Role == "validator" && strings.HasSuffix(m.Name, ".cpu_percent") {
			vals = append(vals, m.Name)
		}
	}
	sort.Strings(vals)
	g := f.Generator
	if len(vals) > 0 {
		var sum, top float64
		topName := ""
		parts := []string{}
		for _, name := range vals {
			v := f.Telemetry[name].Mean
			sum += v
			if v > top {
				top, topName = v, strings.TrimSuffix(name, ".cpu_percent")
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", strings.TrimSuffix(name, ".cpu_percent"), v))
		}
		capacity := 100 * float64(g.Cores)
		if g.MachineCPUPercent >= 90 && sum >= 0.5*capacity || top >= 95 {
			msg := fmt.Sprintf("nodes' CPU saturated at %.0f tx/s: %s of one core (together %.0f%% of the %d cores' %.0f%%; generator %.0f%%, the machine %.0f%% busy); the busiest is %s", fail.Rate, strings.Join(parts, ", "), sum, g.Cores, capacity, g.CPUPercent, g.MachineCPUPercent, topName)
			if p != nil {
				ps, _ := sumOf(p, ".cpu_percent")
				msg += fmt.Sprintf(", against %.0f%% together at %.0f tx/s", ps, pass.Rate)
			}
			h = append(h, msg)
		}
	}
	// The CPU the nodes spend per payment caps the rate this machine can
	// reach whatever else holds: its cores, less the generator's share,
	// over that cost. A knee near the cap is the nodes' CPU even before
	// the machine shows full.
	if c := f.Cost.NodeCPUus; c > 0 && len(vals) > 0 && !hasPrefix(h, "nodes' CPU saturated") {
		capacity := (100*float64(g.Cores) - g.CPUPercent) * 1e4 / c
		if fail.Rate >= 0.7*capacity {
			h = append(h, fmt.Sprintf("nodes' CPU per payment: the validators spent %.0f µs of CPU per committed payment at %.0f tx/s, which caps this machine's %d cores (less the generator's %.0f%%) near %.0f tx/s; the machine was %.0f%% busy", c, fail.Rate, g.Cores, g.CPUPercent, capacity, g.MachineCPUPercent))
		}
	}
	if p == nil || p.CommittedTPS <= 0 || f.CommittedTPS <= 0 {
		return h
	}
	grew := func(a, b float64) bool { return a > 0 && b > 1.25*a }
	if fa, _ := sumOf(f, ".alloc_bytes"); fa > 0 {
		pa, _ := sumOf(p, ".alloc_bytes")
		if per, pper := fa/f.CommittedTPS, pa/p.CommittedTPS; grew(pper, per) || grew(pa, fa) && fa > 2*pa {
			h = append(h, fmt.Sprintf("allocation rate grew: the nodes allocated %.1f MiB/s (%.1f KiB per committed payment) at %.0f tx/s against %.1f MiB/s (%.1f KiB) at %.0f tx/s", fa/1048576, per/1024, fail.Rate, pa/1048576, pper/1024, pass.Rate))
		}
	}
	if fb, _ := sumOf(f, ".p2p_send_bytes"); fb > 0 {
		pb, _ := sumOf(p, ".p2p_send_bytes")
		if per, pper := fb/f.CommittedTPS, pb/p.CommittedTPS; grew(pper, per) {
			msg := fmt.Sprintf("p2p bandwidth: the nodes sent %.1f MiB/s, %.0f bytes per committed payment, at %.0f tx/s against %.1f MiB/s, %.0f bytes, at %.0f tx/s", fb/1048576, per, fail.Rate, pb/1048576, pper, pass.Rate)
			if f.Cost.GossipOverhead > 0 && p.Cost.GossipOverhead > 0 {
				msg += fmt.Sprintf(" (mempool gossip %.1f× the transactions' bytes against %.1f×)", f.Cost.GossipOverhead, p.Cost.GossipOverhead)
			}
			h = append(h, msg)
		}
	}
	var costs []string
	for _, d := range report.Defs(fail.Result.Telemetry) {
		if !d.Cost || d.Name == "wire_bytes_per_tx" || strings.HasSuffix(d.Name, "p2p_send_bytes_per_payment") {
			continue
		}
		a, okA := d.Run(p)
		b, okB := d.Run(f)
		if okA && okB && grew(a, b) {
			costs = append(costs, fmt.Sprintf("%s %.4g → %.4g %s", d.Name, a, b, d.Unit))
		}
	}
	if len(costs) > 0 {
		h = append(h, fmt.Sprintf("cost per payment grew from %.0f to %.0f tx/s: %s", pass.Rate, fail.Rate, strings.Join(costs, "; ")))
	}
	return h
}

func hasPrefix(h []string, p string) bool {
	for _, s := range h {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// insideHints read the telemetry of the failing step: which process used
// the CPU, and the database when its judgement found it saturated.
func insideHints(fail *Step) []string {
	r := fail.Result
	tel := r.Summary.Telemetry
	if len(tel) == 0 {
		return nil
	}
	type use struct {
		name, role string
		pct        float64
	}
	var cpu []use
	for _, m := range r.Telemetry {
		if st, ok := tel[m.Name]; ok && strings.HasSuffix(m.Name, ".cpu_percent") {
			cpu = append(cpu, use{strings.TrimSuffix(m.Name, ".cpu_percent"), m.Role, st.Mean})
		}
	}
	sort.Slice(cpu, func(i, j int) bool { return cpu[i].pct > cpu[j].pct })
	g := r.Summary.Generator
	var h []string
	if len(cpu) > 0 {
		parts := []string{}
		for _, u := range cpu {
			parts = append(parts, fmt.Sprintf("%s (%s) %.0f%%", u.name, u.role, u.pct))
		}
		parts = append(parts, fmt.Sprintf("generator %.0f%%", g.CPUPercent))
		line := fmt.Sprintf("CPU at %.0f tx/s, in %% of one core: %s; the machine was %.0f%% busy (of %d cores)", fail.Rate, strings.Join(parts, ", "), g.MachineCPUPercent, g.Cores)
		// Listed under "what limits it", the figures must not read as a
		// cause when none is near full.
		if c := r.Judge().Limit.Cause; cpu[0].pct < 80 && g.CPUPercent < 80 && g.MachineCPUPercent < 90 &&
			c != report.CauseSystemCPU && c != report.CauseMachine && c != report.CauseGenerator {
			line += ": no process near a full core and the machine not full, so not the CPU"
		}
		h = append(h, line)
	}
	// The database as the failing step's judgement weighed it (its
	// connections, its locks, deadlocks and retries: report.T), never by
	// rules of find-max's own.
	var db []string
	for _, e := range r.Judge().Considered {
		if e.Cause == report.CauseDatabase && e.Holds {
			db = append(db, e.Figures)
		}
	}
	if len(db) > 0 {
		h = append([]string{"database: the database limits the system here: " + strings.Join(db, "; ")}, h...)
	}
	return h
}

// Knee lists the steps ordered by rate, for tables and charts.
func Knee(steps []Step) []Step {
	out := append([]Step(nil), steps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rate < out[j].Rate })
	return out
}
