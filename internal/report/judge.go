package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// Cause is a candidate limit of a run (docs/metrics.md, "What limited it").
type Cause string

const (
	CauseDied      Cause = "component_died" // the target or its database stopped answering
	CauseHalt      Cause = "halt"           // the chain made no block for a long stretch
	CauseFault     Cause = "fault"          // a scheduled fault was in the window
	CauseGenerator Cause = "generator"      // tpslab's own CPU or senders could not keep up
	CauseLate      Cause = "generator_late" // tpslab sent late without using its CPU: stopped or descheduled
	CauseRefusals  Cause = "refusals"       // the system refused valid payments
	CauseDatabase  Cause = "database"       // lock waits, deadlocks, retries
	CauseBlocks    Cause = "block_space"    // blocks cannot hold the offered rate
	CauseCPULimit  Cause = "cpu_limit"      // a process at its CPU limit (a cgroup quota, a pod's limit)
	CauseMemLimit  Cause = "memory_limit"   // a process at its memory limit (a cgroup's)
	CauseSystemCPU Cause = "system_cpu"     // the system's processes took the machine's CPU
	CauseTarget    Cause = "target_answers" // the target answered slower than payments were due
	CauseLinks     Cause = "links"          // emulated links between the nodes
	CauseMachine   Cause = "machine"        // other processes or a hypervisor took the CPU
	CauseSystem    Cause = "system"         // none of the above measured: the system itself
)

// order is the dominance of the causes: the first that holds is the limit.
// A component that died or a chain that halted explains everything after
// it; tpslab's own limits come before the system's, because the system's
// figures then describe what tpslab managed to send; the system's own
// evidence (its refusals, its database, its blocks, its CPU, its answers)
// comes before the machine, which explains a shortfall only when nothing
// in the system does.
var order = []Cause{CauseDied, CauseHalt, CauseFault, CauseGenerator, CauseLate, CauseRefusals, CauseDatabase,
	CauseBlocks, CauseCPULimit, CauseMemLimit, CauseSystemCPU, CauseTarget, CauseLinks, CauseMachine}

// Evidence is one row of the run's resource table (the USE method: each
// resource's capacity, utilisation and saturation) as a candidate limit,
// and the figures that decide it.
type Evidence struct {
	Cause Cause `json:"cause"` // the class of resource it is
	// Resource names it within its class (block_bytes, node0.cpu_limit,
	// db_connections); "" for a class of one.
	Resource string `json:"resource,omitempty"`
	Holds    bool   `json:"holds"`   // saturated, or the class's evidence held
	Figures  string `json:"figures"` // what supports it, or why it was set aside
	// Capacity, in Unit, where it has one; Utilisation is the share of it
	// used over the steady window, Saturation what waited for it (a queue's
	// mean, a throttled share).
	Capacity    float64 `json:"capacity,omitempty"`
	Unit        string  `json:"unit,omitempty"`
	Utilisation float64 `json:"utilisation,omitempty"`
	Saturation  float64 `json:"saturation,omitempty"`
	// Absent: the run had nothing of the kind (no fault, no database, no
	// links): not shown among the candidates set aside.
	Absent bool `json:"absent,omitempty"`
}

// Judgement is the run's outcome and what limited it, from the evidence.
// A run's end writes it into result.json (Seal); readers print it as
// stored.
type Judgement struct {
	Outcome Outcome `json:"outcome"`
	// Limit is the first candidate, in order, that holds; Cause is "" when
	// the run kept up.
	Limit Evidence `json:"limit"`
	// Considered is every candidate, in order: the resource table.
	Considered []Evidence `json:"resources"`
	// Headline is the run in one sentence, as its end printed it.
	Headline string `json:"headline,omitempty"`
	// Limits is the version of the thresholds' table (T) it was judged
	// with, By the tpslab version that judged.
	Limits int    `json:"thresholds_version,omitempty"`
	By     string `json:"judged_by,omitempty"`
}

// Judge is the run's judgement: the one its end wrote into the result, or,
// for a result without one (a run still going, or written before
// judgements were stored), judged now.
func (r *Result) Judge() Judgement {
	if r.Judgement != nil {
		return *r.Judgement
	}
	return r.judge()
}

// Seal judges the run with this version's thresholds and writes the
// judgement and its headline into the result: what every reader prints.
// By is the version that judges.
func (r *Result) Seal(by string) Judgement {
	r.Judgement = nil
	j := r.judge()
	r.Judgement = &j
	j.Headline, j.Limits, j.By = r.Verdict(), T.Version, by
	r.Judgement = &j
	return j
}

