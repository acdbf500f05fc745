package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tpslab/tpslab/internal/confirm"
	"github.com/tpslab/tpslab/internal/dispatch"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// loadState is what the load phase shares between its goroutines.
type loadState struct {
	eng     *dispatch.Engine
	trk     *confirm.Tracker
	stop    context.CancelCauseFunc // stops offering, with the reason
	loadEnd atomic.Int64            // ns since start when offering ended; 0 while offering
	mempool atomic.Int64            // the target's mempool, as the sampler last read it
	// mempoolBefore is the target's mempool when the load began (-1: unknown).
	mempoolBefore int
	slowest       []telemetry.Statement // read at the end
	// sink: the endpoint is tpslab sink, which commits nothing (no drain
	// to wait, no blocks to count on).
	sink bool
	blockState
	steadyState
	cpuState
}

// blockState is what the blocks said, written by the tracker's block
// callback (onBlock) under mu and read by the collector and the summary.
type blockState struct {
	hasBlock  bool       // the system has blocks (a chain)
	mu        sync.Mutex // guards the fields below
	firstH    int64
	lastH     int64
	lastSeen  time.Duration // when the last block was seen; 0 before the first
	gaps      []gap         // block-less gaps of 3 s or more
	intervals *hdrhistogram.Histogram
}

// steadyState is the steady window as the collector (tick) reads it, one
// second at a time under tickMu: its blocks, seconds, generator CPU,
// telemetry, and the nodes' and endpoints' health.
type steadyState struct {
	tickMu       sync.Mutex
	steadyH      [2]int64
	steadyB      [2]float64 // when the steady window's first and last blocks were seen
	steadyB0     int64      // our committed payments in the steady window's first block
	steadyBlocks int
	steadyIv     *hdrhistogram.Histogram // seen-intervals between steady blocks, ms
	// steadyBytes and steadyGas sum the steady blocks' bytes and our
	// payments' gas in them; steadyBytesMax is the fullest block's bytes.
	steadyBytes    int64
	steadyGas      uint64
	steadyBytesMax int
	steadyTxs      int64
	steadyTxsMin   int
	steadyTxsMax   int
	steadyN        int
	steadyGenCPU   float64 // sum of the generator's CPU % over steady seconds
	lastCPU        time.Duration
	nodeUp         []bool
	lastWords      string           // the last dead node's log line naming its cause
	telWin         telemetry.Window // steady seconds of telemetry
	downSince      time.Duration    // all endpoints down since (0: not all down)
}

// cpuState is what the load cost the generator and the machine, taken by
// the loop when offering starts and ends.
type cpuState struct {
	cpuStart     time.Duration
	cpuLoad      time.Duration
	busy         dispatch.Busy // how the workers spent the load
	lanesStart   int           // gathering lanes when the load began (growth adds more)
	machine0     [3]uint64     // /proc/stat busy, total, steal at the load's start
	machineLoad  float64       // busy share of the machine over the load, 0..1
	machineSteal float64       // stolen share of the machine over the load, 0..1
	// /proc/stat at the last second's end, and at the steady window's
	// start and its last second's end: the machine over the steady window,
	// as the nodes' telemetry (counted over the whole load, a ramp's idle
	// warm-up showed the machine 71% busy where the steady window was 96%).
	machinePrev   [3]uint64
	machineSteady [2][3]uint64
	loadAvg       float64 // the 1-minute load average when the load ended
	pauses        pauseWatch
}

// gap is a stretch without blocks.
type gap struct{ from, to time.Duration }

// minGap is the shortest block-less stretch ever called a stall: longer
// than a few consensus rounds (a dead proposer's turn costs a round,
// timeout_propose plus a little, 3 s by default), so slower consensus is not
// mistaken for a stopped chain.
const minGap = 10 * time.Second

// gapFloor is the shortest block-less stretch recorded: the judgement's
// least halt (report.T.HaltFloorS), which it weighs against the chain's
// own block interval.
var gapFloor = time.Duration(report.T.HaltFloorS * float64(time.Second))

