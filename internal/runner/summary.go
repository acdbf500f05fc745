package runner

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// haltShare is the share of the steady window without blocks past which a
// run's figures describe a halted chain, not a throughput: it is reported
// as such, with a non-zero exit.
const haltShare = 0.25

// summarizer computes the headline figures from what the load recorded. It
// reads the load's state and writes nothing: the run wires it (wiring,
// runner.go), the load loop feeds the recorder and the state (execute.go,
// collect.go), and this turns them into numbers.
type summarizer struct {
	sc      *scenario.Scenario
	profile schedule.Profile
	rec     *measure.Recorder
	ls      *loadState
	tel     *telemetry.Sampler // nil: nothing read from inside
	loadDur time.Duration      // the schedule's length
}

// summary is the run's summary so far: the summarizer's figures, and what
// the run knows besides (profiles, the emulated links, the audit).
func (r ending) summary() report.Summary {
	s := r.sum.summary()
	s.Profiles = r.prof.Load().Summary()
	if len(r.links) > 0 {
		s.Links = r.linkStats(&s)
	}
	s.NetCheck = r.netCheck
	return s
}

// summary computes the headline figures from the totals so far.
func (r *summarizer) summary() report.Summary {
	ls := r.ls
	tot, st := r.rec.Total, r.rec.Steady
	s := report.Summary{Counts: tot.Counts}
	s.RejectedTotal = measure.Sum(tot.Rejected)
	s.UnackedTotal = measure.Sum(tot.Unacked)
	s.FailedTotal = measure.Sum(tot.Failed)
	if s.Sent > 0 {
		s.RejectRate = float64(s.RejectedTotal) / float64(s.Sent)
	}
	win := float64(ls.steadyN)
	warm := r.sc.Load.Warmup.D().Seconds()
	s.Steady = report.Steady{StartS: warm, EndS: warm + win, DurationS: win, Committed: st.Committed, WarmupS: warm}
	if le := time.Duration(ls.loadEnd.Load()); le > 0 {
		// The drain counts from the schedule's end, not from when the last
		// submissions in flight were answered.
		s.Steady.DrainS = math.Round((ls.eng.Since()-min(le, r.loadDur)).Seconds()*10) / 10
		if late := le - r.loadDur; late > time.Second {
			s.Warnings = append(s.Warnings, fmt.Sprintf("the last submissions in flight were answered %.1f s after the load ended", late.Seconds()))
		}
	}
	lat := st
	if win > 0 {
		r.committedRate(&s, st)
		// Invalid payments count apart from every payment figure.
		inv := measure.Sum(st.InvalidSent)
		s.OfferedTPS = float64(st.Offered-inv) / win
		s.InvalidOfferedTPS = float64(inv) / win
		s.SentTPS = float64(st.Sent) / win
		s.AcceptedTPS = float64(st.Accepted) / win
		s.ByKind = byKind(st, win, s.CommittedTPS)
	} else {
		lat = tot // no steady second (a very short or interrupted run)
	}
	s.LatencyMs = report.Latency{Ack: measure.Summarize(lat.Ack), Commit: measure.Summarize(lat.Commit),
		CommitUncorrected: measure.Summarize(lat.CommitUncorrected), ScheduleLag: measure.Summarize(lat.Lag)}
	s.LatencyMs.Inclusion = s.LatencyMs.Commit // final at inclusion (BFT, depth 0)
	if lat.Inclusion.TotalCount() > 0 {
		s.LatencyMs.Inclusion = measure.Summarize(lat.Inclusion)
	}
	if lat.Proposed.TotalCount() > 0 {
		s.LatencyMs.Proposed = measure.Summarize(lat.Proposed)
	}
	if lat.Gossiped.TotalCount() > 0 {
		s.LatencyMs.Gossiped = measure.Summarize(lat.Gossiped)
	}
	cpu := ls.cpuLoad
	loadSecs := time.Duration(ls.loadEnd.Load()).Seconds()
	if cpu == 0 {
		cpu = measure.CPUTime() - ls.cpuStart
		loadSecs = ls.eng.Since().Seconds()
	}
	s.Generator = report.Generator{Cores: runtime.NumCPU(), Procs: runtime.GOMAXPROCS(0), MachineCPUPercent: math.Round(1000*ls.machineLoad) / 10, Lanes: ls.eng.Lanes(),
		StealPercent: math.Round(1000*ls.machineSteal) / 10, LoadAverage: ls.loadAvg}
	if ls.pauses.into(&s.Generator); s.Generator.Lanes > ls.lanesStart {
		s.Generator.LanesStart = ls.lanesStart
	}
	if loadSecs > 0 {
		s.Generator.CPUPercent = math.Round(1000*cpu.Seconds()/loadSecs) / 10
	}
	// Over the steady window when it has one, as the nodes' telemetry: the
	// judge weighs them together.
	if m := ls.machineSteady; ls.steadyN > 0 && m[0][1] > 0 && m[1][1] > m[0][1] {
		total := float64(m[1][1] - m[0][1])
		s.Generator.MachineCPUPercent = math.Round(1000*float64(m[1][0]-m[0][0])/total) / 10
		s.Generator.StealPercent = math.Round(1000*float64(m[1][2]-m[0][2])/total) / 10
		s.Generator.CPUPercent = math.Round(10*ls.steadyGenCPU/float64(ls.steadyN)) / 10
	}
	if b := ls.busy; b.Workers > 0 && loadSecs > 0 {
		used := (b.Working + b.Waiting).Seconds()
		s.Generator.Workers = b.Workers
		if g := &s.Generator; g.Lanes == 0 && r.sc.Load.Model == scenario.Open && b.Workers > r.sc.Load.Connections {
			g.ConnectionsStart = r.sc.Load.Connections
		}
		// Each worker's share counts from its start: grown lanes and
		// connections were not there to be busy before.
		lived := max(loadSecs, float64(b.Workers)*loadSecs-b.Absent.Seconds())
		s.Generator.BusyPercent = math.Round(1000*min(1, used/lived)) / 10
		if used > 0 {
			s.Generator.WaitingPercent = math.Round(1000*b.Waiting.Seconds()/used) / 10
		}
	}
	r.judgeGenerator(&s, win)
	if a := tot.BlockAgg; a.Count > 0 {
		s.BlocksSummary.Count = a.Count
		if a.Intervals > 0 {
			s.BlocksSummary.IntervalMsMean = math.Round(a.IntervalMs/float64(a.Intervals)*10) / 10
		}
		s.BlocksSummary.TxsMean = math.Round(float64(a.Txs)/float64(a.Count)*10) / 10
		s.BlocksSummary.TxsMax = a.TxsMax
		s.BlocksSummary.BytesMean = math.Round(float64(a.Bytes) / float64(a.Count))
		if a.OursOK > 0 && a.OursGas > 0 {
			s.BlocksSummary.GasPerPayment = math.Round(float64(a.OursGas) / float64(a.OursOK))
		}
		ls.mu.Lock()
		if ls.intervals.TotalCount() > 0 {
			s.BlocksSummary.IntervalMsMedian = float64(ls.intervals.ValueAtQuantile(50))
		}
		ls.mu.Unlock()
	}
	ls.steadyBlocksInto(&s.BlocksSummary)
	r.stalls(&s)
	s.Samples = ls.eng.Samples()
	if r.tel != nil {
		s.Telemetry = ls.telWin.Stats(r.tel.Metrics(), s.CommittedTPS)
		s.SlowestStatements = ls.slowest
	}
	s.MempoolBefore = ls.mempoolBefore
	judgeMachine(&s)
	s.Cost = cost(&s, ls.steadyGenCPU, ls.steadyN)
	// Every accepted (or unanswered) payment ends committed, failed in a
	// block or expired; whatever is neither, and not still pending, is lost.
	s.Lost = max(0, s.Accepted+s.UnackedTotal-s.Committed-s.FailedTotal-s.Expired-s.InFlightEnd-int64(ls.trk.Len()))
	return s
}