// judge decides what the system did with the valid load offered, and what
// limited it, from the figures the run measured.
func (r *Result) judge() Judgement {
	s := &r.Summary
	ev := r.evidence()
	j := Judgement{Considered: ev}
	for _, e := range ev {
		if e.Holds {
			j.Limit = e
			break
		}
	}
	if r.Network != nil && r.Network.Reported == "sink" && s.Shortfall == nil {
		// Nothing commits by design: what can limit the sending is all
		// there is to name. A sink that could not take what was due (a
		// slow stand-in target) is judged as any target that fell behind.
		j.Outcome = OutcomeSink
		if c := j.Limit.Cause; c != CauseGenerator && c != CauseLate && c != CauseMachine && c != CauseDied {
			j.Limit = Evidence{}
		}
		return j
	}
	switch {
	case j.Limit.Cause == CauseDied:
		j.Outcome = OutcomeDied
	case j.Limit.Cause == CauseHalt:
		j.Outcome = OutcomeHalted
	case s.Offered == 0:
		j.Outcome = OutcomeNoLoad
	case s.Steady.DurationS == 0:
		j.Outcome = OutcomeNoSteady
	case r.keptUp() && j.Limit.Cause != CauseLate && j.Limit.Cause != CauseGenerator:
		j.Outcome, j.Limit = OutcomeKeptUp, Evidence{}
	case j.Limit.Cause == CauseGenerator || j.Limit.Cause == CauseLate:
		j.Outcome = OutcomeGenerator
	case j.Limit.Cause == CauseMachine:
		j.Outcome = OutcomeMachine
	case j.Limit.Cause == CauseRefusals:
		j.Outcome = OutcomeRefused
	case s.Shortfall != nil:
		j.Outcome = OutcomeTargetShort
	case s.Committed == 0 && s.Sent > 0:
		j.Outcome = OutcomeNothing
	default:
		j.Outcome = OutcomeFellBehind
	}
	if j.Outcome != OutcomeKeptUp && j.Limit.Cause == "" {
		j.Limit = Evidence{Cause: CauseSystem, Holds: true, Figures: "no other resource tpslab measures was saturated"}
	}
	return j
}

// ValidOfferedTPS is the offered rate of valid payments over the steady
// window: deliberately invalid ones count apart from every payment figure.
func (s *Summary) ValidOfferedTPS() float64 {
	if s.InvalidOfferedTPS > 0 || s.Offered == 0 {
		return s.OfferedTPS
	}
	// Results written before invalid_offered_tps: the whole run's share.
	return s.OfferedTPS * (1 - float64(measure.Sum(s.InvalidSent))/float64(s.Offered))
}

// CommittedShare is the share of the valid offered load that committed:
// the steady window's rate, lifted by the whole run's count by at most
// countLift (block-aligned rates over a short window wobble by a block;
// a drain that committed what the window did not is no rate: "kept up:
// committed 0.0 of 200 offered").
func (s *Summary) CommittedShare() float64 {
	share := s.RateShare()
	if valid := s.Offered - measure.Sum(s.InvalidSent); valid > 0 {
		// A block's worth of the window at least: a window of a few long
		// blocks (factomd's 10 s) quantises its rate by that much.
		lift := countLift
		iv := s.BlocksSummary.IntervalMsMedian
		if iv == 0 {
			iv = s.BlocksSummary.IntervalMsMean
		}
		if w := s.Steady.DurationS; w > 0 {
			lift = math.Max(lift, iv/1000/w)
		}
		if s.ValidOfferedTPS() <= 0 { // no rate offered over a window: the count is all there is
			lift = 1
		}
		share = math.Max(share, math.Min(share+lift, float64(s.Committed)/float64(valid)))
	}
	return share
}

// countLift bounds what the whole run's count adds to the window's share.
const countLift = 0.1

// RateShare is the steady window's committed rate over the valid offered
// rate: the share the headline prints.
func (s *Summary) RateShare() float64 {
	if off := s.ValidOfferedTPS(); off > 0 {
		return s.CommittedTPS / off
	}
	return 0
}

// keptUp: at least T.KeptUp of the valid offered load committed, few
// expired, and commit latency that did not grow.
func (r *Result) keptUp() bool {
	s := &r.Summary
	return s.CommittedShare() >= T.KeptUp && float64(s.Expired) <= T.ExpiredShare*float64(s.Sent) && r.latencyGrew() == "" && r.backlogGrew() == ""
}