func (r loop) execute(ctx context.Context) (*report.Result, error) {
	sc := r.sc
	tgt := r.conn.Target
	hard := hardOf(ctx)
	// Observing (blocks, collection) outlives offering: it goes on through
	// the drain, and only a second interruption or the end stops it.
	observe, stopObserving := context.WithCancel(hard)
	defer stopObserving()
	offer, stopOffer := context.WithCancelCause(ctx)
	defer stopOffer(nil)

	info, err := tgt.Probe(observe)
	if err != nil {
		r.finishEarly(End{Kind: FailedEarly, Detail: "target does not answer: " + err.Error()})
		return r.res, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	if err := r.begin(ctx, observe, info, stopOffer); err != nil {
		return r.res, err
	}
	ls := r.ls

	var bg sync.WaitGroup
	run := func(f func()) {
		bg.Add(1)
		go func() { defer bg.Done(); f() }()
	}
	if c := tgt.Confirmer(); c != nil {
		if rc, ok := c.(sut.Resilient); ok {
			rc.OnOutage(func(err error) {
				if r.databaseFaulted() {
					// The fault's doing: the confirmer reads on when it is back.
					r.event(time.Now(), "confirmer_waits", "database", err.Error())
					return
				}
				stopOffer(End{Kind: TargetFailed, Detail: err.Error(), tracking: true})
			})
		}
		run(func() {
			if err := c.Run(observe, ls.firstH, ls.trk); err != nil && observe.Err() == nil {
				// A typed end: a plain error reads as an interrupt (issue 51:
				// a dead database under the exchange ended "interrupted").
				stopOffer(endf(TargetFailed, "blocks can no longer be read: %v%s", err, r.whoDied()))
			}
		})
	}
	if p, ok := tgt.(sut.Pooled); ok {
		run(func() { p.Pool().Watch(observe, 500*time.Millisecond) })
	}
	run(func() { r.sampleMempool(observe) })
	run(func() { r.runTelemetry(observe) })
	run(func() { r.expire(observe) })
	loadDone := make(chan struct{})
	if len(sc.Profile) > 0 {
		run(func() { r.takeProfiles(observe, loadDone) })
	}
	collectorDone := make(chan struct{})
	go func() { defer close(collectorDone); collector{r.run}.collect(observe) }()

	r.offerLoad(offer, hard, loadDone)
	if r.health != nil {
		r.health.LoadEnded(time.Now())
	}

	// Why offering ended, before anything else cancels.
	ended := End{Kind: Completed}
	if e, ok := endOf(offer); ok {
		ended = e
		if ctx.Err() != nil {
			ended = End{Kind: Interrupted}
		}
	}
	drained := r.drain(offer, hard, ended)
	if e, ok := endOf(offer); ended.Kind == Completed && ok && ctx.Err() == nil {
		ended = e // the chain halted during the drain
	}
	if ls.trk.Len() > 0 && hard.Err() == nil && !ended.hopeless() {
		r.readHead(observe)
	}
	if r.health != nil && hard.Err() == nil && !ended.hopeless() { // a halted chain catches up with nothing
		r.health.WaitCaughtUp(observe, catchUpWait)
	}
	if ended.Kind == Interrupted {
		// When offering was stopped, not when the engine returned: that
		// waits for the lanes' last sends, longer on a busy machine.
		at, ok := ls.eng.Stopped()
		if !ok {
			at = time.Duration(ls.loadEnd.Load())
		}
		ended.Detail = fmt.Sprintf("stopped offering at %.1f s; %s", at.Seconds(), drained)
	}
	stopObserving()
	<-collectorDone
	bg.Wait()
	return r.wrapUp(ended)
}

// begin sets the load's state up, waits for the agreed start (segments),
// and starts the engine and the faults; an error has finished the run early.
func (r loop) begin(ctx, observe context.Context, info sut.Info, stopOffer context.CancelCauseFunc) error {
	sc, tgt := r.sc, r.conn.Target
	ls := &loadState{stop: stopOffer,
		blockState:  blockState{hasBlock: info.Height > 0, firstH: info.Height + 1, intervals: hdrhistogram.New(1, 3_600_000, 2)},
		steadyState: steadyState{steadyIv: hdrhistogram.New(1, 3_600_000, 2)}}
	r.ls = ls
	r.sum = &summarizer{sc: &r.sc, profile: r.profile, rec: r.rec, ls: ls, tel: r.tel, loadDur: r.loadDur}
	if info.Version != "" { // what the endpoint says of itself (provenance)
		r.w.Update(func(res *report.Result) {
			if res.Network != nil {
				res.Network.Reported = info.Version
			}
		})
	}
	if info.Version == "sink" { // tpslab sink's /status (issue 54: 16,000 "expired" said nothing)
		ls.sink = true
		r.note("the endpoint is tpslab sink: it accepts every payment and commits none, to measure tpslab's own sending; committed stays 0 and what it took is in flight at the end: read sent/s, ack latency and schedule lag")
	}
	ls.mempoolBefore = r.mempoolBefore(observe) // before the start: a wait must not eat the schedule
	r.start = time.Now()
	if r.o.Gate != nil {
		at, err := r.o.Gate(observe)
		if err != nil {
			r.finishEarly(End{Kind: FailedEarly, Detail: "segments did not start together: " + err.Error()})
			return exitcode.Wrap(exitcode.TargetFailed, err)
		}
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			r.finishEarly(End{Kind: InterruptedEarly, Detail: context.Cause(ctx).Error()})
			return exitcode.Wrap(exitcode.TargetFailed, context.Cause(ctx))
		}
		r.start = at
	}
	eng := &dispatch.Engine{Target: tgt, Workload: r.conn.Workload, Recorder: r.rec, Connections: sc.Load.Connections,
		MaxConnections: sc.Load.MostConnections(), Seed: sc.Seed, Peak: r.profile.Peak()}
	if every := sc.Load.SendEvery(1); sc.Load.Model == scenario.Open && every > 0 {
		eng.SendEvery = func(time.Duration) time.Duration { return every } // a fixed interval, parsed once
		if sc.Load.SendInterval == "auto" {
			eng.SendEvery = func(t time.Duration) time.Duration { return sc.Load.SendEvery(r.profile.RateAt(t)) }
		}
	}
	ls.eng = eng
	ls.trk = confirm.New(eng.Resolve, r.start, r.rec.NewShard())
	ls.trk.OnBlock = r.onBlock
	eng.Tracker = ls.trk
	if ev, ok := tgt.(sut.Eventer); ok {
		ev.OnEvent(func(e sut.Event) {
			if e.Kind == "note" {
				r.note("%s", e.Detail)
				return
			}
			r.event(e.Time, e.Kind, e.Target, e.Detail)
		})
	}
	ls.cpuStart = measure.CPUTime()
	ls.lastCPU = ls.cpuStart
	ls.machine0[0], ls.machine0[1], ls.machine0[2] = machineCPU()
	eng.Start(r.start)
	r.beginFaults()
	return nil
}

