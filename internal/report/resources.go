package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Capacity is one resource of the system, as its kind declared it before
// the load: what it holds, where that was read, and which measures say how
// much of it the run used and what waited for it. The judgement weighs
// every declared resource the same way (utilisation, saturation), so a new
// kind brings its resources, not judge code.
type Capacity struct {
	Name     string  `json:"name"`  // block_bytes, block_gas, db_connections, block_interval
	Class    Cause   `json:"class"` // the candidate it answers for
	Capacity float64 `json:"capacity"`
	Unit     string  `json:"unit,omitempty"`
	From     string  `json:"from,omitempty"` // where it was read: consensus_params, net.json
	// Use is what measures its use: blocks.bytes or blocks.gas (the steady
	// window's blocks), or a telemetry metric, summed over the processes
	// whose metric ends in it (".connections_in_use").
	Use string `json:"use,omitempty"`
	// Saturation is the telemetry metric of what waited for it (a queue).
	Saturation string `json:"saturation,omitempty"`
	// About is the resource in words, for the judgement's lines.
	About string `json:"about,omitempty"`
	// Each: every process has this capacity of its own (a node's
	// mempool); the use weighed is the fullest process's.
	Each bool `json:"each,omitempty"`
	// Relax is the scenario setting that gives this capacity to a network
	// tpslab starts, and RelaxBy the factor that relaxes it (0: 2; a
	// block interval halves): tpslab why changes it and measures again.
	Relax   string  `json:"relax,omitempty"`
	RelaxBy float64 `json:"relax_by,omitempty"`
}

// Block classes' resource names.
const (
	BlockBytes    = "block_bytes"
	BlockGas      = "block_gas"
	BlockInterval = "block_interval"
)

// capacity is the declared resource named name, if any.
func (r *Result) capacity(name string) (Capacity, bool) {
	for _, c := range r.Capacities {
		if c.Name == name {
			return c, true
		}
	}
	return Capacity{}, false
}

// BlockInterval is the chain's own pace, in seconds: the interval its
// configuration declares, else the median tpslab saw, else the mean.
func (r *Result) BlockInterval() (float64, string) {
	if c, ok := r.capacity(BlockInterval); ok && c.Capacity > 0 {
		return c.Capacity, "configured"
	}
	b := r.Summary.BlocksSummary
	if b.IntervalMsMedian > 0 {
		return b.IntervalMsMedian / 1000, "median"
	}
	return b.IntervalMsMean / 1000, "mean"
}

// useOf reads the measure a declared resource names: its steady mean.
func (r *Result) useOf(name string) (float64, bool) {
	b := r.Summary.BlocksSummary
	switch name {
	case "":
		return 0, false
	case "blocks.bytes":
		return b.SteadyBytes, b.Steady > 0
	case "blocks.gas":
		return b.SteadyGas, b.Steady > 0 && b.SteadyGas > 0
	}
	return r.Summary.telemetryMean(name)
}

// telemetryFullest is the largest steady mean among the processes'
// metrics ending in suffix.
func (s *Summary) telemetryFullest(suffix string) (float64, bool) {
	most, ok := 0.0, false
	for k, st := range s.Telemetry {
		if strings.HasSuffix(k, suffix) && !strings.HasPrefix(k, "links.") {
			most, ok = math.Max(most, st.Mean), true
		}
	}
	return most, ok
}

// declaredEvidence judges each declared resource of class: saturated when
// its use reaches T.Full of its capacity or its queue T.Queue. The rows of
// one class come most used first, so the class's candidate is its fullest.
func (r *Result) declaredEvidence(class Cause) []Evidence {
	var out []Evidence
	for _, c := range r.Capacities {
		if c.Class != class || c.Name == BlockInterval || c.Capacity <= 0 {
			continue
		}
		e := Evidence{Cause: class, Resource: c.Name, Capacity: c.Capacity, Unit: c.Unit}
		about := c.About
		if about == "" {
			about = strings.ReplaceAll(c.Name, "_", " ")
		}
		use, ok := r.useOf(c.Use)
		if c.Each {
			use, ok = r.Summary.telemetryFullest(c.Use)
		}
		if !ok {
			e.Figures = fmt.Sprintf("%s: %s %s (%s), its use not measured", about, thousands(c.Capacity), c.Unit, c.From)
			out = append(out, e)
			continue
		}
		e.Utilisation = math.Round(1000*use/c.Capacity) / 1000
		e.Figures = fmt.Sprintf("%s: %s of %s %s used on average over the steady window (%.0f%%; %s)", about, thousands(use), thousands(c.Capacity), c.Unit, 100*use/c.Capacity, c.From)
		if c.Name == BlockBytes && r.Summary.BlocksSummary.SteadyBytesMax > 0 {
			e.Figures += fmt.Sprintf(", the fullest block %s", thousands(float64(r.Summary.BlocksSummary.SteadyBytesMax)))
		}
		e.Holds = use >= T.Full*c.Capacity
		if q, ok := r.Summary.telemetryMean(c.Saturation); ok && c.Saturation != "" {
			e.Saturation = math.Round(100*q) / 100
			e.Figures += fmt.Sprintf("; %.1f waiting for it on average", q)
			e.Holds = e.Holds || (q >= T.Queue && use >= 0.5*c.Capacity)
		}
		out = append(out, e)
	}
	return holdingFirst(out, func(e Evidence) float64 { return e.Utilisation })
}

