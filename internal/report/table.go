package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// PrintSummary writes the one-screen end-of-run summary with its notes.
func PrintSummary(out io.Writer, r *Result) { PrintSummaryWith(out, r, SummaryOptions{Notes: true}) }

// PrintFullSummary writes every figure of the run (--summary full).
func PrintFullSummary(out io.Writer, r *Result) {
	s := r.Summary
	fmt.Fprintf(out, "\n%s\n\n", r.Verdict())
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ended because\t%s\n", r.EndedBecause)
	fmt.Fprintf(tw, "steady window\t%.0f s .. %.0f s (%.0f s; warm-up %.0f s and drain %.1f s excluded)\n", s.Steady.StartS, s.Steady.EndS, s.Steady.DurationS, s.Steady.WarmupS, s.Steady.DrainS)
	if r.Chain.FirstHeight > 0 {
		fmt.Fprintf(tw, "blocks\t%d .. %d (steady %d .. %d)\n", r.Chain.FirstHeight, r.Chain.LastHeight, r.Chain.SteadyFirstHeight, r.Chain.SteadyLastHeight)
	}
	fmt.Fprintln(tw, "\t")
	printCounters(tw, &s)
	fmt.Fprintln(tw, "\t")
	printLatencies(tw, &s)
	if len(s.ByKind) > 0 {
		fmt.Fprintln(tw, "\t")
		fmt.Fprintf(tw, "BY KIND (steady)\tsent\tcommitted\tfailed\tcommitted/s\tp50 commit\tp99 commit\n")
		for _, k := range s.Kinds() {
			f := s.ByKind[k]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\n", k, f.Sent, f.Committed, f.Failed, f.CommittedTPS, f.CommitMs.P50, f.CommitMs.P99)
		}
	}
	if len(s.Telemetry) > 0 {
		fmt.Fprintln(tw, "\t")
		fmt.Fprintf(tw, "INSIDE THE SYSTEM (steady)\tmean\tmax\t\n")
		for _, m := range r.shownTelemetry() {
			st := s.Telemetry[m.Name]
			max := human(st.Max, m.Unit)
			if strings.HasSuffix(m.Name, "_per_payment") {
				max = ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, human(st.Mean, m.Unit), max, m.Unit)
		}
	}
	tw.Flush()
	if h := s.Health; h != nil {
		fmt.Fprintf(out, "\nhealth: %s\n", h.Line())
		if h.LogBenign > 0 {
			fmt.Fprintf(out, "  %d log lines at error level that every healthy network writes (start-up, peers leaving, a websocket closing): not counted as errors (docs/health.md)\n", h.LogBenign)
		}
	}
	printResources(out, r)
	printSteps(out, r)
	if len(s.SlowestStatements) > 0 {
		fmt.Fprintln(out, "\nslowest statements (total time in the run):")
		for _, st := range s.SlowestStatements {
			fmt.Fprintf(out, "  %8.0f ms  %7d calls  %6.2f ms mean  %s\n", st.TotalMs, st.Calls, st.MeanMs, st.Query)
		}
	}
	fmt.Fprintln(out)
	printCosts(out, &s)
	printProfiles(out, s.Profiles)
	if s.Generator.Warning != "" {
		fmt.Fprintf(out, "WARNING: %s\n", s.Generator.Warning)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(out, "WARNING: %s\n", w)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Samples)) {
		fmt.Fprintf(out, "sample %s: %s\n", k, s.Samples[k])
	}
	for _, e := range r.Events {
		fmt.Fprintf(out, "event t=%.1fs %s %s: %s\n", e.T, e.Kind, e.Target, e.Detail)
	}
	printEndpointsAndSegments(out, r)
	printFaults(out, r)
	for _, t := range r.Thresholds {
		verdict := "ok  "
		if !t.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(out, "threshold %s %s (%s)\n", verdict, t.Expr, t.Actually())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
}

// shownTelemetry are the telemetry metrics the summary table shows: all but
// a process's threads, descriptors and reads (they are in result.json), in
// name order, with their per-payment figures.
func (r *Result) shownTelemetry() []telemetry.Metric {
	var out []telemetry.Metric
	defs := map[string]telemetry.Metric{}
	for _, m := range r.Telemetry {
		defs[m.Name] = m
		if m.PerPayment {
			defs[m.Name+"_per_payment"] = telemetry.Metric{Name: m.Name + "_per_payment", Unit: m.UnitPer(), Help: m.Help + ", per committed payment"}
		}
	}
	for _, name := range telemetry.Names(r.Summary.Telemetry) {
		m, ok := defs[name]
		if !ok {
			m = telemetry.Metric{Name: name}
		}
		if strings.HasSuffix(name, ".threads") || strings.HasSuffix(name, ".fds") || strings.HasSuffix(name, ".read_bytes") {
			continue
		}
		if m.Unit == "1" {
			m.Unit = ""
		}
		out = append(out, m)
	}
	return out
}