// offerLoad offers the load until its end or an interruption, then records
// what the generator and the machine spent on it; loadDone closes when
// offering ends.
func (r loop) offerLoad(offer, hard context.Context, loadDone chan struct{}) {
	sc, ls, eng := r.sc, r.ls, r.ls.eng
	fmt.Fprintf(r.o.Log, "load: %s for %s; results in %s\n", describeLoad(sc), r.loadDur, r.o.Out)
	watching, stopWatching := context.WithCancel(hard)
	go ls.pauses.run(watching)
	if sc.Load.Model == scenario.Open {
		// Grace 0: nothing new is sent after the load's last arrival; what
		// is still due then is unsent, and load.drain only waits for what
		// was sent (issue 23: a hung endpoint kept a run going long after).
		// A trace's last arrival may be gathered in a batch that leaves a
		// little later: the rest of its second, at least schedule.TraceTail,
		// is the grace.
		grace := time.Duration(0)
		if times, _ := sc.Load.TraceTimes(); len(times) > 0 {
			grace = max(r.loadDur-times[len(times)-1], schedule.TraceTail)
		}
		ls.lanesStart = eng.Lanes()
		eng.RunOpen(offer, hard, sc.Load.Arrivals(sc.Seed), grace)
	} else {
		l := sc.Load
		eng.RunClosed(offer, hard, dispatch.Closed{Users: l.Users, RampUp: l.RampUp.D(), Duration: l.Duration.D(),
			Pacing: l.Pacing.D(), Think: l.Think.D(), WaitForCommit: l.WaitFor == "commit"})
	}
	ls.loadEnd.Store(int64(eng.Since()))
	stopWatching()
	ls.busy = eng.Busy()
	if r.sched != nil {
		r.sched.Stop() // undo what is still active: the drain sees a whole network
	}
	close(loadDone)
	ls.cpuLoad = measure.CPUTime() - ls.cpuStart
	ls.loadAvg = loadAverage()
	if busy, total, steal := machineCPU(); total > ls.machine0[1] {
		ls.machineLoad = float64(busy-ls.machine0[0]) / float64(total-ls.machine0[1])
		ls.machineSteal = float64(steal-ls.machine0[2]) / float64(total-ls.machine0[1])
	}
}

