package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// FindMax is a find-max search: its objective and steps.
type FindMax struct {
	Objective  findmax.Objective
	Describe   string // the objective in words, for the outputs
	Search     findmax.Options
	Step, Warm time.Duration
	// Confirm runs the rate the steps name for this long (its first Warm
	// excluded), stepping down when it misses (findmax.Options.Confirm).
	// 0: no confirmation.
	Confirm time.Duration
	// MissAfter ends a step early once what is accepted and not yet
	// committed holds more than this many seconds of the offered load for
	// two seconds running, past the warm-up: the step has clearly missed
	// (a p99 commit under a few seconds cannot hold), and waiting out its
	// length only grows the backlog the next step must wait for. 0: never.
	MissAfter float64
	// Probe estimates the capacity first with one ramp of live payments
	// (doubling every 2 s from Search.Start up to Search.MaxRate), ended
	// once more than a second of the offered load is pending; the steps
	// then start near it (findmax.Options.Probe).
	Probe       bool
	Run         runner.Options // how each step runs (kinds, version, command)
	Log, Output io.Writer      // progress lines; the knee, the verdict and the hints
}

// Do runs steps of constant offered load on one network (started once
// when sc names none), searching for the highest rate that meets the
// objective; it writes find-max.json, find-max.html and each step's run
// directory under sc.Out.
func (f FindMax) Do(ctx context.Context, sc scenario.Scenario) error {
	_, err := f.search(ctx, sc)
	return err
}

// search is Do, with the outcome it wrote.
func (f FindMax) search(ctx context.Context, sc scenario.Scenario) (findmax.Outcome, error) {
	base := sc.Out
	if base == "" {
		base = runner.DefaultOut()
	}
	shared := f.Run
	shared.Log = f.Log
	stop, err := runner.SharedNetwork(ctx, &sc, shared)
	if err != nil {
		return findmax.Outcome{}, err
	}
	defer stop()
	probe, err := runner.TargetFor(&sc, f.Run.Kinds)
	if err != nil {
		return findmax.Outcome{}, err
	}
	defer probe.Close()
	start := time.Now()
	n := 0
	var committedAt time.Time // the last step's end, when it committed
	carry := workload.NewCarry()
	interval := 0.0 // the chain's block interval as the last step saw it, s
	var measureAt func(ctx context.Context, rate float64, length time.Duration, what string) (findmax.Step, error)
	measureAt = func(ctx context.Context, rate float64, length time.Duration, what string) (findmax.Step, error) {
		n++
		length = max(length, f.paced(interval))
		waitForEmptyMempool(ctx, probe)
		rc := f.stepScenario(sc, rate, length, filepath.Join(base, fmt.Sprintf("step-%02d-%.0f", n, rate)))
		fmt.Fprintf(f.Log, "%s %d: %.0f tx/s for %s\n", what, n, rate, length)
		ro := f.Run
		ro.Log, ro.CommittedAt, ro.Carry = io.Discard, committedAt, carry
		stepCtx, endStep := context.WithCancelCause(ctx)
		miss := &earlyMiss{rate: rate, after: f.MissAfter, warm: f.Warm.Seconds(), end: endStep}
		ro.Observers = append(append([]runner.Observer{}, ro.Observers...), miss)
		res, err := runner.Run(stepCtx, rc, ro)
		endStep(nil)
		if res == nil || res.NeverLoaded() {
			// Not a step that missed: one that never measured (the network
			// was down or not ready), and every step after it would too.
			if err == nil {
				err = exitcode.Wrap(exitcode.TargetFailed, errors.New(res.EndedBecause))
			}
			return findmax.Step{}, fmt.Errorf("the step at %.0f tx/s did not run: %w", rate, err)
		}
		if onDisk, rerr := report.ReadResult(res.Dir); rerr == nil {
			report.WriteHTMLFile(onDisk)
			res = onDisk
		}
		// A step whose window held too few of the chain's blocks measured
		// nothing yet: once, at the length its pace asks for.
		was := interval
		if interval = chainPace(res, length, interval); interval > was && f.tooFewBlocks(res, length, interval) && ctx.Err() == nil {
			return measureAt(ctx, rate, f.paced(interval), what)
		}
		st := f.Objective.Judge(rate, res)
		if st.LengthS = length.Seconds(); st.Committed > 0 {
			committedAt = time.Now()
		}
		if miss.why != "" && ctx.Err() == nil {
			st.OK, st.Why = false, append([]string{miss.why}, st.Why...)
		}
		if strings.HasPrefix(res.EndedBecause, "aborted: ") {
			st.OK, st.Why = false, append([]string{"ended early, " + res.EndedBecause}, st.Why...)
		}
		verdict := "met"
		if !st.OK {
			verdict = "missed: " + strings.Join(st.Why, "; ")
		}
		fmt.Fprintf(f.Log, "  committed %.1f tx/s, p99 commit %.0f ms: %s\n", st.Committed, st.P99, verdict)
		return st, nil
	}
	opts := f.Search
	step := func(ctx context.Context, rate float64) (findmax.Step, error) {
		return measureAt(ctx, rate, f.Step, "step")
	}
	if f.Confirm > 0 {
		opts.Confirm = func(ctx context.Context, rate float64) (findmax.Step, error) {
			return measureAt(ctx, rate, f.Confirm, "confirmation, step")
		}
	}
	if f.Probe {
		opts.Probe = func(ctx context.Context) (float64, error) {
			c, err := f.probe(ctx, sc, base, probe)
			if c > 0 {
				committedAt = time.Now()
			}
			return c, err
		}
	}
	out, err := findmax.Search(ctx, opts, step)
	took := time.Since(start).Round(time.Second)
	if err != nil && len(out.Steps) == 0 {
		return out, err
	}
	if err != nil {
		// The steps so far are still written, but the search did not end.
		out.Stopped = fmt.Sprintf("a run failed after %d steps: %v", len(out.Steps), err)
	}
	if werr := f.write(base, out, took); werr != nil {
		return out, werr
	}
	fmt.Fprintf(f.Output, "results: %s (find-max.json, find-max.html, one run directory per step)\n", base)
	if err != nil {
		return out, err
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return out, exitcode.Wrap(exitcode.TargetFailed, errors.New("interrupted"))
	}
	if out.Died {
		// Its figures stand, but the network it leaves is not the one it
		// measured: a script must not go on as if it were.
		return out, exitcode.Wrap(exitcode.TargetFailed, errors.New("a part of the system stopped during the search (see stopped: above)"))
	}
	return out, nil
}