// Thresholds of judgeMachine: a hypervisor taking a tenth of the CPU, or
// other processes a quarter of it on a machine at least 90% busy.
const (
	stealBusy  = 10.0
	othersBusy = 0.25
)

// judgeMachine measures what the rest of the machine took: the machine's
// busy time less tpslab's and the system's measured processes', and steal.
// When that was large, the machine, not the system, may have been the
// limit, and the summary says so (docs/metrics.md, "Who could not keep up").
func judgeMachine(s *report.Summary) {
	g := &s.Generator
	capacity := 100 * float64(g.Cores)
	machine := g.MachineCPUPercent / 100 * capacity // in % of one core
	nodes, measured := report.SystemSum(s.Telemetry, ".cpu_percent", func(st telemetry.Stat) float64 { return st.Mean })
	others := max(0, machine-g.CPUPercent-nodes)
	g.OthersCPUPercent = math.Round(others*10) / 10
	var why []string
	if g.StealPercent >= stealBusy {
		why = append(why, fmt.Sprintf("a hypervisor took %.0f%% of its CPU (steal)", g.StealPercent))
	}
	if measured && g.MachineCPUPercent >= 90 && others >= othersBusy*capacity {
		why = append(why, fmt.Sprintf("other processes used %.0f%% of one core (the system's processes %.0f%%, tpslab %.0f%%)", others, nodes, g.CPUPercent))
	}
	if len(why) == 0 {
		return
	}
	g.MachineBusy = fmt.Sprintf("the machine was %.0f%% busy on %d cores, load average %.1f: %s", g.MachineCPUPercent, g.Cores, g.LoadAverage, strings.Join(why, "; "))
	s.Warnings = append(s.Warnings, g.MachineBusy+": the figures describe this machine's load as much as the system under test; measure on a quiet machine")
	// A target that answered slowly on a busy machine stays the target's
	// shortfall: the verdict weighs the machine beside it (report.Judge).
}