// evidence gathers every candidate limit, in order.
func (r *Result) evidence() []Evidence {
	s := &r.Summary
	g := &s.Generator
	out := make([]Evidence, 0, len(order))
	add := func(c Cause, holds bool, format string, a ...any) {
		out = append(out, Evidence{Cause: c, Holds: holds, Figures: fmt.Sprintf(format, a...)})
	}
	// A component that died.
	died, how := r.died()
	add(CauseDied, died, "%s", how)
	// A halt: no block over a quarter of the window, against the chain's
	// own block interval, or the run ended so.
	out = append(out, r.haltEvidence())
	// Scheduled faults.
	if len(s.Faults) > 0 {
		names := make([]string, len(s.Faults))
		for i, f := range s.Faults {
			names[i] = fmt.Sprintf("%s (%.1f..%.1f s: %.0f tx/s before, %.0f during)", f.Fault, f.StartS, f.EndS, f.BeforeTPS, f.DuringTPS)
		}
		add(CauseFault, true, "%s", strings.Join(names, "; "))
	} else {
		out = append(out, Evidence{Cause: CauseFault, Figures: "no fault scheduled", Absent: true})
	}
	// tpslab itself.
	usable := float64(max(1, g.Cores))
	if g.Procs > 0 && float64(g.Procs) < usable {
		usable = float64(g.Procs)
	}
	machine := r.machineEvidence()
	genShort := g.Limited || (s.Shortfall != nil && (s.Shortfall.By == "generator_cpu" || s.Shortfall.By == "generator_workers"))
	lag := s.LatencyMs.ScheduleLag.P99
	switch {
	case genShort && g.CPUPercent < T.GeneratorCore*100 && machine.Holds:
		add(CauseGenerator, false, "it sent short at %.0f%% of one core while the rest of the machine was busy: not its own capacity", g.CPUPercent)
	case genShort:
		add(CauseGenerator, true, "tpslab used %.0f%% CPU of %.0f core(s), its senders busy %.0f%% (%.0f%% of that waiting for answers)", g.CPUPercent, usable, g.BusyPercent, g.WaitingPercent)
	default:
		add(CauseGenerator, false, "tpslab used %.0f%% of one core; sent %s of %s offered tx/s", g.CPUPercent, thousands(s.SentTPS), thousands(s.ValidOfferedTPS()))
	}
	starved := s.Shortfall != nil && s.Shortfall.By == "machine_cpu"
	// Sent late without using its CPU: it did not run. On a busy machine
	// that is the machine's doing, unless the delay is longer than
	// contention makes (T.LagStoppedMs): then it was stopped.
	late := (lag >= T.LagLateMs || starved) && g.CPUPercent < T.GeneratorCore*100*usable && !r.waitedForTarget() && (!machine.Holds || lag >= T.LagStoppedMs)
	// Its own clock stopped: it did not run, whatever else its payments
	// waited for (a window fills behind a stopped sender too).
	paused := g.LongestPauseMs >= T.PauseMs && lag >= T.LagLateMs
	switch {
	case paused:
		add(CauseLate, true, "tpslab itself did not run for %s over the load (the longest stretch %s: its own 100 ms clock stopped, as a stopped process or a paused machine's does); schedule lag p99 %s, and every latency includes the delay",
			fmtMs(g.PausedS*1000), fmtMs(g.LongestPauseMs), fmtMs(lag))
	case late && machine.Holds:
		add(CauseLate, true, "schedule lag p99 %s while tpslab used %.0f%% of one core: longer than a busy machine delays a process, it was stopped; every latency includes the delay", fmtMs(lag), g.CPUPercent)
	case late:
		add(CauseLate, true, "schedule lag p99 %s while tpslab used %.0f%% of one core on a quiet machine: it was stopped or descheduled, and every latency includes the delay", fmtMs(lag), g.CPUPercent)
	default:
		add(CauseLate, false, "schedule lag p99 %s", fmtMs(lag))
	}
	// The system's refusals, valid payments only.
	if s.RejectRate >= T.Refused {
		add(CauseRefusals, true, "%.1f%% of valid payments refused, %s", 100*s.RejectRate, rootReason(s.Rejected))
	} else {
		add(CauseRefusals, false, "%.1f%% of valid payments refused", 100*s.RejectRate)
	}
	// Locks before the pool: connections held waiting for locks fill it.
	out = append(out, r.databaseEvidence())
	out = append(out, r.declaredEvidence(CauseDatabase)...)
	if blocks := r.declaredEvidence(CauseBlocks); len(blocks) > 0 {
		if e, ok := r.blocksAtACap(); ok {
			// A declared limit that holds explains the cap: it is named
			// first; else the cap is the blocks' own.
			if blocks[0].Holds {
				blocks = append(blocks, e)
			} else {
				blocks = append([]Evidence{e}, blocks...)
			}
		}
		out = append(out, blocks...)
	} else {
		out = append(out, r.blockSpaceEvidence())
	}
	out = append(out, r.cpuLimitEvidence()...)
	out = append(out, r.memLimitEvidence()...)
	out = append(out, r.systemCPUEvidence(machine.Holds))
	// A machine others kept busy while the system's processes needed CPU
	// starved the system: it comes before the target's answers, which it
	// slowed. Otherwise the target was slow for its own reasons.
	nodes, _ := s.telemetryMean(".cpu_percent")
	starvedSystem := machine.Holds && g.MachineCPUPercent >= T.MachineBusyPct && nodes >= T.Others*100*float64(max(1, g.Cores))
	if starvedSystem {
		machine.Figures += fmt.Sprintf(", while the system's processes used %.0f%% and needed more", nodes)
		out = append(out, machine)
	}
	// The target's answers.
	switch {
	case s.Shortfall != nil && s.Shortfall.By == "senders_windows":
		e := Evidence{Cause: CauseTarget, Resource: "senders_windows", Holds: true, Figures: fmt.Sprintf("senders' in-flight windows (workload.window) were full for %s payments: each waited for its sender's earlier payments to commit (commit p50 %s, p99 %s)",
			thousands(float64(s.WindowWaits)), fmtMs(s.LatencyMs.Commit.P50), fmtMs(s.LatencyMs.Commit.P99))}
		// Little's law: so many in flight, each for a commit's time.
		// Little's law: so many in flight, each for a commit's time from
		// its actual send (the window's wait left out).
		held := s.LatencyMs.CommitUncorrected.P50
		if senders, window := r.windows(); senders > 0 && window > 0 && held > 0 {
			most := float64(senders*window) / (held / 1000)
			e.Capacity, e.Unit = float64(senders*window), "payments in flight"
			e.Figures += fmt.Sprintf("; %d senders × window %d = %s payments in flight at most, which at a commit p50 from send of %s carry about %s a second against %s offered (more senders or a larger window carry more)",
				senders, window, count(int64(senders*window)), fmtMs(held), thousands(most), thousands(s.ValidOfferedTPS()))
		}
		out = append(out, e)
	case r.waitedForTarget():
		add(CauseTarget, true, "tpslab's %d sender(s) were busy %.0f%% of the load, %.0f%% of that waiting for the target's answers (ack p50 %s, p99 %s)", g.Workers, g.BusyPercent, g.WaitingPercent, fmtMs(s.LatencyMs.Ack.P50), fmtMs(s.LatencyMs.Ack.P99))
	default:
		add(CauseTarget, false, "ack p50 %s; senders busy %.0f%%, %.0f%% of that waiting", fmtMs(s.LatencyMs.Ack.P50), g.BusyPercent, g.WaitingPercent)
	}
	out = append(out, r.linksEvidence())
	if !starvedSystem {
		out = append(out, machine)
	}
	return out
}