// stepScenario is the scenario of one step: the rate offered for length,
// out its folder.
func (f FindMax) stepScenario(sc scenario.Scenario, rate float64, length time.Duration, out string) scenario.Scenario {
	rc := sc
	rc.Load.Rate, rc.Load.Stages, rc.Load.Steps = rate, nil, nil
	rc.Load.Duration, rc.Load.Warmup = scenario.Duration(length), scenario.Duration(f.Warm)
	// What is still pending a few seconds after a step is its backlog:
	// the next step waits for the mempool to empty instead.
	rc.Load.Drain = min(rc.Load.Drain, scenario.Duration(5*time.Second))
	// The objective's figures that have a value each second end a step
	// that has clearly lost them, by the run's own abort_on_fail rule.
	rc.Thresholds, rc.AbortOnFail = nil, false
	for _, t := range f.Objective.Thresholds {
		if t.PerSecond() {
			rc.Thresholds, rc.AbortOnFail = append(rc.Thresholds, t.Expr), true
		}
	}
	rc.AbortGrace = scenario.Duration(max(5*time.Second, (length-f.Warm)/3))
	rc.Out = out
	return rc
}

// write prints the knee table, the verdict and the hints, and writes
// find-max.json and find-max.html under base.
func (f FindMax) write(base string, out findmax.Outcome, took time.Duration) error {
	w := f.Output
	fmt.Fprintln(w)
	findmax.PrintKnee(w, out.Steps)
	hi := "not reached"
	if out.Bracket[1] > 0 {
		hi = fmt.Sprintf("%.0f", out.Bracket[1])
	}
	held := ""
	switch {
	case out.Confirmed:
		d := f.Confirm
		for _, s := range out.Steps { // the confirmation as it ran (paced to a slow chain's blocks)
			if s.Confirm && s.OK && s.Rate == out.Sustainable && s.LengthS > 0 {
				d = time.Duration(s.LengthS * float64(time.Second))
			}
		}
		held = fmt.Sprintf(", held for %s", d)
	case f.Confirm > 0 && out.Sustainable > 0:
		held = ", not confirmed"
	}
	fmt.Fprintf(w, "\nsustainable rate: %.0f tx/s%s (bracket %.0f .. %s tx/s) under %s\n", out.Sustainable, held, out.Bracket[0], hi, f.Describe)
	fmt.Fprintf(w, "stopped: %s; search took %s over %d steps\n", out.Stopped, took, len(out.Steps))
	if len(out.Hints) == 0 {
		// Hints are read at the knee; a search that stopped before it had
		// one has nothing to name, and says why rather than a bare header.
		fmt.Fprintf(w, "what limits it: not read, as the search stopped before a knee (%s)\n", out.Stopped)
	} else {
		fmt.Fprintln(w, "what limits it:")
	}
	for _, h := range out.Hints {
		fmt.Fprintln(w, "  -", h)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(base, "find-max.json"), map[string]any{"schema_version": 1, "objective": f.Describe, "took_s": took.Seconds(), "outcome": out}); err != nil {
		return err
	}
	page, err := os.Create(filepath.Join(base, "find-max.html"))
	if err != nil {
		return err
	}
	if err := findmax.WriteHTML(page, out, f.Describe, took.String()); err != nil {
		page.Close()
		return err
	}
	return page.Close()
}

