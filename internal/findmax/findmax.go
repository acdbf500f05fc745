// Package findmax searches for the highest offered rate a system sustains
// under an objective: a coarse ramp brackets the knee, bisection refines it,
// and at the knee the evidence is read for what limits the system.
package findmax

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/threshold"
)

// Objective is what a step must meet to count as sustained.
type Objective struct {
	Thresholds []threshold.Threshold // e.g. p99_commit<=2s
	MinRatio   float64               // committed/offered over the steady window, e.g. 0.99
	MaxGrowth  float64               // mempool growth over the step, in seconds of offered load (e.g. 1)
	// MaxLagMs bounds the step's schedule lag p99 (0: no bound). Payments
	// that left late while the generator kept up waited for the system's
	// answers to earlier ones: it took submissions slower than offered.
	// Such steps passed on their 6 s window and missed a 20 s run at the
	// same rate in 3 of 7 bench/find-max.sh checks (lag p99 101-230 ms; the
	// steps whose rate held: 63-79 ms).
	MaxLagMs float64
}

// Step is one measured rate.
type Step struct {
	Rate       float64                   `json:"rate"`
	Dir        string                    `json:"dir"`
	OK         bool                      `json:"ok"`
	Why        []string                  `json:"why,omitempty"` // what failed
	Committed  float64                   `json:"committed_tps"`
	Offered    float64                   `json:"offered_tps"`
	P50        float64                   `json:"p50_commit_ms"`
	P99        float64                   `json:"p99_commit_ms"`
	Growth     float64                   `json:"mempool_growth_s"` // mempool growth over the step, in seconds of load
	Lag        float64                   `json:"schedule_lag_p99_ms"`
	Generator  bool                      `json:"generator_limited"`
	Confirm    bool                      `json:"confirm,omitempty"`  // a longer run at the rate the steps named
	LengthS    float64                   `json:"length_s,omitempty"` // how long the step offered its load, warm-up included
	Thresholds []report.ThresholdOutcome `json:"thresholds,omitempty"`
	// Died holds the run's evidence when a part of the system stopped in
	// the step (a node exited, the service stopped answering).
	Died   string         `json:"died,omitempty"`
	Result *report.Result `json:"-"`
}

// Judge applies the objective to a step's result.
func (o Objective) Judge(rate float64, r *report.Result) Step {
	s := r.Summary
	st := Step{Rate: rate, Dir: r.Dir, Committed: s.CommittedTPS, Offered: s.OfferedTPS,
		P50: s.LatencyMs.Commit.P50, P99: s.LatencyMs.Commit.P99, Lag: s.LatencyMs.ScheduleLag.P99, Generator: s.Generator.Limited, Result: r}
	for _, t := range o.Thresholds {
		out := t.Check(&s)
		st.Thresholds = append(st.Thresholds, out)
		if !out.OK {
			st.Why = append(st.Why, fmt.Sprintf("%s (%s)", out.Expr, out.Actually()))
		}
	}
	// The run's own judgement decides the step, as it decides its
	// headline: "kept up" is one thing in a step and in a run.
	if ratio := s.CommittedShare(); ratio < o.MinRatio {
		st.Why = append(st.Why, fmt.Sprintf("committed/offered %.3f < %.2f", ratio, o.MinRatio))
	}
	j := r.Judge()
	if j.Outcome == report.OutcomeDied {
		st.Died = j.Limit.Figures
	}
	if j.Outcome != report.OutcomeKeptUp && j.Outcome != report.OutcomeNoSteady && j.Outcome != report.OutcomeNoLoad {
		why := string(j.Outcome)
		if j.Limit.Cause != "" {
			why += ", limit: " + j.Limit.Phrase()
		}
		st.Why = append(st.Why, "the step's judgement: "+strings.ReplaceAll(why, "_", " "))
	}
	st.Growth = mempoolGrowth(r) / rate
	if st.Growth > o.MaxGrowth {
		st.Why = append(st.Why, fmt.Sprintf("mempool grew by %.1f s of load over the step (> %.1f s)", st.Growth, o.MaxGrowth))
	}
	// The lag bound at the chain's own pace: a tenth of its block interval
	// at least (senders waiting for 10 s blocks lag by more than 100 ms
	// while every payment commits).
	bound := o.MaxLagMs
	if iv, _ := r.BlockInterval(); bound > 0 {
		bound = math.Max(bound, 100*iv)
	}
	if bound > 0 && st.Lag > bound && !st.Generator {
		st.Why = append(st.Why, fmt.Sprintf("schedule lag p99 %.0f ms > %.0f ms (submissions waited for the system's answers)", st.Lag, bound))
	}
	if r.EndedBecause != "completed" {
		st.Why = append(st.Why, "run ended: "+r.EndedBecause)
	}
	st.OK = len(st.Why) == 0
	return st
}