// human writes v in its unit, scaling bytes.
func human(v float64, unit string) string {
	if strings.HasPrefix(unit, "bytes") {
		switch {
		case v >= 1<<30:
			return fmt.Sprintf("%.2f Gi", v/(1<<30))
		case v >= 1<<20:
			return fmt.Sprintf("%.1f Mi", v/(1<<20))
		case v >= 1<<10:
			return fmt.Sprintf("%.1f Ki", v/(1<<10))
		}
	}
	switch {
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// printFaults shows the emulated links, each fault's effect and the audit
// after the faults.
func printFaults(out io.Writer, r *Result) {
	s := r.Summary
	if len(s.Links) > 0 {
		topo := ""
		if r.Network != nil {
			topo = r.Network.Topology
		}
		fmt.Fprintf(out, "\nlinks (topology %s):\n", topo)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LINK\tCONDITIONS\tRTT SET (ms)\tRTT MEASURED (ms)\tTRAFFIC MEAN\tTRAFFIC MAX")
		for _, l := range s.Links {
			m := fmt.Sprintf("%.1f", l.MeasuredRTTMs)
			switch {
			case strings.HasPrefix(l.ProbeError, "not probed"):
				m = "not probed"
			case l.ProbeError != "":
				m = "error: " + l.ProbeError
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\n", l.Name, l.Conditions, l.RTTMs, m, human(l.BytesPerS, "bytes/s"), human(l.MaxBytesPerS, "bytes/s"))
		}
		tw.Flush()
	}
	if len(s.Faults) > 0 {
		fmt.Fprintln(out, "\nfaults (committed tx/s before, during and after; gap without blocks; from the end to the first block, and to 90% of before sustained over 3 blocks):")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FAULT\tFROM..TO (s)\tBEFORE\tDURING\tAFTER\tLONGEST GAP (s)\tFIRST BLOCK (s)\tRECOVERY (s)\tCAUGHT UP (s)\tEXPIRED\tLOST")
		for _, f := range s.Faults {
			rec, cu, fb := fmt.Sprintf("%.1f", f.RecoveryS), "-", "-"
			if f.RecoveryS < 0 {
				rec = "not within the load"
			}
			if f.FirstBlockS != nil {
				fb = fmt.Sprintf("%.1f", *f.FirstBlockS)
				if *f.FirstBlockS < 0 {
					fb = "none"
				}
			}
			if f.CaughtUpS != nil {
				cu = fmt.Sprintf("%.1f", *f.CaughtUpS)
				if *f.CaughtUpS < 0 {
					cu = "no"
				}
			}
			name := f.Fault
			if f.Error != "" {
				name += " (error: " + f.Error + ")"
			}
			gap := fmt.Sprintf("%.1f", f.LongestGapS)
			if f.FirstBlockS == nil {
				gap = "-" // a system without blocks has no gap between them
			}
			fmt.Fprintf(tw, "%s\t%.1f..%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\n", name, f.StartS, f.EndS, f.BeforeTPS, f.DuringTPS, f.AfterTPS, gap, fb, rec, cu, f.Expired, f.Lost)
		}
		tw.Flush()
	}
	if c := s.NetCheck; c != nil {
		switch {
		case c.OK && c.Said != "":
			fmt.Fprintln(out, "net check after the faults:", c.Said)
		case c.OK:
			fmt.Fprintln(out, "net check after the faults: ok")
		}
		for _, p := range c.Problems {
			fmt.Fprintln(out, "net check after the faults: FAIL:", p)
		}
	}
}

// Markdown writes a run's headline as a short table for a pull request
// comment: the verdict in bold, then the figures that answer "how many,
// how fast, how many refused".
func Markdown(w io.Writer, r *Result) {
	s := r.Summary
	fmt.Fprintf(w, "**%s**\n\n", strings.ReplaceAll(r.Verdict(), "|", `\|`))
	fmt.Fprintln(w, "| figure | value |\n|---|---:|")
	rows := [][2]string{
		{"committed TPS", fmt.Sprintf("%.1f", s.CommittedTPS)},
		{"offered / sent TPS", fmt.Sprintf("%.1f / %.1f", s.OfferedTPS, s.SentTPS)},
		{"commit latency p50 / p99", fmt.Sprintf("%s / %s", fmtMs(s.LatencyMs.Commit.P50), fmtMs(s.LatencyMs.Commit.P99))},
		{"ack latency p50 / p99", fmt.Sprintf("%s / %s", fmtMs(s.LatencyMs.Ack.P50), fmtMs(s.LatencyMs.Ack.P99))},
		{"committed / sent", fmt.Sprintf("%d / %d", s.Committed, s.Sent)},
		{"rejected", fmt.Sprintf("%.2f%%", 100*s.RejectRate)},
		{"expired / lost", fmt.Sprintf("%d / %d", s.Expired, s.Lost)},
		{"steady window", fmt.Sprintf("%.0f s", s.Steady.DurationS)},
	}
	for _, row := range rows {
		fmt.Fprintf(w, "| %s | %s |\n", row[0], row[1])
	}
	if n := r.Network; n != nil {
		fmt.Fprintf(w, "\n<sub>%s, %d validator(s); tpslab %s</sub>\n", n.Kind, n.Validators, r.Environment.TpslabVersion)
	}
}

// printCounters writes every counter of the registry that is not zero (or
// always shown), with its reasons and steady rate.
func printCounters(tw io.Writer, s *Summary) {
	fmt.Fprintf(tw, "COUNTER\tTOTAL\tSTEADY RATE/s\n")
	rates := map[string]float64{"offered": s.OfferedTPS, "sent": s.SentTPS, "accepted": s.AcceptedTPS, "committed": s.CommittedTPS}
	for _, d := range measure.Counters {
		v := d.Value(&s.Counts)
		if v == 0 && !d.Always {
			continue
		}
		rate := ""
		if r, ok := rates[d.Name]; ok {
			rate = fmt.Sprintf("%.1f", r)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", d.Title, v, rate)
		if d.Reasons != nil {
			m := *d.Reasons(&s.Counts)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				fmt.Fprintf(tw, "  %s\t%d\t\n", k, m[k])
			}
		}
		if d.Name == "expired" && (len(s.Faults) > 0 || s.Lost > 0) {
			fmt.Fprintf(tw, "lost (accepted, then neither committed nor expired)\t%d\t\n", s.Lost)
		}
	}
}

// printLatencies writes each latency's percentiles over the steady window.
func printLatencies(tw io.Writer, s *Summary) {
	fmt.Fprintf(tw, "LATENCY (ms, steady)\tp50\tp90\tp99\tp99.9\tmax\n")
	for _, l := range []struct {
		name string
		p    measure.Percentiles
	}{
		{"ack (from intended)", s.LatencyMs.Ack},
		{"gossiped (from intended)", s.LatencyMs.Gossiped},
		{"proposed (from intended)", s.LatencyMs.Proposed},
		{"commit (from intended)", s.LatencyMs.Commit},
		{"commit (from actual send)", s.LatencyMs.CommitUncorrected},
		{"schedule lag", s.LatencyMs.ScheduleLag},
	} {
		if (l.name == "proposed (from intended)" || l.name == "gossiped (from intended)") && l.p.Count == 0 {
			continue // the chain does not say
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", l.name, l.p.P50, l.p.P90, l.p.P99, l.p.P999, l.p.Max)
	}
}

// printCosts writes what the generator, the machine and the chain spent.
func printCosts(out io.Writer, s *Summary) {
	if g := s.Generator; s.Offered > 0 && g.Cores > 0 {
		fmt.Fprintf(out, "generator: %.0f%% of one core (of %d)", g.CPUPercent, g.Cores)
		if g.Workers > 0 {
			what := "connection"
			if g.Lanes > 0 {
				what = "lane"
			}
			if g.Workers != 1 {
				what += "s"
			}
			if from := max(g.LanesStart, g.ConnectionsStart); from > 0 {
				what += fmt.Sprintf(" (grown from %d)", from)
			}
			fmt.Fprintf(out, "; %d %s busy %.0f%% of the load, %.0f%% of that waiting for answers", g.Workers, what, g.BusyPercent, g.WaitingPercent)
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "machine: %.0f%% busy (%d cores); other processes %.0f%% of one core, steal %.0f%%, load average %.1f\n",
			g.MachineCPUPercent, g.Cores, g.OthersCPUPercent, g.StealPercent, g.LoadAverage)
	}
	if s.BlocksSummary.Count > 0 {
		fmt.Fprintf(out, "blocks: %d, every %.0f ms, %.0f txs on average (max %d)", s.BlocksSummary.Count, s.BlocksSummary.IntervalMsMean, s.BlocksSummary.TxsMean, s.BlocksSummary.TxsMax)
		if g := s.BlocksSummary.GasPerPayment; g > 1 { // the built-in ledger says 1 for each
			fmt.Fprintf(out, "; our payments used %.0f gas each", g)
		}
		fmt.Fprintln(out)
	}
	if c := s.Cost; s.CommittedTPS > 0 {
		fmt.Fprintf(out, "cost per committed payment:")
		if c.NodeCPUus > 0 {
			fmt.Fprintf(out, " system %.0f µs CPU,", c.NodeCPUus)
		}
		fmt.Fprintf(out, " generator %.0f µs CPU", c.GeneratorCPUus)
		if c.WireBytes > 0 {
			fmt.Fprintf(out, ", %.0f bytes on the wire", c.WireBytes)
		}
		if c.GossipOverhead > 0 {
			fmt.Fprintf(out, " (mempool gossip %.2f× the transactions' bytes)", c.GossipOverhead)
		}
		fmt.Fprintln(out)
	}
}

// printProfiles writes the top functions of the profiles taken.
func printProfiles(out io.Writer, p *Profiles) {
	if p == nil {
		return
	}
	top := func(what string, fs []TopFunction) {
		if len(fs) == 0 {
			return
		}
		parts := []string{}
		for i, f := range fs {
			if i == 5 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.1f%%", f.Function, f.Percent))
		}
		fmt.Fprintf(out, "top %s: %s\n", what, strings.Join(parts, ", "))
	}
	top("CPU functions", p.CPUTop)
	top("allocators", p.AllocTop)
	top("CPU functions of tpslab itself", p.GeneratorCPUTop)
	if len(p.Files) > 0 {
		fmt.Fprintf(out, "profiles: %s (go tool pprof)\n", strings.Join(p.Files, " "))
	}
	for _, e := range p.Errors {
		fmt.Fprintf(out, "WARNING: %s\n", e)
	}
}

// printEndpointsAndSegments writes the per-endpoint table (when there is
// more than one, or one that failed) and the per-segment table.
func printEndpointsAndSegments(out io.Writer, r *Result) {
	if len(r.Endpoints) > 1 || len(r.Endpoints) == 1 && (r.Endpoints[0].TransportErrors > 0 || r.Endpoints[0].DownS > 0) {
		fmt.Fprintln(out)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENDPOINT\tSENT\tACCEPTED\tREJECTED\tUNACKED\tTRANSPORT ERRORS\tFAILOVERS\tDOWN (s)")
		for _, e := range r.Endpoints {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\n", e.URL, e.Sent, e.Accepted, e.Rejected, e.Unacked, e.TransportErrors, e.Failovers, e.DownS)
		}
		tw.Flush()
	}
	if len(r.Segments) > 0 {
		fmt.Fprintln(out)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEGMENT	WHERE	SENDERS	OFFERED	COMMITTED	P50 COMMIT (ms)	P99 COMMIT (ms)	CLOCK OFFSET BEFORE/AFTER (ms)	ENDED")
		for _, g := range r.Segments {
			fmt.Fprintf(tw, "%d/%d	%s	%s	%d	%d	%.1f	%.1f	%+.3f / %+.3f (rtt %.3f)	%s\n", g.Index, g.Count, g.Where, g.Senders,
				g.Offered, g.Committed, g.CommitP50Ms, g.CommitP99Ms, g.OffsetBeforeMs, g.OffsetAfterMs, g.RTTMs, g.EndedBecause)
		}
		tw.Flush()
	}
}

// printResources writes the judgement's resource table: the limit, what
// else held, and every candidate set aside, each with its figures
// (docs/metrics.md, "What limited it").
func printResources(out io.Writer, r *Result) {
	j := r.Judge()
	if j.Outcome == OutcomeNoLoad {
		return // nothing offered: no resource was asked for anything
	}
	fmt.Fprintln(out, "\nRESOURCES (the judgement: each candidate limit, its capacity, use and figures)")
	if j.Limit.Cause != "" {
		fmt.Fprintf(out, "  limit: %s\n", j.Limit.Phrase())
	} else {
		fmt.Fprintln(out, "  limit: none reached")
	}
	for _, a := range j.Also() {
		fmt.Fprintf(out, "  also held: %s\n", a)
	}
	for _, a := range j.SetAside() {
		fmt.Fprintf(out, "  %s\n", a)
	}
	if j.By != "" {
		fmt.Fprintf(out, "  (judged by tpslab %s at the run's end, thresholds v%d; tpslab summary --rejudge judges again)\n", j.By, j.Limits)
	}
}
