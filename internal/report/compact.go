package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tpslab/tpslab/internal/measure"
)

// SummaryOptions shape the end-of-run summary.
type SummaryOptions struct {
	Full  bool // every figure (PrintFullSummary), not one screen
	Width int  // wrap warnings here; 0: 100 columns
	// Notes repeats the run's notes; off at the end of a run, whose notes
	// were printed as they came.
	Notes bool
}

// keyTelemetry are the per-node rows of the one-screen summary, in order.
var keyTelemetry = []struct{ suffix, label string }{
	{".cpu_percent", "cpu % of one core"},
	{".rss_bytes", "memory (rss)"},
	{".mempool_txs", "mempool txs"},
	{".p2p_send_bytes", "p2p sent/s"},
	{".write_bytes", "disk writes/s"},
	{".rounds", "extra consensus rounds"},
}

// maxNodeColumns is how many nodes the one-screen summary shows side by side.
const maxNodeColumns = 8

// PrintSummaryWith writes the end-of-run summary: one screen (about 30
// lines) unless o.Full. The verdict comes first, then thresholds, the
// counts, latency, the nodes as columns, the limit, warnings and paths.
func PrintSummaryWith(out io.Writer, r *Result, o SummaryOptions) {
	if o.Full {
		PrintFullSummary(out, r)
		return
	}
	width := o.Width
	if width <= 0 {
		width = 100
	}
	s := r.Summary
	fmt.Fprintln(out)
	writeWrapped(out, "", r.Verdict(), width)
	for _, t := range r.Thresholds {
		mark := "✓"
		if !t.OK {
			mark = "✗"
		}
		fmt.Fprintf(out, "  %s %s (%s)\n", mark, t.Expr, t.Actually())
	}
	fmt.Fprintln(out)

	printCountsAndLatency(out, &s)
	if other := otherCounts(&s); other != "" {
		writeWrapped(out, "also: ", other, width)
	}
	printByKind(out, &s, width)
	keptUp := r.Judge().Outcome == OutcomeKeptUp
	if keptUp {
		if l := nodesLine(r); l != "" {
			writeWrapped(out, "", l, width)
		}
	} else {
		printNodeColumns(out, r)
		fmt.Fprintln(out)
	}
	if h := s.Health; h != nil {
		writeWrapped(out, "", h.Line(), width)
	}
	if keptUp {
		fmt.Fprintln(out, "limit: none reached (tpslab find-max finds where it stops)")
	} else {
		writeWrapped(out, "limit: ", r.Limit(), width)
	}
	if j := r.Judge(); j.Outcome != OutcomeKeptUp && j.Limit.Cause != "" {
		for _, a := range j.Also() {
			writeWrapped(out, "  also held: ", a, width)
		}
		// The candidates that did not hold, by name: each one's figures
		// are in --summary full's RESOURCES (a list of ten of them filled
		// the first screen of a run that fell behind).
		if names := j.SetAsideNames(); len(names) > 0 {
			writeWrapped(out, "  did not hold (figures: --summary full): ", strings.Join(names, ", "), width)
		}
	}
	if g := s.Generator; s.Offered > 0 && g.Cores > 0 {
		line := fmt.Sprintf("generator %.0f%% of a core, machine %.0f%% of %d cores", g.CPUPercent, g.MachineCPUPercent, g.Cores)
		switch {
		case g.MachineBusy != "":
			// The WARNING below names the others' share and the steal.
		case g.StealPercent > 5 || !keptUp && g.StealPercent > 0:
			line += fmt.Sprintf(" (others %.0f%% of one core, steal %.0f%%)", g.OthersCPUPercent, g.StealPercent)
		case !keptUp || g.OthersCPUPercent > 25:
			line += fmt.Sprintf(" (others %.0f%% of one core)", g.OthersCPUPercent)
		}
		if b := s.BlocksSummary; b.Count > 0 {
			line += fmt.Sprintf("; blocks every %.0f ms, %.0f txs", b.IntervalMsMean, b.TxsMean)
		}
		writeWrapped(out, "", line, width)
	}
	var warns []string
	// A run that kept up leaves the generator's remarks (waits for
	// connections or lanes while answers came fast) to --summary full.
	if s.Generator.Warning != "" && (s.Generator.Limited || r.Judge().Outcome != OutcomeKeptUp) {
		warns = append(warns, s.Generator.Warning)
	}
	warns = append(warns, s.Warnings...)
	for _, w := range warns {
		writeWrapped(out, "WARNING: ", w, width)
	}
	if n := len(r.Events); n > 0 {
		kinds := map[string]int{}
		for _, e := range r.Events {
			kinds[e.Kind]++
		}
		parts := []string{}
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
		}
		fmt.Fprintf(out, "events: %s (in report.html and --summary full)\n", strings.Join(parts, ", "))
	}
	for _, e := range r.Endpoints {
		if e.TransportErrors > 0 || e.DownS > 0 {
			fmt.Fprintf(out, "endpoint %s: %d transport errors, down %.1f s, %d failovers\n", e.URL, e.TransportErrors, e.DownS, e.Failovers)
		}
	}
	if len(r.Segments) > 0 {
		parts := []string{}
		for _, g := range r.Segments {
			part := fmt.Sprintf("%d/%d %s committed %d", g.Index, g.Count, g.Where, g.Committed)
			if g.EndedBecause != "" {
				part += " (" + g.EndedBecause + ")" // a segment that left no result says nothing of its end
			}
			parts = append(parts, part)
		}
		writeWrapped(out, "segments: ", strings.Join(parts, "; "), width)
	}
	if len(s.Faults) > 0 {
		printFaults(out, r)
	}
	if o.Notes {
		for _, n := range r.Notes {
			writeWrapped(out, "note: ", n, width)
		}
	}
}