// linksEvidence: the emulated links limit a run only with figures that
// show it — a link near its bandwidth, links resetting connections, the
// process that emulates them out of CPU, or round trips long beside the
// block interval (a block waits on several of them). Links merely present
// are set aside with what they carried.
func (r *Result) linksEvidence() Evidence {
	s := &r.Summary
	e := Evidence{Cause: CauseLinks}
	if len(s.Links) == 0 {
		e.Figures, e.Absent = "no emulated links", true
		return e
	}
	var busiest, slowest LinkStat
	use := -1.0
	for _, l := range s.Links {
		if l.RateKbit == 0 {
			l.RateKbit = conditionsRate(l.Conditions) // a result from before rate_kbit
		}
		if l.RateKbit > 0 {
			if u := l.MaxBytesPerS / (float64(l.RateKbit) * 125); u > use {
				busiest, use = l, u
			}
		}
		if l.RTTMs > slowest.RTTMs {
			slowest = l
		}
		if l.ResetProb > 0 && !e.Holds {
			e.Holds, e.Figures = true, fmt.Sprintf("link %s resets %.0f%% of its connections", l.Name, 100*l.ResetProb)
		}
	}
	cpu, measured := s.Telemetry["links.cpu_percent"]
	interval := s.BlocksSummary.IntervalMsMean
	switch {
	case e.Holds:
	case use >= T.LinkBusy:
		e.Holds, e.Figures = true, fmt.Sprintf("link %s carried %s/s in its busiest second, %.0f%% of its %s each way", busiest.Name, bytesIEC(busiest.MaxBytesPerS), 100*use, rateText(busiest.RateKbit))
	case measured && cpu.Mean >= T.LinksCPUPct:
		e.Holds, e.Figures = true, fmt.Sprintf("the process that emulates the links used %.0f%% of one core", cpu.Mean)
	case interval > 0 && slowest.RTTMs >= T.LinkRTTShare*interval:
		e.Holds, e.Figures = true, fmt.Sprintf("the slowest link, %s, has a %.0f ms round trip: %.0f%% of the block interval (%.0f ms), which waits on several", slowest.Name, slowest.RTTMs, 100*slowest.RTTMs/interval, interval)
	default:
		figs := fmt.Sprintf("%d emulated link(s)", len(s.Links))
		if slowest.RTTMs > 0 {
			figs += fmt.Sprintf(", round trips up to %.0f ms", slowest.RTTMs)
		}
		if use >= 0 {
			figs += fmt.Sprintf("; the busiest second of the busiest, %s, %s/s: %.1f%% of its %s", busiest.Name, bytesIEC(busiest.MaxBytesPerS), 100*use, rateText(busiest.RateKbit))
		}
		if measured {
			figs += fmt.Sprintf("; their process %.0f%% of one core", cpu.Mean)
		}
		e.Figures = figs
	}
	return e
}