// wrapUp audits after faults, takes the system's last notes, expires what
// is still pending, reads the slowest statements and finishes the result.
func (r loop) wrapUp(ended End) (*report.Result, error) {
	ls := r.ls
	if r.sched != nil {
		r.sched.Close()
		r.checkAfterFaults(r.kind)
	}
	for _, f := range r.atEnd {
		for _, n := range f() {
			r.note("%s", n)
		}
	}
	// Whatever is still pending did not commit within the run: expired if
	// its commit timeout passed, else in flight at the end.
	ls.trk.End(ls.eng.Since() - r.sc.CommitTimeout.D())
	collector{r.run}.tick(true)
	if r.tel != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var errs []error
		ls.slowest, errs = r.tel.Slowest(sctx)
		cancel()
		for _, err := range errs {
			r.note("telemetry: %v", err)
		}
	}
	return ending{r.run}.finish(ended)
}

// drain waits, up to load.drain, for what is in flight to resolve, so that
// payments are counted as what they became. It does not wait when nothing
// can commit any more (the chain halted, no endpoint answers), and a second
// interruption ends it.
func (r loop) drain(offer, hard context.Context, ended End) string {
	ls := r.ls
	start := ls.eng.Since()
	until := start + r.sc.Load.Drain.D()
	hopeless := func() bool {
		e, ok := endOf(offer)
		return ok && e.hopeless()
	}
	if ended.hopeless() {
		return "no drain: nothing can commit"
	}
	if ls.sink {
		return "no drain: the sink commits nothing"
	}
	for ls.trk.Len() > 0 && ls.eng.Since() < until && hard.Err() == nil && !hopeless() {
		time.Sleep(50 * time.Millisecond)
	}
	waited := (ls.eng.Since() - start).Seconds()
	switch {
	case hard.Err() != nil:
		return fmt.Sprintf("drain cut short by a second interruption after %.1f s", waited)
	case ls.trk.Len() > 0:
		return fmt.Sprintf("drained %.1f s, %d still in flight", waited, ls.trk.Len())
	}
	return fmt.Sprintf("drained in %.1f s", waited)
}