// printByKind is a mix's line by kind and the kind's own units.
func printByKind(out io.Writer, s *Summary, width int) {
	if len(s.ByKind) > 0 {
		parts := []string{}
		for _, k := range s.Kinds() {
			f := s.ByKind[k]
			p99 := "none committed in the window"
			if f.CommitMs.Count > 0 {
				p99 = "p99 " + fmtMs(f.CommitMs.P99)
			}
			parts = append(parts, fmt.Sprintf("%s %s/s (%s)", k, thousands(f.CommittedTPS), p99))
		}
		fmt.Fprintf(out, "by kind: %s\n", strings.Join(parts, ", "))
	}
	for _, u := range s.Units {
		writeWrapped(out, "", u, width)
	}
}

// printCountsAndLatency writes the counts beside the latencies, one table
// under 80 columns with the usual names.
func printCountsAndLatency(out io.Writer, s *Summary) {
	counts := compactCounts(s)
	lat := compactLatency(s)
	// A rare row (failed in block, in flight at the end) takes the place of
	// a zero one rather than make the screen taller: the headline already
	// says what "rejected 0" and "expired 0" would.
	for len(counts) > len(lat) {
		k := slices.IndexFunc(counts, func(c [3]string) bool {
			return (c[0] == "rejected" || c[0] == "expired") && c[1] == "0"
		})
		if k < 0 {
			break
		}
		counts = slices.Delete(counts, k, k+1)
	}
	nameW := 9
	for _, c := range counts {
		nameW = max(nameW, len(c[0]))
	}
	// Under 80 columns with the usual names: 9+8+9 left, 13+4x6 right.
	fmt.Fprintf(out, "%-*s %8s %9s  %-13s %5s %5s %5s %5s\n", nameW, "", "total", "steady/s", "latency (ms)", "p50", "p90", "p99", "max")
	for i := 0; i < max(len(counts), len(lat)); i++ {
		left := fmt.Sprintf("%-*s %8s %9s", nameW, "", "", "")
		if i < len(counts) {
			left = fmt.Sprintf("%-*s %8s %9s", nameW, counts[i][0], counts[i][1], counts[i][2])
		}
		right := ""
		if i < len(lat) {
			l := lat[i]
			right = fmt.Sprintf("  %-13s %5s %5s %5s %5s", l[0], l[1], l[2], l[3], l[4])
		}
		fmt.Fprintln(out, strings.TrimRight(left+right, " "))
	}
}

// compactCounts are the counter rows: name, total, steady rate.
func compactCounts(s *Summary) [][3]string {
	row := func(name string, v int64, rate string) [3]string { return [3]string{name, count(v), rate} }
	rows := [][3]string{
		row("offered", s.Offered, thousands(s.OfferedTPS)),
		row("sent", s.Sent, thousands(s.SentTPS)),
		row("committed", s.Committed, thousands(s.CommittedTPS)),
	}
	rej := row("rejected", s.RejectedTotal, "")
	if top := topReason(s.Rejected); top != "" {
		rej = row("rejected ("+top+")", s.RejectedTotal, "")
	}
	rows = append(rows, rej, row("expired", s.Expired, ""))
	if s.InFlightEnd > 0 {
		rows = append(rows, row("in flight at the end", s.InFlightEnd, ""))
	}
	if s.FailedTotal > 0 {
		rows = append(rows, row("failed in block", s.FailedTotal, ""))
	}
	return rows
}

// compactLatency are the latency rows: name, p50, p90, p99, max.
func compactLatency(s *Summary) [][5]string {
	row := func(name string, p measure.Percentiles) [5]string {
		if p.Count == 0 {
			return [5]string{name, "-", "-", "-", "-"}
		}
		return [5]string{name, ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max)}
	}
	// In the order a payment goes through them, each from the intended
	// send: the stages the chain says (gossiped, proposed) among them.
	l := s.LatencyMs
	rows := [][5]string{row("schedule lag", l.ScheduleLag), row("ack", l.Ack)}
	if l.Gossiped.Count > 0 {
		rows = append(rows, row("gossiped", l.Gossiped))
	}
	if l.Proposed.Count > 0 {
		rows = append(rows, row("proposed", l.Proposed))
	}
	return append(rows, row("commit", l.Commit))
}