// bytesIEC writes a byte count as the tables do ("1.4 MiB").
func bytesIEC(v float64) string {
	h := human(v, "bytes")
	if strings.HasSuffix(h, "i") {
		return h + "B"
	}
	return h + " B"
}

// conditionsRate reads the rate back from a link's conditions as netem
// writes them ("rtt 5ms, 1gbit"): 0 when none is named.
func conditionsRate(c string) int64 {
	for _, part := range strings.Split(c, ", ") {
		for unit, kbit := range map[string]int64{"gbit": 1_000_000, "mbit": 1000, "kbit": 1} {
			if n, ok := strings.CutSuffix(part, unit); ok {
				if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 {
					return v * kbit
				}
			}
		}
	}
	return 0
}

// rateText writes kbit/s as a person reads a link's rate.
func rateText(kbit int64) string {
	switch {
	case kbit >= 1_000_000:
		return fmt.Sprintf("%g Gbit/s", float64(kbit)/1e6)
	case kbit >= 1000:
		return fmt.Sprintf("%g Mbit/s", float64(kbit)/1e3)
	}
	return fmt.Sprintf("%d kbit/s", kbit)
}

// faultDuring names the faults, if any, for a halt's figures.
func (r *Result) faultDuring() string {
	if len(r.Summary.Faults) == 0 {
		return ""
	}
	var f []string
	for _, x := range r.Summary.Faults {
		f = append(f, x.Fault)
	}
	return "; faults: " + strings.Join(f, ", ")
}

// died says whether the target, or a part of it, stopped answering: the
// run ended target_failed, or the system's answers turned into connection
// failures (a database that died under a service answers 5xx or refuses).
func (r *Result) died() (bool, string) {
	s := &r.Summary
	if strings.HasPrefix(r.EndedBecause, "target_failed") {
		return true, "the run ended " + r.EndedBecause
	}
	// A part that went down and did not come back before the run ended
	// (a scheduled crash comes back: that is a fault).
	down := map[string]Event{}
	var order []string
	for _, e := range r.Events {
		switch e.Kind {
		case "node_down":
			if _, seen := down[e.Target]; !seen {
				order = append(order, e.Target)
			}
			down[e.Target] = e
		case "node_up":
			delete(down, e.Target)
		}
	}
	for _, t := range order {
		e, ok := down[t]
		if !ok || r.faulted(t) {
			continue // a scheduled fault's doing is the fault's candidate
		}
		// A redundant part (one validator of four) may die while the
		// system carries on: then it limited nothing.
		if before, after := r.commitsAround(e.T); after >= 0.5*before && before > 0 {
			return false, fmt.Sprintf("%s went down at t=%.1f s, and the system carried on without it (%.0f tx/s committed after, %.0f before)", t, e.T, after, before)
		}
		if len(r.Series) == 0 && s.CommittedShare() >= T.KeptUp { // a result without its series: the whole run's share
			return false, fmt.Sprintf("%s went down at t=%.1f s, and the system carried on without it (%.0f%% of the offered load committed)", t, e.T, 100*s.CommittedShare())
		}
		return true, fmt.Sprintf("%s went down at t=%.1f s and did not come back (%s)", t, e.T, e.Detail)
	}
	for reason, v := range s.Rejected {
		// Under a scheduled fault (a crashed database), such refusals are
		// the fault's: its candidate weighs them.
		if strings.Contains(reason, "database") && float64(v) > 0.01*float64(max(1, s.Sent)) && len(s.Faults) == 0 {
			return true, fmt.Sprintf("%d payments refused for %s", v, strings.ReplaceAll(reason, "_", " "))
		}
	}
	return false, "every part answered until the end"
}