// cpuLimitEvidence: each process that ran under a CPU limit (a cgroup
// quota, v1 or v2, or a pod's limit), its use against the limit and the
// share of the time the limit held it back. Saturated when it was
// throttled over T.Throttled of the time or used T.Full of its limit.
func (r *Result) cpuLimitEvidence() []Evidence {
	tel := r.Summary.Telemetry
	names := r.Summary.limitedProcesses(".cpu_limit_cores")
	if len(names) == 0 {
		return []Evidence{{Cause: CauseCPULimit, Figures: "no process ran under a CPU limit", Absent: true}}
	}
	var out []Evidence
	for _, p := range names {
		limit := tel[p+".cpu_limit_cores"].Mean
		used := tel[p+".cpu_percent"].Mean / 100
		thr := tel[p+".cpu_throttled_percent"].Mean / 100
		e := Evidence{Cause: CauseCPULimit, Resource: p + ".cpu_limit", Capacity: limit, Unit: "cores",
			Utilisation: math.Round(1000*used/limit) / 1000, Saturation: math.Round(1000*thr) / 1000}
		e.Figures = fmt.Sprintf("%s used %.2f of its %.2f-core limit (%.0f%%), throttled in %.0f%% of its scheduling periods", p, used, limit, 100*used/limit, 100*thr)
		if t, ok := tel[p+".cpu_throttled_s"]; ok && t.Mean > 0 {
			e.Figures += fmt.Sprintf(" (%.2f s a second held back, over its CPUs)", t.Mean)
		}
		e.Holds = thr >= T.Throttled || used >= T.Full*limit
		out = append(out, e)
	}
	return holdingFirst(out, func(e Evidence) float64 { return e.Saturation })
}