// nodesLine is the nodes in one line, for a run that kept up: how many,
// the range of their CPU and memory ("" without telemetry).
func nodesLine(r *Result) string {
	var cpus, mems []float64
	for name, st := range r.Summary.Telemetry {
		node, metric, _ := strings.Cut(name, ".")
		switch {
		case node == "links":
		case metric == "cpu_percent":
			cpus = append(cpus, st.Mean)
		case metric == "rss_bytes":
			mems = append(mems, st.Mean)
		}
	}
	if len(cpus) == 0 {
		return ""
	}
	line := fmt.Sprintf("nodes: %d at %.0f-%.0f%% of one core", len(cpus), slices.Min(cpus), slices.Max(cpus))
	if len(mems) > 0 {
		line += fmt.Sprintf(", %s-%s memory", human(slices.Min(mems), "bytes"), human(slices.Max(mems), "bytes"))
	}
	return line + " (each: --summary full)"
}

// ms is a latency in ms, to a precision that reads.
func ms(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// otherWords say what the commonest of the other counters mean, in words a
// newcomer knows (the rest go by their titles, docs/metrics.md).
var otherWords = map[string]string{
	"unsent":        "%s never sent (the load ended first)",
	"conn_waits":    "%s waited for a busy connection",
	"window_waits":  "%s waited for their sender's window (payments in flight per sender)",
	"late_commits":  "%s committed after they had expired",
	"late_refusals": "%s refused after they had expired",
	"resyncs":       "%s sender sequence resyncs",
}

// otherCounts are the counters the table leaves out that are not zero.
func otherCounts(s *Summary) string {
	// The by-kind counters split the table's rows: the "by kind:" line
	// says them.
	shown := map[string]bool{"offered": true, "sent": true, "committed": true, "rejected": true, "expired": true, "accepted": true, "committed_failed": true, "in_flight_end": true,
		"sent_by_kind": true, "committed_by_kind": true, "committed_failed_by_kind": true}
	var parts []string
	for _, d := range measure.Counters {
		if shown[d.Name] {
			continue
		}
		v := d.Value(&s.Counts)
		switch w, ok := otherWords[d.Name]; {
		case v == 0:
		case ok:
			parts = append(parts, fmt.Sprintf(w, count(v)))
		default:
			parts = append(parts, fmt.Sprintf("%s %s", strings.TrimSpace(d.Title), count(v)))
		}
	}
	return strings.Join(parts, ", ")
}

// printNodeColumns writes the key telemetry with one column per node (or
// process: the part of each name before its first dot).
func printNodeColumns(out io.Writer, r *Result) {
	tel := r.Summary.Telemetry
	if len(tel) == 0 {
		return
	}
	units := map[string]string{}
	for _, m := range r.Telemetry {
		units[m.Name] = m.Unit
	}
	// A column for each process with a key figure: not for groups of
	// counters such as "link.<a>-<b>.bytes" or a kind's "factom.…".
	nodeSet := map[string]bool{}
	for name := range tel {
		node, _, ok := strings.Cut(name, ".")
		for _, k := range keyTelemetry {
			if ok && node != "links" && name == node+k.suffix {
				nodeSet[node] = true
			}
		}
	}
	nodes := slices.Sorted(maps.Keys(nodeSet))
	more := 0
	if len(nodes) > maxNodeColumns {
		more = len(nodes) - maxNodeColumns
		nodes = nodes[:maxNodeColumns]
	}
	var rows []string
	for _, k := range keyTelemetry {
		cells := []string{fmt.Sprintf("%-22s", k.label)}
		any := false
		for _, n := range nodes {
			st, ok := tel[n+k.suffix]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			any = true
			unit := units[n+k.suffix]
			if strings.HasPrefix(unit, "bytes") {
				cells = append(cells, human(st.Mean, "bytes"))
			} else {
				cells = append(cells, fmt.Sprintf("%.0f", st.Mean))
			}
		}
		if any {
			rows = append(rows, strings.Join(cells, "\t"))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-22s\t%s\t\n", "nodes (steady mean)", strings.Join(nodes, "\t"))
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t\n", row)
	}
	tw.Flush()
	if more > 0 {
		fmt.Fprintf(out, "(%d more nodes in --summary full)\n", more)
	}
}

// Limit is what held the run back, with its figures, as the judgement
// found it (Judge).
func (r *Result) Limit() string {
	j := r.Judge()
	if j.Outcome == OutcomeKeptUp {
		return fmt.Sprintf("none reached: the system kept up with %s tx/s (tpslab find-max finds where it stops)", thousands(r.Summary.ValidOfferedTPS()))
	}
	if j.Limit.Cause == "" {
		return "-"
	}
	return j.Limit.Phrase()
}

// writeWrapped writes prefix+text wrapped at width, continuation lines
// indented under the text.
func writeWrapped(out io.Writer, prefix, text string, width int) {
	indent := strings.Repeat(" ", 2)
	line := prefix
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > width && strings.TrimSpace(line) != strings.TrimSpace(prefix) {
			fmt.Fprintln(out, line)
			line = indent + w
			continue
		}
		if line == prefix || line == indent {
			line += w
		} else {
			line += " " + w
		}
	}
	fmt.Fprintln(out, line)
}