// cost is what a committed payment cost over the steady window: the mean
// CPU of the system's processes and of tpslab, and the nodes' p2p bytes,
// over the committed rate (docs/metrics.md).
func cost(s *report.Summary, genCPUSum float64, steadySecs int) report.Cost {
	var c report.Cost
	tps := s.CommittedTPS
	if tps <= 0 {
		return c
	}
	sum := func(suffix string) (float64, bool) {
		return report.SystemSum(s.Telemetry, suffix, func(st telemetry.Stat) float64 { return st.Mean })
	}
	round := func(v float64) float64 { return math.Round(v*10) / 10 }
	// 1% of one core for a second is 10,000 µs of CPU.
	if cpu, ok := sum(".cpu_percent"); ok {
		c.NodeCPUus = round(cpu * 1e4 / tps)
	}
	gen := s.Generator.CPUPercent
	if steadySecs > 0 {
		gen = genCPUSum / float64(steadySecs)
	}
	c.GeneratorCPUus = round(gen * 1e4 / tps)
	if b, ok := sum(".p2p_send_bytes"); ok {
		c.WireBytes = math.Round(b / tps)
	}
	if s.BlocksSummary.TxsMean > 0 {
		c.TxBytes = round(s.BlocksSummary.BytesMean / s.BlocksSummary.TxsMean)
	}
	if b, ok := sum(".p2p_mempool_send_bytes"); ok && c.TxBytes > 0 {
		c.GossipOverhead = math.Round(100*b/(tps*c.TxBytes)) / 100
	}
	return c
}

// committedRate is committed_tps over the steady window. It is
// block-aligned, so that blocks seconds apart do not quantise it: what
// committed in the window's blocks after its first, over the time from its
// first block to its last. A stretch without blocks at the window's start
// or end beyond one usual block interval is a stall, not quantisation: it
// is added to that time, so a chain that stops committing is not reported
// at the rate it had while it still did.
func (r *summarizer) committedRate(s *report.Summary, st *measure.Interval) {
	ls := r.ls
	w := window{Start: s.Steady.StartS, End: s.Steady.EndS, Committed: st.Committed, Blocks: ls.steadyBlocks,
		First: ls.steadyB[0], Last: ls.steadyB[1], FirstOurs: ls.steadyB0, Typical: float64(ls.steadyIv.ValueAtQuantile(50)) / 1000, Chain: ls.hasBlock}
	s.CommittedTPS, s.Steady.BlockWindowS, s.Steady.StallS = w.rate()
	if msg := w.fewBlocks(); msg != "" && !ls.sink { // the sink's blocks hold nothing to rest on
		s.Warnings = append(s.Warnings, msg)
	}
}