// waitForEmptyMempool lets a backlog from the previous step clear (up to 60 s)
// so it does not count against the next.
func waitForEmptyMempool(ctx context.Context, tgt sut.Target) {
	t, ok := tgt.(sut.Mempool)
	if !ok {
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := t.MempoolTxs(c)
		cancel()
		if err != nil || n < 10 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// earlyMiss ends a find-max step once it has clearly missed: more than
// after seconds of the offered load accepted and not yet committed, two
// seconds running, past the warm-up.
type earlyMiss struct {
	rate, after, warm float64
	end               context.CancelCauseFunc
	over              int
	why               string
	pace              pace
}

// minStepBlocks is how many of the chain's blocks a step's steady window
// holds at least, once find-max has seen its pace.
const minStepBlocks = 5

// paced is the length of a step that holds minStepBlocks of a chain's
// blocks of interval seconds, after the warm-up (0: the pace is not known).
// Steps of 8 s on factomd's 10 s blocks measured one block, or none.
func (f FindMax) paced(interval float64) time.Duration {
	if interval <= 0 {
		return 0
	}
	return (f.Warm + time.Duration((minStepBlocks*interval+1)*float64(time.Second))).Round(time.Second)
}

// tooFewBlocks says, and logs, that a step of length held fewer than
// minStepBlocks of the chain's blocks of interval seconds.
func (f FindMax) tooFewBlocks(res *report.Result, length time.Duration, interval float64) bool {
	b := res.Summary.BlocksSummary
	if b.Count == 0 || b.Steady >= minStepBlocks || length >= f.paced(interval) {
		return false
	}
	fmt.Fprintf(f.Log, "  its steady window held %d of the chain's blocks (one every %.1f s): measured again for %s\n", b.Steady, interval, f.paced(interval))
	return true
}

// chainPace is the chain's block interval in seconds as a step's result
// tells it: the interval its kind declared, the median it saw, or, with
// fewer than two blocks, at least the step's length; else what was known.
func chainPace(res *report.Result, length time.Duration, known float64) float64 {
	for _, c := range res.Capacities {
		if c.Name == report.BlockInterval && c.Capacity > 0 {
			return c.Capacity
		}
	}
	b := res.Summary.BlocksSummary
	switch {
	case b.IntervalMsMedian > 0 && b.Count >= 3:
		return b.IntervalMsMedian / 1000
	case b.Count > 0 && b.Count < 3:
		return math.Max(known, math.Min(length.Seconds(), 60))
	}
	return known
}

// pace follows the blocks a run's seconds report: the chain's interval as
// seen so far. A payment waits about one interval for its block: pending
// load is measured against that, not against seconds alone.
type pace struct {
	first, last float64
	blocks      int
}

func (p *pace) add(s *report.Second) {
	if s.Blocks == 0 {
		return
	}
	if p.blocks == 0 {
		p.first = s.T
	}
	p.last, p.blocks = s.T, p.blocks+s.Blocks
}

// interval is the seconds between blocks so far; before two, at least the
// time since the run began (no block for that long is a slow chain).
func (p *pace) interval(now float64) float64 {
	if p.blocks < 2 {
		return now
	}
	return math.Max((p.last-p.first)/float64(p.blocks-1), now-p.last)
}

func (m *earlyMiss) Second(s *report.Second, _ *measure.Interval, _ bool) {
	m.pace.add(s)
	if m.after <= 0 || m.why != "" || s.T <= m.warm {
		return
	}
	// Two of the chain's own blocks' worth of load pending, at least.
	after := math.Max(m.after, 2*m.pace.interval(s.T))
	if float64(s.InFlight) > after*m.rate {
		m.over++
	} else {
		m.over = 0
	}
	if m.over >= 2 {
		m.why = fmt.Sprintf("ended early at %.0f s: %d payments accepted and not committed, more than %.0f s of the offered load", s.T, s.InFlight, after)
		m.end(errors.New(m.why))
	}
}

func (m *earlyMiss) Result(*report.Result, bool) {}

// probe runs one ramp of live payments, doubling every 2 s from the search's
// start, and returns the highest committed rate seen over two seconds
// (0 when it learnt nothing). It ends once the system falls behind.
func (f FindMax) probe(ctx context.Context, sc scenario.Scenario, base string, tgt sut.Target) (float64, error) {
	waitForEmptyMempool(ctx, tgt)
	rc := sc
	rc.Load.Rate, rc.Load.Steps, rc.Load.Stages = f.Search.Start, nil, nil
	for r := 2 * f.Search.Start; ; r *= 2 {
		r = math.Min(r, f.Search.MaxRate)
		rc.Load.Stages = append(rc.Load.Stages, scenario.Stage{Duration: scenario.Duration(2 * time.Second), Target: r, Ramp: "linear"})
		if r >= f.Search.MaxRate || len(rc.Load.Stages) == 12 {
			break
		}
	}
	rc.Load.Warmup, rc.Load.Drain = 0, scenario.Duration(2*time.Second)
	rc.Workload.Mode = scenario.Live // a plan this large is not worth presigning
	rc.Thresholds = nil
	rc.Out = filepath.Join(base, "probe")
	fmt.Fprintf(f.Log, "probe: a ramp from %.0f tx/s, doubling every 2 s, until the system falls behind\n", f.Search.Start)
	ro := f.Run
	ro.Log = io.Discard
	probeCtx, end := context.WithCancelCause(ctx)
	w := &capacityWatch{end: end}
	ro.Observers = append(append([]runner.Observer{}, ro.Observers...), w)
	_, err := runner.Run(probeCtx, rc, ro)
	end(nil)
	if ctx.Err() != nil {
		return 0, err
	}
	if w.best == 0 && w.why != "" {
		// Ended by its own watch before a block committed anything (a
		// chain of blocks far apart): the steps ramp without an estimate.
		fmt.Fprintf(f.Log, "  the probe learnt nothing: it %s before a block committed its payments, so the steps ramp from %.0f tx/s\n", w.why, f.Search.Start)
		return 0, nil
	}
	if err != nil && w.best == 0 {
		// The steps then ramp from the search's start, without an estimate.
		fmt.Fprintf(f.Log, "  the probe failed, so the steps ramp from %.0f tx/s: %v\n", f.Search.Start, err)
		return 0, nil
	}
	fmt.Fprintf(f.Log, "  committed up to %.0f tx/s (%s)\n", w.best, w.why)
	return w.best, nil
}

// capacityWatch follows a probe: the best committed rate over two seconds,
// and the end of the ramp once more than a second of the offered load is
// pending, two seconds running, or heldFor seconds after the system first
// held the sends back (the in-flight window full: the pending count can no
// longer grow, and the ramp's later seconds taught nothing in past runs).
type capacityWatch struct {
	end        context.CancelCauseFunc
	prev, best float64
	over       int
	heldAt     float64
	why        string
	pace       pace
}

const heldFor = 3

func (w *capacityWatch) Second(s *report.Second, _ *measure.Interval, final bool) {
	if w.why != "" || final {
		return
	}
	c := float64(s.Committed)
	w.best = math.Max(w.best, (c+w.prev)/2)
	w.prev = c
	w.pace.add(s)
	// More pending than a second of load and two of the chain's blocks.
	if offered := float64(s.Offered); s.T > 2 && float64(s.InFlight) > math.Max(offered*math.Max(1, 2*w.pace.interval(s.T)), 100) {
		w.over++
	} else {
		w.over = 0
	}
	if s.T > 2 && w.heldAt == 0 && float64(s.Sent) < 0.9*float64(s.Offered) {
		w.heldAt = s.T
	}
	switch {
	case w.over >= 2:
		w.why = fmt.Sprintf("fell behind at %.0f s, offered %d/s", s.T, s.Offered)
	case w.heldAt > 0 && s.T >= w.heldAt+heldFor:
		w.why = fmt.Sprintf("held back from %.0f s: %d of %d offered/s sent", w.heldAt, s.Sent, s.Offered)
	default:
		return
	}
	w.end(errors.New(w.why))
}

func (w *capacityWatch) Result(res *report.Result, final bool) {
	if final && w.why == "" {
		w.why = "the ramp ended"
	}
}