// mempoolGrowth is the rise of the mempool between the first and last
// steady second (a backlog that grows means the rate is not sustained).
func mempoolGrowth(r *report.Result) float64 {
	var first, last = -1, -1
	for i, s := range r.Series {
		if s.Phase == "steady" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last <= first {
		return 0
	}
	// Average three seconds at each end: the mempool saw-tooths with blocks.
	avg := func(from, to int) float64 {
		n, sum := 0, 0.0
		for i := from; i <= to && i < len(r.Series); i++ {
			if i >= 0 {
				sum += float64(r.Series[i].MempoolTxs)
				n++
			}
		}
		return sum / math.Max(1, float64(n))
	}
	return math.Max(0, avg(last-2, last)-avg(first, first+2))
}

// Options bound the search.
type Options struct {
	Start     float64 // first rate
	Factor    float64 // coarse ramp multiplies by this until a step fails
	Tolerance float64 // stop bisecting when (hi-lo)/lo is below this
	MaxRate   float64
	MaxSteps  int
	// Probe, when set, estimates the system's capacity before the steps
	// (one ramp that ends once the system falls behind); the steps then
	// start at 110% of it and move by the tolerance. 0: no estimate, the
	// plain ramp from Start.
	Probe func(ctx context.Context) (capacity float64, err error)
	// Confirm, when set, runs the rate the steps name for longer. A short
	// step passed at rates a 20 s run then missed by 1-3% (the knee moves
	// that much between windows on a busy machine): a rate that misses
	// its confirmation steps down and is confirmed again.
	Confirm func(ctx context.Context, rate float64) (Step, error)
}

// confirmations bounds the confirmations of one search.
const confirmations = 2

// Outcome is the search's answer.
type Outcome struct {
	// Sustainable is the highest rate that met the objective and, with
	// confirmation, its confirmation run too; not Confirmed (two
	// confirmations missed), the highest step under the last missed one
	// that met the objective: always a rate a run met.
	Sustainable float64    `json:"sustainable_rate"`
	Probed      float64    `json:"probed_capacity,omitempty"` // the probe's estimate, when one ran
	Bracket     [2]float64 `json:"bracket"`                   // [highest passing, lowest failing]
	Confirmed   bool       `json:"confirmed"`                 // the sustainable rate also met a confirmation run
	Steps       []Step     `json:"steps"`
	Stopped     string     `json:"stopped"`        // why the search ended
	Died        bool       `json:"died,omitempty"` // it ended as a part of the system stopped in a step
	Hints       []string   `json:"hints"`
}

// Search runs steps through measure until the knee is bracketed within the
// tolerance. It stops early, saying so, when the generator limits a step.
func Search(ctx context.Context, o Options, measure func(ctx context.Context, rate float64) (Step, error)) (Outcome, error) {
	var out Outcome
	lo, hi := 0.0, math.Inf(1)
	var loStep, hiStep *Step
	rate, factor := o.Start, o.Factor
	if o.Probe != nil {
		c, err := o.Probe(ctx)
		if err != nil {
			return out, err
		}
		if c > 0 {
			out.Probed = c
			// A fast ramp's committed rate trails the capacity (blocks lag the
			// sends, overload costs): the knee was 0.9-1.3x the estimate in
			// runs on the built-in network, most often near 1.1x.
			rate, factor = math.Max(1, math.Min(o.MaxRate, math.Round(1.1*c))), 1+o.Tolerance
		}
	}
	for len(out.Steps) < o.MaxSteps {
		if ctx.Err() != nil {
			out.Stopped = "interrupted"
			break
		}
		st, err := measure(ctx, rate)
		if err != nil {
			return out, err
		}
		out.Steps = append(out.Steps, st)
		last := &out.Steps[len(out.Steps)-1]
		if st.Died != "" {
			// The steps after it would measure another network (or none):
			// the search ends with what the steps before it found.
			hi, hiStep, out.Died = rate, last, true
			out.Stopped = fmt.Sprintf("a part of the system stopped in the step at %.0f tx/s (%s), so no step ran after it", rate, st.Died)
			goto done
		}
		if st.Generator && !st.OK {
			out.Stopped = fmt.Sprintf("the load generator limited the step at %.0f tx/s (schedule lag or CPU), so a failure there says nothing about the system; use more generator capacity", rate)
			hiStep = last
			break
		}
		if st.OK {
			lo, loStep = rate, last
		} else {
			hi, hiStep = rate, last
		}
		switch {
		case math.IsInf(hi, 1):
			rate = math.Floor(rate * factor) // at most factor apart: a bracket within the tolerance
			if rate > o.MaxRate {
				if lo >= o.MaxRate {
					out.Stopped = fmt.Sprintf("every rate up to the limit %.0f tx/s was sustained", o.MaxRate)
					goto done
				}
				rate = o.MaxRate
			}
		case lo == 0:
			rate = math.Ceil(hi / factor)
			if out.Probed > 0 && st.Committed > 0 {
				// Overloaded, it still committed this much: the knee is near
				// it, so step there rather than down by the tolerance.
				rate = math.Min(rate, math.Max(math.Floor(st.Committed), math.Ceil(hi/2)))
			}
			if rate < 1 {
				out.Stopped = "even the lowest rate failed the objective"
				goto done
			}
		default:
			if (hi-lo)/lo <= o.Tolerance+1e-9 {
				out.Stopped = fmt.Sprintf("knee bracketed within %.0f%%", 100*o.Tolerance)
				goto done
			}
			rate = math.Round((lo + hi) / 2)
		}
	}
	if out.Stopped == "" {
		out.Stopped = fmt.Sprintf("step limit (%d) reached", o.MaxSteps)
	}
done:
	if o.Confirm != nil && lo > 0 && ctx.Err() == nil && !out.Died {
		var err error
		if lo, hi, loStep, hiStep, err = confirm(ctx, o, &out, lo, hi, loStep, hiStep); err != nil {
			return out, err
		}
	}
	out.Sustainable = lo
	out.Bracket = [2]float64{lo, hi}
	if math.IsInf(hi, 1) {
		out.Bracket[1] = 0
	}
	out.Hints = Hints(loStep, hiStep)
	return out, nil
}

// confirm runs the named rate lo for longer. A miss there is a failing
// rate: the next candidate is 5% under what that run committed (or under
// lo, when it missed on latency), confirmed in turn, twice at most; a
// candidate left after the last miss is named unconfirmed.
func confirm(ctx context.Context, o Options, out *Outcome, lo, hi float64, loStep, hiStep *Step) (float64, float64, *Step, *Step, error) {
	for i := 0; i < confirmations && ctx.Err() == nil; i++ {
		st, err := o.Confirm(ctx, lo)
		if err != nil {
			return lo, hi, loStep, hiStep, err
		}
		st.Confirm = true
		out.Steps = append(out.Steps, st)
		last := &out.Steps[len(out.Steps)-1]
		if st.OK {
			out.Confirmed = true
			out.Stopped += fmt.Sprintf("; %.0f tx/s held in a confirmation run", lo)
			return lo, hi, last, hiStep, nil
		}
		if st.Generator || ctx.Err() != nil {
			out.Stopped += fmt.Sprintf("; the confirmation run at %.0f tx/s did not finish as a measurement of the system", lo)
			break
		}
		if st.Died != "" || i == confirmations-1 {
			// No rate left to confirm (or no network to confirm it on):
			// name only a rate a run met, the highest step under the one
			// that missed, never one between.
			if out.Died = st.Died != ""; out.Died {
				out.Stopped += fmt.Sprintf("; a part of the system stopped in the confirmation run at %.0f tx/s (%s)", lo, st.Died)
			} else {
				out.Stopped += fmt.Sprintf("; %.0f tx/s missed its confirmation run too (it committed %.0f tx/s)", lo, st.Committed)
			}
			hi, hiStep = lo, last
			lo, loStep = 0, nil
			for k := range out.Steps {
				if s := &out.Steps[k]; s.OK && !s.Confirm && s.Rate < hi && s.Rate > lo {
					lo, loStep = s.Rate, s
				}
			}
			if lo > 0 {
				out.Stopped += fmt.Sprintf(", so %.0f tx/s, the highest step under it that met the objective (not confirmed)", lo)
			} else {
				out.Stopped += ": no step under it met the objective (not confirmed)"
			}
			break
		}
		next := math.Floor(0.95 * math.Min(lo, math.Max(st.Committed, 1)))
		if next < 1 { // the confirmation committed nothing (CI: factomd died in a step): no rate under it to try
			out.Stopped += fmt.Sprintf("; %.0f tx/s missed its confirmation run, which committed nothing: no rate under it to confirm", lo)
			lo, loStep = 0, nil
			break
		}
		out.Stopped += fmt.Sprintf("; %.0f tx/s missed its confirmation run, so %.0f", lo, next)
		hi, hiStep, lo, loStep = lo, last, next, nil
	}
	return lo, hi, loStep, hiStep, nil
}
