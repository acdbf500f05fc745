package findmax

import (
	"fmt"
	"sort"
	"strings"
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
	if f.Generator.Limited {
		h = append(h, "generator: "+f.Generator.Warning)
	}
	h = append(h, insideHints(fail)...)
	if g := f.Generator; g.MachineCPUPercent > 90 && !hasPrefix(h, "CPU") {
		h = append(h, fmt.Sprintf("CPU: the machine was %.0f%% busy (of %d cores) at %.0f tx/s, the generator using %.0f%% of one core: the nodes are CPU-bound here", g.MachineCPUPercent, g.Cores, fail.Rate, g.CPUPercent))
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
		h = append(h, fmt.Sprintf("nonce handling: %d of %d rejections and failures were sequence mismatches (%d resyncs)", seq, rej, f.Resyncs))
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
		h = append(h, fmt.Sprintf("submission: %d due payments waited for a busy connection; ack p50 %.0f ms, p99 %.0f ms (the system answers submissions slower than they are offered: node RPC and CheckTx on a chain, the service on a ledger)", f.ConnWaits, f.LatencyMs.Ack.P50, f.LatencyMs.Ack.P99))
	}
	if float64(f.WindowWaits) > 0.01*float64(f.Offered) {
		h = append(h, fmt.Sprintf("commit latency: %d payments waited for room in their sender's in-flight window (commits arrive slower than payments are offered)", f.WindowWaits))
	}
	if len(h) == 0 {
		return []string{fmt.Sprintf("no clear limit found in the data collected (failed: %s)", strings.Join(fail.Why, "; "))}
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
// the CPU, and for a database, its conflicts and its queue. A database that
// is the busiest process, or whose transactions conflict, or that keeps
// payments waiting for a connection, is named as the limit.
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
		h = append(h, fmt.Sprintf("CPU at %.0f tx/s, in %% of one core: %s; the machine was %.0f%% busy (of %d cores)", fail.Rate, strings.Join(parts, ", "), g.MachineCPUPercent, g.Cores))
	}
	var db []string
	if len(cpu) > 0 && cpu[0].role == "database" && (cpu[0].pct > 80 || g.MachineCPUPercent > 90) {
		db = append(db, fmt.Sprintf("it is the busiest process (%s at %.0f%% of a core)", cpu[0].name, cpu[0].pct))
	}
	if st, ok := tel["ledger.retries_per_payment"]; ok && st.Mean > 0.05 {
		db = append(db, fmt.Sprintf("%.2f serialization retries per committed payment (%.0f/s): transactions on the same hot accounts conflict", st.Mean, tel["ledger.retries"].Mean))
	}
	if st, ok := tel["ledger.queue"]; ok && st.Mean > 1 && st.Mean > 0.01*fail.Rate {
		db = append(db, fmt.Sprintf("%.0f payments waited for a database connection on average (max %.0f)", st.Mean, st.Max))
	}
	if st, ok := tel["db.lock_waits"]; ok && st.Mean >= 1 {
		db = append(db, fmt.Sprintf("%.1f connections waited for a lock on average", st.Mean))
	}
	if len(db) > 0 {
		h = append([]string{"database: the database limits the ledger here: " + strings.Join(db, "; ")}, h...)
	}
	return h
}

// Knee lists the steps ordered by rate, for tables and charts.
func Knee(steps []Step) []Step {
	out := append([]Step(nil), steps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rate < out[j].Rate })
	return out
}