// faulted says a scheduled fault acted on the part named target.
func (r *Result) faulted(target string) bool {
	for _, f := range r.Summary.Faults {
		for _, part := range strings.Split(f.Fault, ":") {
			if slices.Contains(strings.Split(part, "+"), target) {
				return true
			}
		}
	}
	return false
}

// commitsAround is the committed rate over the 5 s before t and from t to
// the end of the load (the series' seconds, drain left out).
func (r *Result) commitsAround(t float64) (before, after float64) {
	var nb, na, sb, sa float64
	for _, x := range r.Series {
		switch {
		case x.Phase == "drain":
		case x.T <= t && x.T > t-5:
			nb, sb = nb+1, sb+float64(x.Committed)
		case x.T > t+1: // the second it died in is neither
			na, sa = na+1, sa+float64(x.Committed)
		}
	}
	if nb > 0 {
		before = sb / nb
	}
	if na > 0 {
		after = sa / na
	}
	return before, after
}

// waitedForTarget: the senders were busy most of the load, mostly waiting
// for the target's answers, or payments waited for them.
func (r *Result) waitedForTarget() bool {
	s := &r.Summary
	g := &s.Generator
	// Senders' in-flight windows full: each payment waited for an earlier
	// one of its sender to settle, i.e. for the system (a send that lagged
	// for it was not the generator stopped).
	if s.Shortfall != nil && (s.Shortfall.By == "target" || s.Shortfall.By == "senders_windows") {
		return true
	}
	// Payments that waited for room in their sender's window waited for
	// the system's commits: they left late for its sake, not tpslab's
	// (a stopped generator fills no window: nothing commits meanwhile
	// that it waits for).
	// A window's wait lasts a commit at most: a lag far past the commit
	// latency from send is the generator's own (a frozen segment).
	if off := float64(s.Offered); off > 0 && float64(s.WindowWaits) > 0.01*off && s.LatencyMs.ScheduleLag.P99 <= 1.5*s.LatencyMs.CommitUncorrected.P99 {
		return true
	}
	return g.BusyPercent >= 90 && g.WaitingPercent >= 50
}

// machineEvidence: other processes or a hypervisor took the CPU.
func (r *Result) machineEvidence() Evidence {
	g := &r.Summary.Generator
	capacity := 100 * float64(max(1, g.Cores))
	switch {
	case g.StealPercent >= T.StealPct:
		return Evidence{Cause: CauseMachine, Holds: true, Figures: fmt.Sprintf("a hypervisor took %.0f%% of the CPU (steal)", g.StealPercent)}
	case g.MachineCPUPercent >= T.MachineBusyPct && g.OthersCPUPercent >= T.Others*capacity:
		return Evidence{Cause: CauseMachine, Holds: true, Figures: fmt.Sprintf("the machine was %.0f%% busy on %d cores; other processes used %.0f%% of one core, tpslab %.0f%%", g.MachineCPUPercent, g.Cores, g.OthersCPUPercent, g.CPUPercent)}
	}
	return Evidence{Cause: CauseMachine, Figures: fmt.Sprintf("the machine was %.0f%% busy on %d cores, others %.0f%% of one core, steal %.0f%%", g.MachineCPUPercent, g.Cores, g.OthersCPUPercent, g.StealPercent)}
}

// telemetryMean sums the steady means of every metric ending in suffix.
func (s *Summary) telemetryMean(suffix string) (float64, bool) {
	sum, ok := SystemSum(s.Telemetry, suffix, func(st telemetry.Stat) float64 { return st.Mean })
	if st, bare := s.Telemetry[strings.TrimPrefix(suffix, ".")]; bare && strings.HasPrefix(suffix, ".") { // a process named by the metric's own prefix ("db.lock_waits")
		sum, ok = sum+st.Mean, true
	}
	return sum, ok
}

