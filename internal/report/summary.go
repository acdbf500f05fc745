package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// Summary is the run's headline figures. Rates and latency percentiles are
// over the steady window (warm-up and drain excluded); counts are over the
// whole run.
type Summary struct {
	measure.Counts
	RejectedTotal int64   `json:"rejected_total"`
	UnackedTotal  int64   `json:"unacked_total"`
	FailedTotal   int64   `json:"committed_failed_total"`
	CommittedTPS  float64 `json:"committed_tps"`
	// OfferedTPS is the valid payments offered a second over the steady
	// window; InvalidOfferedTPS the deliberately invalid ones, apart.
	OfferedTPS        float64   `json:"offered_tps"`
	InvalidOfferedTPS float64   `json:"invalid_offered_tps,omitempty"`
	SentTPS           float64   `json:"sent_tps"`
	AcceptedTPS       float64   `json:"accepted_tps"`
	RejectRate        float64   `json:"reject_rate"` // rejected / sent, whole run
	Steady            Steady    `json:"steady"`
	LatencyMs         Latency   `json:"latency_ms"`
	Generator         Generator `json:"generator"`
	// Cost is what each committed payment cost the system and tpslab.
	Cost          Cost   `json:"cost"`
	BlocksSummary Blocks `json:"blocks"`
	// Shortfall is set when the offered rate was not sent.
	Shortfall *Shortfall `json:"shortfall,omitempty"`
	// Stalls are stretches without blocks far longer than the usual block
	// interval; Halted is set when they cover more than a quarter of the
	// steady window.
	// MempoolBefore is how many transactions the target's mempool held
	// when the load began (-1: it has none tpslab can read).
	MempoolBefore int      `json:"mempool_before"`
	Stalls        []Stall  `json:"stalls,omitempty"`
	LongestGapS   float64  `json:"longest_block_gap_s"`
	Halted        string   `json:"halted,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
	// Samples are the system's own words, one per reason.
	Samples map[string]string `json:"samples,omitempty"`
	// Telemetry is what was read from inside the system over the steady
	// window, by metric name (docs/metrics.md).
	Telemetry map[string]telemetry.Stat `json:"telemetry,omitempty"`
	// Profiles summarise the Go profiles taken from the nodes over the
	// steady window (--profile).
	Profiles *Profiles `json:"profiles,omitempty"`
	// SlowestStatements are the database statements that took the most
	// time in all during the run.
	SlowestStatements []telemetry.Statement `json:"slowest_statements,omitempty"`
	// Lost are payments accepted and then neither committed, failed in a
	// block, nor expired: the accounting must leave none.
	Lost int64 `json:"lost"`
	// Faults are the scheduled faults and what each did (docs/faults.md).
	Faults []FaultEffect `json:"faults,omitempty"`
	// Links are the emulated links: configured and measured.
	Links []LinkStat `json:"links,omitempty"`
	// NetCheck is `net check` run after a run with faults.
	NetCheck *NetCheck `json:"net_check,omitempty"`
	// Health is every node's health through the run (docs/health.md).
	Health *Health `json:"health,omitempty"`
	// ByKind are the steady window's figures of each payment kind of a mix
	// (workload.mix); thresholds and compare name them as
	// committed_tps{kind=K}.
	ByKind map[string]KindFigures `json:"by_kind,omitempty"`
	// Units are the steady window's throughput in the system's own units,
	// as its kind counts them (Factom's EPS, TPS and MPS).
	Units []string `json:"units,omitempty"`
}

// Kinds are ByKind's kinds in name order.
func (s *Summary) Kinds() []string {
	ks := make([]string, 0, len(s.ByKind))
	for k := range s.ByKind {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// KindFigures are one payment kind's counts over the steady window, its
// committed rate (committed / the window's length) and its commit latency
// (from intended send, as latency_ms.commit).
type KindFigures struct {
	Sent         int64               `json:"sent"`
	Committed    int64               `json:"committed"`
	Failed       int64               `json:"committed_failed"`
	CommittedTPS float64             `json:"committed_tps"`
	CommitMs     measure.Percentiles `json:"commit_ms"`
}

// FaultEffect is one fault as it happened and what it did to the chain.
// Throughputs are committed payments per second by commit time.
type FaultEffect struct {
	Fault  string  `json:"fault"`   // as given: AT:ACTION:TARGET[:VALUE][:FOR]
	StartS float64 `json:"start_s"` // when it was done, seconds since the load began
	EndS   float64 `json:"end_s"`   // when it was undone
	Error  string  `json:"error,omitempty"`
	// BeforeTPS is over the 10 s before the fault (less if the load was
	// younger), DuringTPS while it lasted, AfterTPS from its end to the
	// load's end.
	BeforeTPS float64 `json:"before_tps"`
	DuringTPS float64 `json:"during_tps"`
	AfterTPS  float64 `json:"after_tps"`
	// LongestGapS is the longest time without a block from the fault's
	// start to the load's end.
	LongestGapS float64 `json:"longest_gap_s"`
	// FirstBlockS is the time from the fault's end to the first block seen
	// after it (-1: none before the load ended); absent for systems
	// without blocks.
	FirstBlockS *float64 `json:"first_block_s,omitempty"`
	// RecoveryS is the time from the fault's end until committed
	// throughput is back at 90% of BeforeTPS, sustained over at least 3
	// blocks and 3 s after the first block back (3 s means by second for
	// systems without blocks); 0 if it never fell below; -1 if it did not
	// come back before the load ended.
	RecoveryS float64 `json:"recovery_s"`
	// CaughtUpS: a crashed node, from its restart until it reached the
	// others' height (-1: not within the run).
	CaughtUpS *float64 `json:"caught_up_s,omitempty"`
	// Expired are payments that expired from the fault's start to the end.
	Expired int64 `json:"expired"`
	Lost    int64 `json:"lost"` // the run's (Summary.Lost)
}

// LinkStat is one emulated link: what it was set to and what was seen.
type LinkStat struct {
	Name       string  `json:"name"`
	Conditions string  `json:"conditions"`
	RTTMs      float64 `json:"rtt_ms"` // configured round trip
	// RateKbit is the link's bandwidth each way (0: none set, or a result
	// from before it was kept); ResetProb the share of connections it resets.
	RateKbit      int64   `json:"rate_kbit,omitempty"`
	ResetProb     float64 `json:"reset_prob,omitempty"`
	MeasuredRTTMs float64 `json:"measured_rtt_ms"` // probed before the load (median of 5); 0: not measured
	ProbeError    string  `json:"probe_error,omitempty"`
	// BytesPerS is the mean traffic through it, both directions, over the
	// steady window; MaxBytesPerS the busiest second.
	BytesPerS    float64 `json:"bytes_per_s"`
	MaxBytesPerS float64 `json:"max_bytes_per_s"`
}

// NetCheck is the audit of the network after a run with faults.
type NetCheck struct {
	OK bool `json:"ok"`
	// Said is what a clean check means for the kind ("ok: every reserve's
	// credits equal …"); empty in results from before it was kept.
	Said     string   `json:"said,omitempty"`
	Lines    []string `json:"lines,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// Cost is the resources spent per committed payment over the steady
// window; a figure that could not be measured is absent (docs/metrics.md).
type Cost struct {
	// NodeCPUus is the CPU time of the measured system's processes (every
	// local node, service and database; remote nodes through their
	// process_cpu_seconds_total) per committed payment, in microseconds.
	NodeCPUus float64 `json:"node_cpu_us_per_tx,omitempty"`
	// GeneratorCPUus is tpslab's own CPU time per committed payment.
	GeneratorCPUus float64 `json:"generator_cpu_us_per_tx"`
	// WireBytes is the bytes all nodes sent to their peers (every p2p
	// channel, before framing and encryption) per committed payment.
	WireBytes float64 `json:"wire_bytes_per_tx,omitempty"`
	// GossipOverhead is the mempool channel's bytes sent across all peers
	// over the bytes of the committed transactions: how many times each
	// transaction crossed a link.
	GossipOverhead float64 `json:"gossip_overhead,omitempty"`
	// TxBytes is the mean size of a committed transaction.
	TxBytes float64 `json:"tx_bytes,omitempty"`
}

// Profiles summarise Go profiles taken over the steady window.
type Profiles struct {
	// Files are the profiles as written, relative to the run directory.
	Files []string `json:"files"`
	// CPUTop and AllocTop are the functions that used the most CPU and
	// allocated the most bytes themselves (flat), over every profiled node.
	CPUTop   []TopFunction `json:"cpu_top,omitempty"`
	AllocTop []TopFunction `json:"alloc_top,omitempty"`
	// GeneratorCPUTop and GeneratorAllocTop are tpslab's own (its profile
	// is profiles/tpslab.*.pprof).
	GeneratorCPUTop   []TopFunction `json:"generator_cpu_top,omitempty"`
	GeneratorAllocTop []TopFunction `json:"generator_alloc_top,omitempty"`
	// CPUSeconds and AllocBytes are the profiles' totals.
	CPUSeconds float64  `json:"cpu_seconds,omitempty"`
	AllocBytes float64  `json:"alloc_bytes,omitempty"`
	Errors     []string `json:"errors,omitempty"`
}

// TopFunction is one function of a profile and its share of the total.
type TopFunction struct {
	Function string  `json:"function"`
	Percent  float64 `json:"percent"`
}

// Stall is a stretch without blocks.
type Stall struct {
	FromS     float64 `json:"from_s"`
	ToS       float64 `json:"to_s"`
	DurationS float64 `json:"duration_s"`
	Ongoing   bool    `json:"ongoing,omitempty"` // no block came until the run ended
}

// Steady describes the window the rates are computed over.
type Steady struct {
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	Committed int64   `json:"committed"`
	// BlockWindowS is the time between the steady window's first and last
	// blocks, as observed; StallS is block-less time at the window's start
	// or end beyond one usual block interval. committed_tps divides by their
	// sum (docs/metrics.md).
	BlockWindowS float64 `json:"block_window_s"`
	StallS       float64 `json:"stall_s"`
	WarmupS      float64 `json:"warmup_s"`
	DrainS       float64 `json:"drain_s"`
}

// Latency holds the percentiles (ms) of each latency, over the steady window.
type Latency struct {
	Ack               measure.Percentiles `json:"ack"`
	Proposed          measure.Percentiles `json:"proposed,omitempty"` // to its block's proposal, where the chain says (CometBFT)
	Gossiped          measure.Percentiles `json:"gossiped,omitempty"` // to a second node's mempool, sampled, where the chain says (built-in ledger)
	Inclusion         measure.Percentiles `json:"inclusion"`          // equals commit where inclusion is final
	Commit            measure.Percentiles `json:"commit"`
	CommitUncorrected measure.Percentiles `json:"commit_uncorrected"`
	ScheduleLag       measure.Percentiles `json:"schedule_lag"`
}

// Stage is one stage of a payment's way to commit, at p50: how long it
// took after the previous stage.
type Stage struct {
	Name  string
	Ms    float64 // the stage's own time, from the end of the one before
	At    float64 // when it was done, from the intended send (the sum so far)
	Color string
}

// Stages are the p50 times of the stages a payment goes through, each
// from the end of the one before: sent (schedule lag), acknowledged,
// gossiped and proposed (where the chain says), committed. Empty without
// commits.
func (l Latency) Stages() []Stage {
	if l.Commit.Count == 0 {
		return nil
	}
	type mark struct {
		name  string
		at    float64
		color string
	}
	marks := []mark{{"sent", l.ScheduleLag.P50, "#8d99ae"}, {"acknowledged", l.Ack.P50, "#4f6d7a"}}
	if l.Gossiped.Count > 0 {
		marks = append(marks, mark{"gossiped", l.Gossiped.P50, "#e9c46a"})
	}
	if l.Proposed.Count > 0 {
		marks = append(marks, mark{"proposed", l.Proposed.P50, "#c08552"})
	}
	marks = append(marks, mark{"committed", l.Commit.P50, "#2a9d8f"})
	var st []Stage
	prev := 0.0
	for _, m := range marks {
		d := max(m.at-prev, 0)
		prev = max(prev, m.at)
		st = append(st, Stage{Name: m.name, Ms: d, At: prev, Color: m.color})
	}
	return st
}

// Generator describes the load generator's own health.
type Generator struct {
	CPUPercent float64 `json:"cpu_percent"` // of one core, mean over the load
	Cores      int     `json:"cores"`
	// Procs is how many cores tpslab's Go code could run on at once
	// (GOMAXPROCS; below Cores when a low rate needs fewer, see sysmon.Procs).
	Procs int `json:"procs,omitempty"`
	// MachineCPUPercent is how busy the whole machine was over the load, in
	// percent of all its cores (the nodes, when they share it, included).
	MachineCPUPercent float64 `json:"machine_cpu_percent"`
	// StealPercent is the share of all cores' time over the load that a
	// hypervisor gave to other machines (counted in MachineCPUPercent).
	StealPercent float64 `json:"steal_percent"`
	// OthersCPUPercent is the CPU of every process on the machine other than
	// tpslab and the system's processes it measures, in percent of one core
	// (the machine's busy time less those two; the system's own CPU when it
	// runs here unmeasured).
	OthersCPUPercent float64 `json:"others_cpu_percent"`
	// LoadAverage is the machine's 1-minute load average when the load ended.
	LoadAverage float64 `json:"load_average"`
	// MachineBusy says why the machine itself, not the system under test,
	// may have been the limit ("" when it was not): other processes or a
	// hypervisor took the CPU the system and tpslab needed.
	MachineBusy string `json:"machine_busy,omitempty"`
	Limited     bool   `json:"limited"`
	// Starved: the generator sent late because the machine's CPU was taken
	// by others (the system under test), not because it lacked capacity.
	Starved bool `json:"starved,omitempty"`
	// Lanes is how many gathering lanes sent batches (one per endpoint, one
	// batch in flight each); 0 when each payment went on its own over the
	// scenario's connections.
	Lanes int `json:"lanes,omitempty"`
	// LanesStart is the lanes the load began with, when it grew: a lane
	// busy with its own work while payments waited for it got company, up to
	// GOMAXPROCS per endpoint (docs/metrics.md, "Gathering").
	LanesStart int `json:"lanes_start,omitempty"`
	// ConnectionsStart is load.connections when the connections grew
	// (each payment on its own): busy waiting for answers while payments
	// waited for them, they grew, up to load.max_connections
	// (docs/metrics.md, "Connections"). Workers is where they ended.
	ConnectionsStart int `json:"connections_start,omitempty"`
	// Workers are the lanes, connections or users that sent. BusyPercent is
	// the mean share of the load each spent sending (its own work plus
	// waiting for answers); WaitingPercent the share of that busy time spent
	// waiting for the target's answers (docs/metrics.md).
	Workers        int     `json:"workers,omitempty"`
	BusyPercent    float64 `json:"busy_percent"`
	WaitingPercent float64 `json:"waiting_percent"`
	// PausedS is how long tpslab did not run at all while it offered the
	// load, in stretches of T.PauseMs or more of its own 100 ms clock
	// (a stopped process, a paused machine); LongestPauseMs the longest.
	// Merged: the most paused segment's.
	PausedS        float64 `json:"paused_s,omitempty"`
	LongestPauseMs float64 `json:"longest_pause_ms,omitempty"`
	Warning        string  `json:"warning,omitempty"`
}

// Shortfall says that the open model sent fewer payments than its schedule
// offered over the steady window (under 97%), and who could not keep up.
type Shortfall struct {
	Scheduled int64 `json:"scheduled"` // due in the steady window
	Sent      int64 `json:"sent"`      // sent in the steady window
	Unsent    int64 `json:"unsent"`    // never sent, whole run
	// By is who could not keep up, from measurements: target (the workers
	// were busy and mostly waiting for its answers), senders_windows (the
	// system confirmed slower than offered), generator_workers (busy and
	// mostly building payments), generator_cpu (the dispatcher fell behind
	// with the workers idle), machine_cpu (the same while the generator
	// used little CPU: the rest of the machine took it).
	By  string `json:"by"`
	Why string `json:"why"`
}

// Phrase is who could not keep up, in words.
func (f *Shortfall) Phrase() string {
	switch f.By {
	case "target":
		return "the target's answers could not keep up"
	case "senders_windows":
		return "the system confirmed slower than offered"
	case "generator_workers":
		return "the generator's senders could not keep up"
	case "generator_cpu":
		return "the generator's CPU could not keep up"
	case "machine_cpu":
		return "the generator was starved of CPU by the rest of the machine"
	}
	return f.By
}

// Blocks summarises the blocks read.
type Blocks struct {
	Count          int     `json:"count"`
	IntervalMsMean float64 `json:"interval_ms_mean"`
	TxsMean        float64 `json:"txs_mean"`
	TxsMax         int     `json:"txs_max"`
	BytesMean      float64 `json:"bytes_mean"`
	// GasPerPayment is the mean gas our committed payments used, from the
	// blocks' results (chains that report gas: Cosmos SDK).
	GasPerPayment float64 `json:"gas_per_payment,omitempty"`
	// IntervalMsMedian is the median interval between blocks as tpslab saw
	// them: the chain's own pace, which a gap is measured against.
	IntervalMsMedian float64 `json:"interval_ms_median,omitempty"`
	// The steady window's blocks: how many, their mean bytes and the mean
	// gas our payments in them used (a block's fill against its capacity).
	Steady         int     `json:"steady_count,omitempty"`
	SteadyBytes    float64 `json:"steady_bytes_mean,omitempty"`
	SteadyBytesMax int     `json:"steady_bytes_max,omitempty"`
	SteadyGas      float64 `json:"steady_gas_mean,omitempty"`
	// SteadyTxs and SteadyTxsMin/Max: the transactions the steady blocks
	// held, mean, fewest and most (blocks all at one count hit a cap).
	SteadyTxs    float64 `json:"steady_txs_mean,omitempty"`
	SteadyTxsMin int     `json:"steady_txs_min,omitempty"`
	SteadyTxsMax int     `json:"steady_txs_max,omitempty"`
}

// Verdict is the run in one sentence: what the system did with the valid
// load offered, and what limited it, with its figures (Judge).
func (r *Result) Verdict() string {
	if r.Judgement != nil && r.Judgement.Headline != "" {
		return r.Judgement.Headline
	}
	var b strings.Builder
	if r.Status == "partial" {
		// Counts of the segments that finished, led by what is missing.
		fmt.Fprintf(&b, "PARTIAL (%s), not a whole run's figures: ", r.EndedBecause)
	} else if why := r.Incomplete(); why != "" {
		return "incomplete: " + why
	}
	s := r.Summary
	if taken := s.InvalidTaken(); len(taken) > 0 {
		fmt.Fprintf(&b, "FINDING: %d deliberately invalid payments were taken (%s); ", measure.Sum(taken), byKey(taken))
	}
	j := r.Judge()
	offered := s.ValidOfferedTPS()
	switch o := j.Outcome; o {
	case OutcomeDied:
		fmt.Fprintf(&b, "a component died (%s); %s committed tx/s over the %.0f s steady window", j.Limit.Figures, thousands(s.CommittedTPS), s.Steady.DurationS)
	case OutcomeHalted:
		fmt.Fprintf(&b, "the chain stopped committing (%s); %s committed tx/s over the %.0f s steady window", j.Limit.Figures, thousands(s.CommittedTPS), s.Steady.DurationS)
	case OutcomeNoLoad:
		fmt.Fprintf(&b, "no load was offered")
	case OutcomeNoSteady:
		fmt.Fprintf(&b, "no steady window: %s committed in all", count(s.Committed))
	case OutcomeNothing:
		if failed := s.FailedTotal; failed > 0 {
			// In blocks, each with a failure: not "none in a block".
			fmt.Fprintf(&b, "committed nothing: %s payments sent over %.0f s; %s of them in blocks, each failed (%s)", count(s.Sent), s.Steady.DurationS, count(failed), byKey(s.Failed))
		} else {
			fmt.Fprintf(&b, "committed nothing: %s payments sent over %.0f s, none in a block", count(s.Sent), s.Steady.DurationS)
		}
	case OutcomeSink:
		fmt.Fprintf(&b, "tpslab sink (it commits nothing: this measures tpslab's own sending): sent %s of %s offered tx/s; ack p99 %s, schedule lag p99 %s",
			thousands(s.SentTPS), thousands(offered), fmtMs(s.LatencyMs.Ack.P99), fmtMs(s.LatencyMs.ScheduleLag.P99))
	default:
		lead := map[Outcome]string{OutcomeKeptUp: "kept up", OutcomeRefused: "refused", OutcomeFellBehind: "fell behind",
			OutcomeGenerator: "generator-limited", OutcomeMachine: "machine busy", OutcomeTargetShort: "fell behind"}[o]
		if j.Limit.Cause == CauseLate {
			lead = "generator sent late" // its figures carry its delay, whatever the system did
		}
		b.WriteString(lead + ": ")
		if f := s.Shortfall; f != nil && o != OutcomeKeptUp {
			fmt.Fprintf(&b, "sent %s of %s offered tx/s (%s never sent); ", thousands(s.SentTPS), thousands(offered), count(f.Unsent))
		}
		if o == OutcomeKeptUp && s.RateShare() < T.KeptUp && offered > 0 {
			// Kept up on the whole run's count, the window's rate quantised
			// by its few long blocks: the counts say so, not the rate.
			valid := s.Offered - measure.Sum(s.InvalidSent)
			iv, _ := r.BlockInterval()
			fmt.Fprintf(&b, "committed %s of %s valid payments offered (the %.0f s steady window of %.1f s blocks counts %s of %s offered tx/s)",
				count(s.Committed), count(valid), s.Steady.DurationS, iv, thousands(s.CommittedTPS), thousands(offered))
		} else {
			b.WriteString(committedOf(&s, offered))
		}
		if o == OutcomeFellBehind || o == OutcomeTargetShort {
			if why := r.behind(); why != "" {
				fmt.Fprintf(&b, " (%s)", why)
			}
		}
		if c := s.LatencyMs.Commit; c.Count > 0 || c.P99 > 0 { // a sink confirms nothing: no commit latency to state
			fmt.Fprintf(&b, "; p99 commit %s", fmtMs(s.LatencyMs.Commit.P99))
		}
	}
	if j.Outcome != OutcomeKeptUp && j.Limit.Cause != "" && j.Outcome != OutcomeDied && j.Outcome != OutcomeHalted {
		fmt.Fprintf(&b, "; limit: %s", j.Limit.Phrase())
	}
	// Nothing rejected is the table's "rejected 0" below: the headline
	// stays within a terminal's 80 columns.
	if s.Sent > 0 && s.RejectedTotal > 0 {
		fmt.Fprintf(&b, "; %.1f%% rejected", 100*s.RejectRate)
		if top := topReason(s.Rejected); top != "" {
			fmt.Fprintf(&b, ", %s", rootReason(s.Rejected))
		}
	}
	if s.Expired > 0 {
		fmt.Fprintf(&b, "; %s expired", count(s.Expired))
	}
	if s.InFlightEnd > 0 && j.Outcome != OutcomeSink {
		fmt.Fprintf(&b, "; %s still in flight at the end (within their commit timeout)", count(s.InFlightEnd))
	}
	if n := measure.Sum(s.InvalidSent); n > 0 {
		fmt.Fprintf(&b, "; %d invalid payments sent apart, %d refused", n, measure.Sum(s.InvalidRefused))
		if u := measure.Sum(s.InvalidUnknown); u > 0 {
			fmt.Fprintf(&b, ", %d unknown (answer lost, in no block)", u)
		}
	}
	if r.EndedBecause != "" && r.EndedBecause != "completed" && r.Status != "partial" {
		fmt.Fprintf(&b, " (ended: %s)", r.EndedBecause)
	}
	return b.String()
}

// committedOf is "committed X of Y offered tx/s for S s"; a rate above
// what was offered is a backlog committing in the window, said as such,
// never as a share over 100%.
func committedOf(s *Summary, offered float64) string {
	switch {
	case offered <= 0:
		return fmt.Sprintf("committed %s tx/s for %.0f s", thousands(s.CommittedTPS), s.Steady.DurationS)
	case s.CommittedTPS > T.ShareCap*offered:
		return fmt.Sprintf("committed %s tx/s for %.0f s, more than the %s offered (payments sent before the window committed in it)", thousands(s.CommittedTPS), s.Steady.DurationS, thousands(offered))
	}
	return fmt.Sprintf("committed %s of %s offered tx/s for %.0f s", thousands(s.CommittedTPS), thousands(offered), s.Steady.DurationS)
}

// Outcome is what the system did with what was offered: the headline's
// first words (docs/metrics.md, "The headline").
type Outcome string

const (
	OutcomeDied        Outcome = "component_died"    // the target or a part of it stopped answering
	OutcomeHalted      Outcome = "halted"            // no blocks for over a quarter of the steady window
	OutcomeNoLoad      Outcome = "no_load"           // nothing was offered
	OutcomeNoSteady    Outcome = "no_steady"         // no whole steady second
	OutcomeGenerator   Outcome = "generator_limited" // tpslab could not send what was due, or sent it late
	OutcomeMachine     Outcome = "machine_busy"      // other processes or a hypervisor took the CPU tpslab or the system needed
	OutcomeTargetShort Outcome = "fell_behind_send"  // the target could not take what was due
	OutcomeNothing     Outcome = "committed_nothing" // payments were sent; none committed
	OutcomeRefused     Outcome = "refused"           // at least 5% of valid payments sent refused
	OutcomeFellBehind  Outcome = "fell_behind"       // committed under 97% of the valid offered, expiries, or latency growing
	OutcomeKeptUp      Outcome = "kept_up"           // committed about what was offered, latency flat
	OutcomeSink        Outcome = "sink"              // the endpoint was tpslab sink: it commits nothing, so tpslab's own sending was measured
)

// Outcome decides the headline from what the system did with the valid
// load offered and the evidence of what limited it (Judge).
func (r *Result) Outcome() Outcome { return r.Judge().Outcome }

// behind says how a run fell behind: the share of the offered rate
// committed, or latency growing.
func (r *Result) behind() string {
	s := &r.Summary
	var why []string
	if sh := s.CommittedShare(); s.ValidOfferedTPS() > 0 && sh < T.KeptUp {
		// The share of the rates the headline prints beside it.
		why = append(why, fmt.Sprintf("%.0f%% of offered", 100*s.RateShare()))
	}
	if g := r.latencyGrew(); g != "" {
		why = append(why, g)
	} else if g := r.backlogGrew(); g != "" {
		why = append(why, g)
	}
	return strings.Join(why, ", ") // expiries follow in the headline's own clause
}

// latencyGrew compares the median commit latency of the steady window's
// last third with its first third: "commit latency grew from A to B" when
// it more than doubled and by over a second (a backlog building up), else
// "". Runs of fewer than 6 steady seconds are not judged by it.
func (r *Result) latencyGrew() string {
	var p50 []float64
	for _, x := range r.Series {
		if x.Phase == "steady" && x.CommitMs.Count > 0 {
			p50 = append(p50, x.CommitMs.P50)
		}
	}
	if len(p50) < 6 {
		return ""
	}
	third := len(p50) / 3
	first, last := median(p50[:third]), median(p50[len(p50)-third:])
	if last > 2*first && last-first > 1000 {
		return fmt.Sprintf("commit latency grew from %s to %s", fmtMs(first), fmtMs(last))
	}
	return ""
}

// backlogGrew compares the payments in flight, in seconds of the rate
// offered then, at their lowest in the steady window's first and last
// thirds (the troughs right after blocks): "the backlog grew from A to B
// of load" when it grew by more than a second and by more than the
// shortfall T.KeptUp forgives over the window. A system that keeps up
// holds its troughs level; one whose drain committed what the window did
// not passes the committed share, and with blocks seconds apart has too
// few latency samples for latencyGrew (factomd at 2,000/s: 7,400 to 9,000
// in flight over 15 s of 3 s blocks, all committed in the drain).
func (r *Result) backlogGrew() string {
	var secs []float64
	for _, x := range r.Series {
		if x.Phase == "steady" && x.Offered > 0 {
			secs = append(secs, float64(x.InFlight)/float64(x.Offered))
		}
	}
	if len(secs) < 6 {
		return ""
	}
	third := len(secs) / 3
	// Each third must hold a trough: a block at least (factomd's 10 s
	// blocks over a 25 s window hold none in some thirds).
	if iv, _ := r.BlockInterval(); float64(third) < iv {
		return ""
	}
	first, last := slices.Min(secs[:third]), slices.Min(secs[len(secs)-third:])
	if last-first > max(1, (1-T.KeptUp)*float64(len(secs))) {
		return fmt.Sprintf("the backlog grew from %.1f s to %.1f s of load", first, last)
	}
	return ""
}

func median(xs []float64) float64 {
	c := append([]float64(nil), xs...)
	sort.Float64s(c)
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

// Count is count, for the commands' own lines.
func Count(n int64) string { return count(n) }

// count writes a count as a whole number with thousands separators, never
// a fraction (thousands keeps a decimal under 10).
func count(n int64) string {
	if n > -10 && n < 10 {
		return fmt.Sprint(n)
	}
	return thousands(float64(n))
}

// InvalidTaken counts, by sort, the deliberately invalid payments the
// system took: committed, or accepted and never refused (still waiting when
// the run ended). One accepted at the door and refused in its block (a
// Cosmos chain checks funds only when it executes) is not taken.
func (s *Summary) InvalidTaken() map[string]int64 {
	m := map[string]int64{}
	for k, v := range s.InvalidCommitted {
		m[k+" committed"] += v
	}
	for k, v := range s.InvalidRefused {
		if sort, ok := strings.CutSuffix(k, ": expired"); ok {
			m[sort+" accepted, never refused"] += v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// byKey lists a by-key count as "a 3, b 1", keys in order.
func byKey(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func topReason(m map[string]int64) string {
	best, n := "", int64(0)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	if v < 10 {
		s = fmt.Sprintf("%.1f", v)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i:]
	}
	var out []byte
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, byte(c))
	}
	if neg {
		return "-" + string(out) + frac
	}
	return string(out) + frac
}

func fmtMs(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