// minSteadyBlocks is how many blocks a steady window needs before its
// committed TPS is more than a count of one or two blocks (issue 34).
const minSteadyBlocks = 5

// fewBlocks warns when a chain's steady window holds fewer than
// minSteadyBlocks blocks: committed_tps then rests on them, and a block
// more or less moves it by a large share.
func (w window) fewBlocks() string {
	if !w.Chain || w.Blocks >= minSteadyBlocks {
		return ""
	}
	need := ""
	if w.Typical > 0 {
		need = fmt.Sprintf(" (blocks come about %.1f s apart: a steady window of %.0f s or more)", w.Typical, math.Ceil(float64(minSteadyBlocks)*w.Typical))
	}
	return fmt.Sprintf("the steady window holds %d block(s): its committed TPS rests on them; run longer for %d or more%s", w.Blocks, minSteadyBlocks, need)
}

// window is what committed_tps is computed from: the steady window
// [Start, End] (seconds), what committed in it, and its blocks: how many,
// when the first and the last were seen, ours in the first, and the usual
// interval between them.
type window struct {
	Start, End, First, Last, Typical float64
	Committed, FirstOurs             int64
	Blocks                           int
	Chain                            bool // the system has blocks
}

// rate is committed_tps, the time between the window's first and last
// blocks, and the block-less time added to it.
func (w window) rate() (tps, blockWindow, stall float64) {
	tps = float64(w.Committed) / (w.End - w.Start)
	if w.Blocks == 0 && w.Chain {
		return tps, 0, math.Round((w.End-w.Start)*1000) / 1000 // not one block: the whole window stalled
	}
	if w.Blocks < 2 {
		return tps, 0, 0
	}
	head := math.Max(0, w.First-w.Start-w.Typical)
	tail := math.Max(0, w.End-w.Last-w.Typical)
	blockWindow = w.Last - w.First
	stall = math.Round((head+tail)*1000) / 1000
	if span := blockWindow + stall; span > 0 {
		tps = float64(w.Committed-w.FirstOurs) / span
	}
	return tps, blockWindow, stall
}

// stalls lists the stretches without blocks that are far longer than the
// chain's usual block interval. A stall the chain did not come back from
// before the run ended, covering more than a quarter of the steady window,
// means the run measured a halted chain; stalls that end with a block are
// slow blocks (an overloaded chain executing huge ones), reported as
// warnings.
func (r *summarizer) stalls(s *report.Summary) { r.stallsUntil(s, r.ls.eng.Since()) }