// databaseEvidence: connections waiting for locks, deadlocks, retries.
func (r *Result) databaseEvidence() Evidence {
	s := &r.Summary
	e := Evidence{Cause: CauseDatabase, Resource: "db_locks"}
	waits, okW := s.telemetryMean(".db.lock_waits")
	conns, _ := s.telemetryMean(".db.backends")
	dl, okD := s.telemetryMean(".db.deadlocks")
	retries, okR := s.telemetryMean(".retries")
	if !okW && !okD && !okR {
		e.Figures, e.Absent = "no database telemetry", true
		return e
	}
	var figs []string
	if okW {
		figs = append(figs, fmt.Sprintf("%.1f of %.0f connections waiting for locks", waits, conns))
		e.Holds = e.Holds || (waits >= 1 && waits >= T.LockWaits*conns)
	}
	if okD {
		figs = append(figs, fmt.Sprintf("%.2f deadlocks/s", dl))
		e.Holds = e.Holds || dl >= T.Deadlocks
	}
	if okR && s.CommittedTPS > 0 {
		figs = append(figs, fmt.Sprintf("%.2f retries a payment", retries/s.CommittedTPS))
		e.Holds = e.Holds || retries/s.CommittedTPS >= T.Retries
	}
	e.Figures = strings.Join(figs, ", ")
	if e.Holds {
		e.Figures = "lock contention: " + e.Figures
	}
	return e
}

// blockSpaceEvidence: the chain said, before the load, that its blocks
// cannot hold the offered rate.
func (r *Result) blockSpaceEvidence() Evidence {
	for _, n := range r.Notes {
		if b, ok := strings.CutPrefix(n, "warning: block space: "); ok {
			return Evidence{Cause: CauseBlocks, Holds: true, Figures: b}
		}
	}
	for _, w := range r.Summary.Warnings {
		if b, ok := strings.CutPrefix(w, "block space: "); ok {
			return Evidence{Cause: CauseBlocks, Holds: true, Figures: b}
		}
	}
	b := r.Summary.BlocksSummary
	if b.Count == 0 {
		return Evidence{Cause: CauseBlocks, Figures: "no blocks", Absent: true}
	}
	// What blocks hold, at the intervals the chain made under load (the
	// check before the load knew only the idle interval).
	for _, n := range r.Notes {
		var per int64
		if _, err := fmt.Sscanf(n, "block space: blocks hold at most %d payments", &per); err != nil || per <= 0 || b.IntervalMsMean <= 0 {
			continue
		}
		capacity := float64(per) / (b.IntervalMsMean / 1000)
		off := r.Summary.ValidOfferedTPS()
		e := Evidence{Cause: CauseBlocks, Holds: off > capacity, Figures: fmt.Sprintf("blocks hold at most %d payments and came every %.2f s under load: %.0f payments a second, against %s offered", per, b.IntervalMsMean/1000, capacity, thousands(off))}
		return e
	}
	return Evidence{Cause: CauseBlocks, Figures: fmt.Sprintf("blocks held %.0f payments on average, %d at most", b.TxsMean, b.TxsMax)}
}

// systemCPUEvidence: the system's own processes took most of a busy
// machine.
func (r *Result) systemCPUEvidence(machineBusy bool) Evidence {
	s := &r.Summary
	g := &s.Generator
	nodes, ok := s.telemetryMean(".cpu_percent")
	if !ok {
		return Evidence{Cause: CauseSystemCPU, Figures: "the system's CPU was not measured", Absent: true}
	}
	capacity := 100 * float64(max(1, g.Cores))
	e := Evidence{Cause: CauseSystemCPU, Figures: fmt.Sprintf("the system's processes used %.0f%% of one core (of %.0f)", nodes, capacity)}
	// The system took the CPU itself: most of the machine, or a busy
	// machine that others did not keep busy.
	if nodes >= T.SystemCPU*capacity || (g.MachineCPUPercent >= T.MachineBusyPct && !machineBusy && nodes >= 0.5*g.MachineCPUPercent/100*capacity) {
		e.Holds = true
		e.Figures = fmt.Sprintf("the system's processes used %.0f%% of one core of %.0f on a machine %.0f%% busy; %s", nodes, capacity, g.MachineCPUPercent, busiest(s.Telemetry))
	}
	return e
}