// readHead reads the chain's height once more when the drain ends with
// payments in flight, and waits (up to headWait) until the confirmer has
// reported every block up to it: a block made just before the drain ended
// is counted, not left to the confirmer's next poll (issue 51).
func (r loop) readHead(ctx context.Context) {
	ls := r.ls
	if !ls.hasBlock {
		return
	}
	c, cancel := context.WithTimeout(ctx, headWait)
	defer cancel()
	info, err := r.conn.Target.Probe(c)
	if err != nil {
		return
	}
	for c.Err() == nil && ls.trk.Len() > 0 {
		ls.mu.Lock()
		h := ls.lastH
		ls.mu.Unlock()
		if h >= info.Height {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// headWait bounds readHead: the confirmer polls at least once a second.
const headWait = 3 * time.Second

// onBlock is told of every block the tracker recorded: it keeps the block
// range and the gaps between blocks (seen times).
func (r loop) onBlock(st measure.BlockStat) {
	ls := r.ls
	seen := time.Duration(st.Seen * float64(time.Second))
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.lastSeen > 0 || ls.lastH > 0 {
		d := seen - ls.lastSeen
		_ = ls.intervals.RecordValue(max(1, d.Milliseconds()))
	}
	// Seen times, not the blocks' own: CometBFT's BFT time dates the
	// block after a partition by its last commit's votes, from before it
	// (a 10 s partition read as no gap at all).
	g := seen - ls.lastSeen
	if g >= gapFloor && (ls.lastSeen > 0 || ls.lastH > 0) {
		ls.gaps = append(ls.gaps, gap{from: seen - g, to: seen})
	}
	ls.lastSeen = seen
	ls.lastH = st.Height
}

func (r loop) sampleMempool(ctx context.Context) {
	m, ok := r.conn.Target.(sut.Mempool)
	if !ok {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
		if n, err := m.MempoolTxs(c); err == nil {
			r.ls.mempool.Store(int64(n))
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// mempoolBefore reads the target's mempool before the load and, with
// target.mempool_wait, waits for it to empty: transactions left there (an
// earlier run's expired payments) take block space from this run's and
// commit during it (issue 34). It says what it found.
func (r loop) mempoolBefore(ctx context.Context) int {
	m, ok := r.conn.Target.(sut.Mempool)
	if !ok {
		return -1
	}
	read := func() int {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		n, err := m.MempoolTxs(c)
		if err != nil {
			return -1
		}
		return n
	}
	n := read()
	if n <= 0 {
		return n
	}
	if wait := r.sc.Target.MempoolWait.D(); wait > 0 {
		fmt.Fprintf(r.o.Log, "the mempool holds %d transactions: waiting up to %s for it to empty (target.mempool_wait)\n", n, wait)
		start := time.Now()
		for deadline := start.Add(wait); n > 0 && time.Now().Before(deadline) && ctx.Err() == nil; {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			if v := read(); v >= 0 {
				n = v
			}
		}
		if n == 0 {
			fmt.Fprintf(r.o.Log, "the mempool emptied in %.0f s\n", time.Since(start).Seconds())
			return 0
		}
	}
	hint := "; --mempool-wait 2m waits for it to empty first"
	if r.sc.Target.MempoolWait.D() > 0 {
		hint = fmt.Sprintf("; it did not empty within target.mempool_wait %s", r.sc.Target.MempoolWait.D())
	}
	r.note("the mempool held %d transactions when the load began (an earlier run's, or others'): they take block space from this run's payments and may commit during it%s", n, hint)
	return n
}

func (r loop) expire(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	timeout := r.sc.CommitTimeout.D()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.ls.trk.Expire(r.ls.eng.Since() - timeout)
		}
	}
}

// finish writes the final result and decides the exit code.
func (r ending) finish(ended End) (*report.Result, error) {
	end := time.Now().UTC()
	var failed []string
	var sum report.Summary
	var broken error
	r.snapshot(true, func(res *report.Result) {
		res.Status, res.EndedBecause, res.EndedAt = "complete", ended.String(), &end
	})
	// The final counts, as the snapshot just summed them.
	r.w.Update(func(res *report.Result) { broken = res.Summary.Counts.Check() })
	var died string
	r.w.Update(func(res *report.Result) {
		if ended.Kind == ChainHalted && res.Summary.Halted == "" {
			// A block during the shutdown hides the halt from the stall
			// check; the run ended for it all the same (issue 51).
			res.Summary.Halted = ended.Detail
		}
		sum = res.Summary
		for _, o := range res.Thresholds {
			if !o.OK {
				failed = append(failed, fmt.Sprintf("%s (%s)", o.Expr, o.Actually()))
			}
		}
	})
	// Judged once, here, from the files every reader reads: every reader
	// prints this judgement.
	r.w.Seal("")
	r.w.Update(func(res *report.Result) {
		if j := res.Judge(); j.Outcome == report.OutcomeDied {
			died = j.Limit.Figures
		}
		// Counts that break the identities are no measurement: the
		// headline says so first, before any figure is read from them.
		if broken != nil && res.Judgement != nil {
			res.Judgement.Headline = "the counts do not add up, so no figure here can be trusted (a tpslab bug, please report it; docs/metrics.md): " + broken.Error() + ". " + res.Judgement.Headline
		}
	})
	if r.releaseLock != nil {
		r.releaseLock()
	}
	if err := r.w.Close(); err != nil {
		return r.res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("the final result could not be written: %v", err))
	}
	if err := r.w.Err(); err != nil && ended.Kind != DiskFull {
		return r.res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("part of the result could not be written: %v", err))
	}
	switch {
	case ended.Kind == Interrupted:
		return r.res, exitcode.Wrap(exitcode.TargetFailed, errors.New("run interrupted; partial result written"))
	case ended.Kind == Aborted: // a threshold clearly lost: a verdict, not a broken run
		return r.res, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("run %s; result written", ended))
	case ended.Kind != Completed:
		return r.res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("run ended early: %s; partial result written", ended))
	case sum.Halted != "":
		return r.res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("the chain stopped committing: %s", sum.Halted))
	case died != "":
		return r.res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("a component of the system died: %s", died))
	case sum.Sent > 0 && sum.Committed == 0 && sum.Accepted+measure.Sum(sum.Unacked) == 0:
		return r.res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("nothing committed: all %d payments sent were rejected (mostly %s)", sum.Sent, topKey(sum.Rejected)))
	case sum.NetCheck != nil && !sum.NetCheck.OK:
		return r.res, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("net check after the faults failed: %s", strings.Join(sum.NetCheck.Problems, "; ")))
	case sum.Lost > 0 && len(r.sc.Faults) > 0:
		return r.res, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%d payments lost: accepted, then neither committed nor expired", sum.Lost))
	case len(failed) > 0:
		return r.res, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("thresholds failed: %s", strings.Join(failed, "; ")))
	}
	return r.res, nil
}