// limitedProcesses names, in order, the processes whose telemetry has a
// limit (the metric NAME+suffix, above 0): those that ran under one.
func (s *Summary) limitedProcesses(suffix string) []string {
	var names []string
	for k, st := range s.Telemetry {
		if p, ok := strings.CutSuffix(k, suffix); ok && st.Mean > 0 {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	return names
}

// memLimitEvidence: each process that ran under a memory limit (a
// cgroup's), its group's own (anonymous) memory against it and how often
// the charge met it. Saturated when its own memory reached T.Full of the
// limit at its fullest second: meeting the limit alone is the kernel
// reclaiming page cache, which a node writing its store does all along.
func (r *Result) memLimitEvidence() []Evidence {
	tel := r.Summary.Telemetry
	names := r.Summary.limitedProcesses(".memory_limit_bytes")
	if len(names) == 0 {
		return []Evidence{{Cause: CauseMemLimit, Figures: "no process ran under a memory limit", Absent: true}}
	}
	var out []Evidence
	for _, p := range names {
		limit := tel[p+".memory_limit_bytes"].Mean
		used := tel[p+".memory_limit_used_bytes"].Max
		hits := tel[p+".memory_limit_hits"].Mean
		e := Evidence{Cause: CauseMemLimit, Resource: p + ".memory_limit", Capacity: limit, Unit: "bytes",
			Utilisation: math.Round(1000*used/limit) / 1000, Saturation: math.Round(100*hits) / 100}
		e.Figures = fmt.Sprintf("%s's processes held at most %s bytes of their own memory of a %s-byte limit (%.0f%%); the charge met the limit %.1f times a second", p, thousands(used), thousands(limit), 100*used/limit, hits)
		e.Holds = used >= T.Full*limit
		out = append(out, e)
	}
	return holdingFirst(out, func(e Evidence) float64 { return e.Saturation })
}

// haltEvidence: a stretch without blocks is a halt when it covers over
// T.HaltShare of the steady window and lasts T.HaltIntervals of the
// chain's own block interval (and T.HaltFloorS): a chain of 10 s blocks is
// not halted after 10.8 s, nor is a gap after the load a halt of its
// window.
func (r *Result) haltEvidence() Evidence {
	s := &r.Summary
	iv, how := r.BlockInterval()
	need := math.Max(T.HaltFloorS, T.HaltIntervals*iv)
	win := s.Steady.DurationS
	w0 := s.Steady.StartS
	w1 := w0 + win
	e := Evidence{Cause: CauseHalt, Resource: BlockInterval, Capacity: math.Round(iv*100) / 100, Unit: "s"}
	pace := ""
	if iv > 0 {
		pace = fmt.Sprintf("; blocks every %.1f s (%s)", iv, how)
	}
	switch {
	case s.Halted != "":
		e.Holds, e.Figures = true, s.Halted
		return e
	case strings.HasPrefix(r.EndedBecause, "chain_halted"):
		e.Holds, e.Figures = true, fmt.Sprintf("the run ended %s; longest gap %.1f s", r.EndedBecause, s.LongestGapS)
		return e
	case s.BlocksSummary.Count == 0:
		e.Figures, e.Absent = "no blocks", true
		return e
	}
	longest := 0.0
	for _, st := range s.Stalls {
		in := math.Max(0, math.Min(st.ToS, w1)-math.Max(st.FromS, w0))
		if in <= 0 {
			continue
		}
		longest = math.Max(longest, st.DurationS)
		if win > 0 && in > T.HaltShare*win && st.DurationS >= need {
			e.Holds = true
			e.Figures = fmt.Sprintf("no block for %.1f s from t=%.1f s (%.0f%% of the %.0f s steady window, %.0f× the chain's %.1f s interval)%s",
				st.DurationS, st.FromS, 100*in/win, win, st.DurationS/math.Max(iv, 0.001), iv, r.faultDuring())
			return e
		}
	}
	// A gap under the stall floor that the window begins or ends in: a
	// partition of 3 s left 7.4 s of an 11 s window without a block, and
	// the drain committed the rest.
	if win > 0 && s.Steady.StallS > T.HaltShare*win && s.Steady.StallS >= need {
		e.Holds = true
		e.Figures = fmt.Sprintf("no block for %.1f s at the steady window's edge (%.0f%% of its %.0f s, against blocks every %.1f s)%s", s.Steady.StallS, 100*s.Steady.StallS/win, win, iv, r.faultDuring())
		return e
	}
	switch {
	case longest > 0:
		e.Figures = fmt.Sprintf("the longest stretch without blocks in the steady window %.1f s, under %.0f s (%g× the interval)%s", longest, need, T.HaltIntervals, pace)
	case s.LongestGapS > 0:
		e.Figures = fmt.Sprintf("longest gap between blocks %.1f s%s", s.LongestGapS, pace)
	default:
		e.Figures = "no stretch without blocks" + pace
	}
	return e
}

// holdingFirst orders a class's rows: those that hold first, then by key,
// largest first, so the class's candidate is its most saturated row.
func holdingFirst(out []Evidence, key func(Evidence) float64) []Evidence {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Holds != out[j].Holds {
			return out[i].Holds
		}
		return key(out[i]) > key(out[j])
	})
	return out
}

// blocksAtACap: every steady block held the same number of transactions,
// the most any held, while the fullest mempool kept more than a block's
// worth waiting. The blocks are full at a cap of their own, whatever it
// counts (gas wanted rather than used, a count, bytes by another measure):
// evmd with max_gas 3,000,000 took 30 ERC20 transfers a block, 1,500,000
// gas used, with 2,034 waiting. Not a row without that backlog.
func (r *Result) blocksAtACap() (Evidence, bool) {
	b := r.Summary.BlocksSummary
	waiting, ok := r.Summary.telemetryFullest(".mempool_txs")
	if b.Steady < 3 || b.SteadyTxsMax == 0 || !ok {
		return Evidence{}, false
	}
	e := Evidence{Cause: CauseBlocks, Resource: "block_txs", Capacity: float64(b.SteadyTxsMax), Unit: "transactions",
		Utilisation: math.Round(1000*b.SteadyTxs/float64(b.SteadyTxsMax)) / 1000, Saturation: math.Round(waiting)}
	e.Holds = b.SteadyTxsMin == b.SteadyTxsMax && waiting >= float64(b.SteadyTxsMax)
	e.Figures = fmt.Sprintf("blocks' transactions: the %d steady blocks held %d to %d (mean %s) while the fullest mempool held %s waiting on average",
		b.Steady, b.SteadyTxsMin, b.SteadyTxsMax, thousands(b.SteadyTxs), thousands(waiting))
	if e.Holds {
		e.Figures += fmt.Sprintf(": every block full at %d, a cap of the chain's own", b.SteadyTxsMax)
	}
	return e, true
}