// busiest names the process that used the most CPU.
func busiest(tel map[string]telemetry.Stat) string {
	name, most := "", -1.0
	keys := make([]string, 0, len(tel))
	for k := range tel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p, ok := strings.CutSuffix(k, ".cpu_percent"); ok && !strings.HasPrefix(k, "links.") && tel[k].Mean > most {
			name, most = p, tel[k].Mean
		}
	}
	return fmt.Sprintf("the busiest, %s, %.0f%%", name, most)
}

// rootReason names the refusals' cause: sequence refusals follow another
// refusal of the same sender (its next payments carry sequences the chain
// never saw), so when others are present the top other reason is named.
func rootReason(m map[string]int64) string {
	other := map[string]int64{}
	var seq int64
	for k, v := range m {
		if strings.Contains(k, "sequence") {
			seq += v
		} else {
			other[k] = v
		}
	}
	if top := topReason(other); top != "" && seq > 0 {
		return fmt.Sprintf("first %s (%d); the %d sequence refusals that followed are its consequence", strings.ReplaceAll(top, "_", " "), other[top], seq)
	}
	top := topReason(m)
	return fmt.Sprintf("mostly %s (%d)", strings.ReplaceAll(top, "_", " "), m[top])
}

// resourceWords name the resources of a class of several in words.
var resourceWords = map[string]string{"senders_windows": "the senders' windows", BlockBytes: "block bytes", BlockGas: "block gas", "db_connections": "the database's connections", "db_locks": "the database"}

// Phrase is the limit in words, with its figures.
func (e Evidence) Phrase() string {
	if e.Resource != "" && e.Cause != CauseHalt {
		what := resourceWords[e.Resource]
		switch {
		case what != "":
		case e.Cause == CauseCPULimit:
			what = strings.TrimSuffix(e.Resource, ".cpu_limit") + "'s CPU limit"
		case e.Cause == CauseMemLimit:
			what = strings.TrimSuffix(e.Resource, ".memory_limit") + "'s memory limit"
		default:
			what = strings.ReplaceAll(e.Resource, "_", " ")
		}
		return what + " (" + e.Figures + ")"
	}
	what := map[Cause]string{
		CauseDied: "a component died", CauseHalt: "the chain halted", CauseFault: "the scheduled fault",
		CauseGenerator: "the load generator", CauseLate: "the load generator sent late",
		CauseRefusals: "the system's refusals", CauseDatabase: "the database", CauseBlocks: "block space", CauseCPULimit: "a CPU limit", CauseMemLimit: "a memory limit",
		CauseSystemCPU: "the system's CPU", CauseTarget: "the target's answers", CauseLinks: "the emulated links",
		CauseMachine: "the machine", CauseSystem: "the system under test",
	}[e.Cause]
	if e.Figures == "" {
		return what
	}
	return what + " (" + e.Figures + ")"
}

// SetAside lists the candidates that did not hold, each with its figures.
func (j Judgement) SetAside() []string {
	var out []string
	for _, e := range j.setAside() {
		out = append(out, fmt.Sprintf("not %s: %s", e.name(), e.Figures))
	}
	return out
}

// SetAsideNames are SetAside's candidates by name alone.
func (j Judgement) SetAsideNames() []string {
	var out []string
	for _, e := range j.setAside() {
		out = append(out, e.name())
	}
	return out
}

func (j Judgement) setAside() []Evidence {
	var out []Evidence
	for _, e := range j.Considered {
		if !e.Holds && !e.Absent {
			out = append(out, e)
		}
	}
	return out
}

// name is a candidate's short name: its resource, else its cause.
func (e Evidence) name() string {
	name := string(e.Cause)
	if e.Resource != "" && e.Cause != CauseHalt {
		name = e.Resource
	}
	return strings.ReplaceAll(name, "_", " ")
}

// Also lists the candidates that held besides the limit.
func (j Judgement) Also() []string {
	var out []string
	for _, e := range j.Considered {
		if e.Holds && (e.Cause != j.Limit.Cause || e.Resource != j.Limit.Resource) {
			out = append(out, e.Phrase())
		}
	}
	return out
}

// windows is the scenario's senders and their in-flight window.
func (r *Result) windows() (senders, window int) {
	b, err := json.Marshal(r.Scenario)
	if err != nil {
		return 0, 0
	}
	var sc struct {
		Workload struct {
			Senders int `json:"senders"`
			Window  int `json:"window"`
		} `json:"workload"`
	}
	if json.Unmarshal(b, &sc) != nil {
		return 0, 0
	}
	return sc.Workload.Senders, sc.Workload.Window
}