// catchUpWait bounds the wait after the load for every node to come within
// a block of the highest (health's caught_up_s).
const catchUpWait = 30 * time.Second

// fill copies what the run learnt into the result (under the writer's lock).
func (r ending) fill(res *report.Result) {
	if u, ok := r.kind.(kinds.Unitized); ok {
		res.Summary.Units = u.Units(&res.Summary)
	}
	if r.health != nil {
		res.Summary.Health = r.health.Report()
		res.Summary.Health.BlockIntervalS = res.Summary.BlocksSummary.IntervalMsMean / 1000
	}
	res.Chain = r.chain()
	r.notesMu.Lock()
	res.Notes = append([]string(nil), r.notes...)
	res.Events = append([]report.Event(nil), r.events...)
	r.notesMu.Unlock()
	if e, ok := r.conn.Target.(sut.Endpoints); ok {
		res.Endpoints = e.EndpointStats()
	}
}

// chain is the block range the run has read so far.
func (r ending) chain() report.Chain {
	ls := r.ls
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.hasBlock {
		return report.Chain{}
	}
	c := report.Chain{FirstHeight: ls.firstH, LastHeight: ls.lastH, SteadyFirstHeight: ls.steadyH[0], SteadyLastHeight: ls.steadyH[1]}
	if c.LastHeight < c.FirstHeight {
		c.LastHeight = c.FirstHeight - 1 // no block read
	}
	return c
}

func topKey(m map[string]int64) string {
	best, n := "", int64(-1)
	for k, v := range m {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return best
}