// stallsUntil is stalls for a run that ended at end.
func (r *summarizer) stallsUntil(s *report.Summary, end time.Duration) {
	ls := r.ls
	if !ls.hasBlock {
		return
	}
	ls.mu.Lock()
	gaps := append([]gap(nil), ls.gaps...)
	last := ls.lastSeen
	median := time.Duration(ls.intervals.ValueAtQuantile(50)) * time.Millisecond
	ls.mu.Unlock()
	if end-last >= gapFloor {
		gaps = append(gaps, gap{from: last, to: end})
	}
	// Slow blocks raise the bar (an overloaded chain executing huge blocks
	// is not stalled), but a gap over a quarter of the steady window and
	// twice the usual interval is reported whatever the blocks around it
	// (issue 34: a 52 s gap over a whole window of 14 s blocks went
	// unreported).
	threshold := max(minGap, 5*median)
	w0, w1 := s.Steady.StartS, s.Steady.EndS
	win := w1 - w0
	for i, g := range gaps {
		d := g.to - g.from
		s.LongestGapS = max(s.LongestGapS, round1(d.Seconds()))
		inWindow := math.Max(0, math.Min(g.to.Seconds(), w1)-math.Max(g.from.Seconds(), w0))
		covers := win > 0 && inWindow > haltShare*win
		if d < threshold && !(covers && d >= 2*median) { // at the chain's own pace, a gap is no stall
			continue
		}
		st := report.Stall{FromS: round1(g.from.Seconds()), ToS: round1(g.to.Seconds()), DurationS: round1(d.Seconds()), Ongoing: i == len(gaps)-1 && g.to == end}
		s.Stalls = append(s.Stalls, st)
		msg := fmt.Sprintf("no block for %.1f s from t=%.1f s", st.DurationS, st.FromS)
		switch {
		case st.Ongoing && covers:
			s.Halted = fmt.Sprintf("no block for %.1f s from t=%.1f s until the run ended: %.0f%% of the steady window", st.DurationS, st.FromS, 100*inWindow/win)
			msg += " (none since)"
		case st.Ongoing:
			msg += " (none since)"
		case covers:
			msg += fmt.Sprintf(": %.0f%% of the steady window, whose figures rest on the blocks around it", 100*inWindow/win)
		}
		s.Warnings = append(s.Warnings, msg)
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// judgeGenerator decides who held the load back when the open model sent
// fewer than scheduled or sent late, from measurements: the workers' busy
// time and how much of it went to waiting for answers, the senders'
// windows, and the CPU of the generator and of the machine (docs/metrics.md,
// "Who could not keep up"). Only a generator short of capacity sets Limited.
func (r *summarizer) judgeGenerator(s *report.Summary, win float64) {
	st := r.rec.Steady
	if win == 0 || st.Offered == 0 {
		return
	}
	g := &s.Generator
	windowFull := float64(st.WindowWaits) > 0.01*float64(st.Offered)
	connsBusy := float64(st.ConnWaits) > 0.01*float64(st.Offered)
	lagP99 := s.LatencyMs.ScheduleLag.P99
	var why string
	if r.sc.Load.Model == scenario.Open {
		warm := r.sc.Load.Warmup.D()
		want := r.profile.Cumulative(warm+time.Duration(win*float64(time.Second))) - r.profile.Cumulative(warm)
		// Invalid payments are sent too: they are part of the schedule.
		if sent := st.Sent + measure.Sum(st.InvalidSent); want > 0 && float64(sent) < 0.97*want {
			why = fmt.Sprintf("it sent %d of %.0f scheduled payments in the steady window", sent, want)
			s.Shortfall = &report.Shortfall{Scheduled: int64(math.Round(want)), Sent: sent, Unsent: s.Unsent}
		}
	}
	backpressure := windowFull || connsBusy
	if why == "" && lagP99 > 100 && !backpressure { // late because it waited: the warnings below say for what
		why = fmt.Sprintf("schedule lag p99 was %.0f ms", lagP99)
	}
	usable := g.Cores
	if g.Procs > 0 && g.Procs < usable {
		usable = g.Procs
	}
	cpuBound := g.CPUPercent > 90*float64(usable)
	if why == "" && cpuBound {
		why = fmt.Sprintf("it used %.0f%% CPU on %d cores", g.CPUPercent, usable)
	}
	workers := fmt.Sprintf("%d connection(s)", g.Workers)
	if g.Lanes > 0 {
		workers = fmt.Sprintf("%d lane(s) (one batch in flight each)", g.Workers)
	}
	saturated := g.BusyPercent >= 90
	var by, warn string
	switch {
	case why == "":
		if connsBusy && g.Lanes > 0 {
			larger := "the target's answers (RPC/CheckTx) were the larger part"
			if g.WaitingPercent < 50 {
				larger = "building and recording payments in the lane was the larger part: the generator's own work"
			}
			warn = fmt.Sprintf("%d due payments waited for their lane's previous batch to be answered (%s, busy %.0f%% of the load, %.0f%% of that waiting for the target's answers; ack p50 %.0f ms): %s; their latencies include the wait (send_interval 0 sends each payment on its own over the connections)",
				st.ConnWaits, workers, g.BusyPercent, g.WaitingPercent, s.LatencyMs.Ack.P50, larger)
		} else if connsBusy {
			warn = connectionsWarning(r.sc.Load, g, st.ConnWaits, s.LatencyMs.Ack.P50)
		} else if windowFull {
			warn = fmt.Sprintf("senders' in-flight windows were full for %d payments: the system confirmed slower than offered (backpressure, not a generator limit)", st.WindowWaits)
		}
	case windowFull:
		by = "senders_windows"
		warn = fmt.Sprintf("%s: senders' in-flight windows were full for %d payments; the system confirmed slower than offered (backpressure, not a generator limit)", why, st.WindowWaits)
	case cpuBound:
		by = "generator_cpu"
	case saturated && g.WaitingPercent >= 50:
		by = "target"
		warn = fmt.Sprintf("%s: the generator's %s were busy %.0f%% of the load, %.0f%% of that waiting for the target's answers (ack p50 %.0f ms): the target answered slower than payments were due, not a generator limit", why, workers, g.BusyPercent, g.WaitingPercent, s.LatencyMs.Ack.P50)
		if r.sc.Load.Model == scenario.Open {
			warn += queuesGrew(r.sc.Load, g)
		}
	case saturated && g.CPUPercent < 25:
		// Busy without CPU and without waiting for answers: held up by
		// the system (a full mempool, a chain not committing), not short of
		// capacity (issue 34: find-max blamed the generator at 1% CPU).
		by = "target"
		warn = fmt.Sprintf("%s: the generator's %s were busy %.0f%% of the load while it used only %.0f%% of one core: they were held up by the system under test, not short of capacity", why, workers, g.BusyPercent, g.CPUPercent)
	case saturated:
		by = "generator_workers"
	case connsBusy: // idle on the whole, but waiting for the target when it mattered (a stall)
		by = "target"
		warn = fmt.Sprintf("%s: %d due payments waited for the target's answers (the generator's %s, busy %.0f%% of the load; ack p99 %.0f ms): the target answered too slowly at times, not a generator limit", why, st.ConnWaits, workers, g.BusyPercent, s.LatencyMs.Ack.P99)
	case g.CPUPercent < 50:
		by = "machine_cpu"
		g.Starved = true
		warn = fmt.Sprintf("the generator sent late (%s) while using only %.0f%% of one core, the machine being %.0f%% busy (of %d cores): it was starved of CPU by the rest of the machine (the nodes), not short of capacity; latencies count from the intended times, so they include the delay",
			why, g.CPUPercent, g.MachineCPUPercent, g.Cores)
	default:
		by = "generator_cpu"
	}
	switch by {
	case "generator_workers":
		g.Limited = true
		warn = fmt.Sprintf("the load generator, not the system under test, was limiting: %s; its %s were busy %.0f%% of the load and only %.0f%% of that waiting for answers: building, signing and recording payments was the limit; the figures understate what the system can do", why, workers, g.BusyPercent, g.WaitingPercent)
		if g.Lanes > 0 && g.Procs > 0 && g.Lanes >= g.Procs {
			// Lanes grow to the cores (dispatch/grow.go): none was left.
			warn += fmt.Sprintf("; its lanes already ran on every core it may use (GOMAXPROCS %d): more cores, or payments signed ahead (mode presigned) when it signs live, send more", g.Procs)
		}
	case "generator_cpu":
		g.Limited = true
		if cpuBound {
			warn = "the load generator, not the system under test, was limiting: " + why + "; the figures understate what the system can do"
		} else {
			warn = fmt.Sprintf("the load generator, not the system under test, was limiting: %s (its %s were busy only %.0f%% of the load: the dispatcher fell behind, at %.0f%% of one core); the figures understate what the system can do", why, workers, g.BusyPercent, g.CPUPercent)
		}
	}
	if s.Shortfall != nil {
		s.Shortfall.By, s.Shortfall.Why = by, warn
	}
	g.Warning = warn
}

// byKind is each payment kind's steady figures (a mix), or nil. Each
// kind's committed/s is its share of the headline's committed_tps, which
// for a chain rests on the window's blocks: a count over the window's
// seconds disagreed with it beside it (entry 33/s of 49/s committed, all
// entries, with 3 s blocks).
func byKind(iv *measure.Interval, win, committedTPS float64) map[string]report.KindFigures {
	c := &iv.Counts
	if len(c.SentByKind) == 0 && len(c.CommittedByKind) == 0 {
		return nil
	}
	all := measure.Sum(c.CommittedByKind)
	rate := func(n int64) float64 {
		if all > 0 {
			return committedTPS * float64(n) / float64(all)
		}
		return float64(n) / win
	}
	out := map[string]report.KindFigures{}
	for _, m := range []map[string]int64{c.SentByKind, c.CommittedByKind, c.FailedByKind} {
		for k := range m {
			f := report.KindFigures{Sent: c.SentByKind[k], Committed: c.CommittedByKind[k], Failed: c.FailedByKind[k],
				CommittedTPS: rate(c.CommittedByKind[k])}
			if h := iv.CommitByKind[k]; h != nil && h.TotalCount() > 0 {
				f.CommitMs = measure.Summarize(h)
			}
			out[k] = f
		}
	}
	return out
}

// connectionsWarning says that due payments waited for connections busy
// waiting for the target's answers, and whether more could have helped:
// they grow up to load.max_connections, so waits below it came while they
// grew.
func connectionsWarning(l scenario.Load, g *report.Generator, waits int64, ackP50 float64) string {
	most := l.MostConnections()
	head := fmt.Sprintf("%d due payments waited for connections busy waiting for the target's answers (ack p50 %.0f ms)", waits, ackP50)
	switch {
	case g.Workers >= most && most > l.Connections:
		return fmt.Sprintf("%s, while the connections grew from %d to %d, the most load.max_connections allows: their latencies include the wait; more connections offer more only if the target answers faster in parallel", head, l.Connections, g.Workers)
	case g.Workers >= most:
		return fmt.Sprintf("%s; all %d were busy (load.max_connections): the target's RPC/CheckTx was the limit, not the generator; more connections may offer more", head, g.Workers)
	case g.Workers > l.Connections:
		return fmt.Sprintf("%s, while the connections grew from %d to %d to keep up: their latencies include the wait", head, l.Connections, g.Workers)
	}
	return fmt.Sprintf("%s at times, too briefly or too few for the %d connections to grow (they grow when over half their time in half a second goes to waiting for answers and over 1%% of due payments wait; a sender's payments keep to one connection, in order)", head, g.Workers)
}

// queuesGrew says how far the lanes or connections grew, for a load that
// waited on them, or what shows whether the target answers faster in
// parallel.
func queuesGrew(l scenario.Load, g *report.Generator) string {
	if g.Lanes > 0 {
		grew := ""
		if g.LanesStart > 0 {
			grew = fmt.Sprintf("; the lanes grew from %d to %d", g.LanesStart, g.Workers)
		}
		return grew + "; more endpoints, or send_interval 0 (each payment on its own over the connections), show whether it answers faster in parallel"
	}
	switch {
	case g.Workers >= l.MostConnections():
		return fmt.Sprintf("; all %d connections it may open were in use (load.max_connections): more show whether it answers faster in parallel", g.Workers)
	case g.ConnectionsStart > 0:
		return fmt.Sprintf("; the connections grew from %d to %d", g.ConnectionsStart, g.Workers)
	}
	return ""
}

// steadyBlocksInto writes the steady window's blocks' aggregates.
func (ls *loadState) steadyBlocksInto(b *report.Blocks) {
	n := ls.steadyBlocks
	if n == 0 {
		return
	}
	b.Steady, b.SteadyBytesMax = n, ls.steadyBytesMax
	b.SteadyBytes = math.Round(float64(ls.steadyBytes) / float64(n))
	b.SteadyGas = math.Round(float64(ls.steadyGas) / float64(n))
	b.SteadyTxs, b.SteadyTxsMin, b.SteadyTxsMax = math.Round(10*float64(ls.steadyTxs)/float64(n))/10, ls.steadyTxsMin, ls.steadyTxsMax
}
