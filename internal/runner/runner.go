// Package runner runs one scenario end to end: it finds or starts the system
// under test, prepares the workload, drives the dispatcher, reads blocks,
// collects a snapshot every second and writes the result.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/confirm"
	"github.com/tpslab/tpslab/internal/dispatch"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/target"
	"github.com/tpslab/tpslab/internal/target/cometbft"
	"github.com/tpslab/tpslab/internal/threshold"
	"github.com/tpslab/tpslab/internal/workload"
)

// Options are how a run reports, not what it measures.
type Options struct {
	Out      string    // run directory; default runs/<timestamp>
	Binary   string    // tpslab executable for built-in nodes; default this one
	Progress io.Writer // live progress once a second; nil for none
	Log      io.Writer // what the run is doing
	Version  string
}

// Profile is the open-model arrival profile a scenario describes.
func Profile(l scenario.Load) schedule.Profile {
	switch {
	case l.Steps != nil:
		return schedule.Steps(l.Steps.From, l.Steps.To, l.Steps.By, l.Steps.Every.D())
	case len(l.Stages) > 0:
		st := make([]schedule.Stage, len(l.Stages))
		for i, s := range l.Stages {
			st[i] = schedule.Stage{Duration: s.Duration.D(), Target: s.Target, Step: s.Ramp == "step"}
		}
		return schedule.FromStages(l.Rate, st)
	}
	return schedule.Constant(l.Rate, l.Duration.D())
}

// DefaultOut is runs/<UTC timestamp>, made unique.
func DefaultOut() string {
	base := filepath.Join("runs", time.Now().UTC().Format("20060102-150405"))
	out := base
	for i := 2; ; i++ {
		if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = fmt.Sprintf("%s-%d", base, i)
	}
}

type run struct {
	sc       scenario.Scenario
	o        Options
	sut      *sut
	tgt      *cometbft.Target
	wl       workload.Workload
	rec      *measure.Recorder
	trk      *confirm.Tracker
	eng      *dispatch.Engine
	w        *report.Writer
	profile  schedule.Profile
	loadDur  time.Duration
	loadEnd  atomic.Int64 // ns since start; 0 while loading
	mempool  atomic.Int64
	firstH   atomic.Int64
	lastH    atomic.Int64
	steadyH  [2]int64
	steadyB  [2]float64 // when the steady window's first and last blocks were seen
	steadyB0 int64      // our committed payments in the steady window's first block
	steadyN  int
	cpuStart time.Duration
	cpuLoad  time.Duration
	deadFor  int
	tickMu   sync.Mutex
	lastCPU  time.Duration
	notesMu  sync.Mutex
	notes    []string
}

func (r *run) note(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.notesMu.Lock()
	r.notes = append(r.notes, msg)
	r.notesMu.Unlock()
	fmt.Fprintln(r.o.Log, msg)
}

// Run executes sc. The result is returned (and on disk) whenever the load
// phase began, even if the run then failed; the error says why it failed.
func Run(ctx context.Context, sc scenario.Scenario, o Options) (*report.Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := sc.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if o.Out == "" {
		o.Out = sc.Out
	}
	if o.Out == "" {
		o.Out = DefaultOut()
	}
	r := &run{sc: sc, o: o, rec: measure.NewRecorder()}
	s, err := prepare(ctx, &sc, o)
	if err != nil {
		return nil, err
	}
	r.sut = s
	defer s.stop(o.Log, sc.Network.Keep)
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	defer r.tgt.Close()
	return r.execute(ctx)
}

func (r *run) setup(ctx context.Context) error {
	sc := &r.sc
	tgt, err := cometbft.New(cometbft.Options{Endpoints: r.sut.endpoints, Async: sc.Target.Broadcast == "async",
		Poll: sc.Target.Confirm == "poll", Connections: sc.Load.Connections})
	if err != nil {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	tgt.OnEvent = func(m string) { r.note("%s", m) }
	r.tgt = tgt
	if sc.Load.Model == "open" {
		r.profile = Profile(sc.Load)
		r.loadDur = r.profile.Duration()
	} else {
		r.loadDur = sc.Load.Duration.D()
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tgt.Height(hctx); err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %v does not answer: %w", r.sut.endpoints, err))
	}
	if sc.Workload.Kind == "raw" {
		r.wl = workload.NewRaw(fmt.Sprintf("%x", time.Now().UnixNano()), sc.Workload.Padding)
		return nil
	}
	chainID, g, ok := r.sut.ledger()
	if !ok {
		if chainID, g, err = tgt.Ledger(hctx); err != nil {
			return exitcode.Wrap(exitcode.BadInput, fmt.Errorf("workload.kind payment: the target %v is %w; use --workload raw for other chains", r.sut.endpoints, err))
		}
	}
	if sc.Workload.ChainID != "" {
		chainID = sc.Workload.ChainID
	}
	if sc.Workload.GenesisSeed != "" {
		g.Seed = sc.Workload.GenesisSeed
	}
	if sc.Workload.Accounts != 0 {
		g.Accounts = sc.Workload.Accounts
	}
	if err := sc.CheckAccounts(g.Accounts); err != nil {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	fmt.Fprintf(r.o.Log, "deriving %d accounts and reading %d senders' sequences\n", g.Accounts, sc.Workload.Senders)
	p, err := workload.NewPayments(ctx, sc.Workload, workload.PaymentsConfig{ChainID: chainID, GenesisSeed: g.Seed,
		Accounts: g.Accounts, Query: tgt.Account, Seed: sc.Seed})
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, err)
	}
	if sc.Workload.Mode == "presigned" {
		n := r.presignCount()
		start := time.Now()
		progress := func(done, total int) {}
		if r.o.Progress != nil {
			progress = func(done, total int) {
				el := time.Since(start).Seconds()
				fmt.Fprintf(r.o.Progress, "\rpresigning %d payments: %3.0f%% (%.0f/s)   ", total, 100*float64(done)/float64(total), float64(done)/math.Max(el, 1e-3))
			}
		}
		signed := p.Presign(n, sc.Seed, progress)
		if r.o.Progress != nil {
			fmt.Fprintln(r.o.Progress)
		}
		el := time.Since(start)
		r.note("presigned %d payments (for %d offers, with headroom per sender) in %.1f s: %.0f signatures/s", signed, n, el.Seconds(), float64(signed)/el.Seconds())
	}
	r.wl = p
	return nil
}

// presignCount is how many payments the load will offer at most.
func (r *run) presignCount() int {
	l := r.sc.Load
	if l.Model == "open" {
		return int(math.Ceil(r.profile.Total())) + 1
	}
	return l.Users * (int(l.Duration.D()/l.Pacing.D()) + 2)
}

func (r *run) execute(ctx context.Context) (*report.Result, error) {
	sc := r.sc
	red := sc
	red.Workload.GenesisSeed = "" // it derives the account keys: never written out
	res := &report.Result{SchemaVersion: report.SchemaVersion, Status: "running", StartedAt: time.Now().UTC(),
		Scenario: red, Environment: environment(r.o.Version), Network: r.sut.info, Dir: r.o.Out}
	w, err := report.NewWriter(r.o.Out, res)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, fmt.Errorf("out: %w", err))
	}
	r.w = w
	h0, err := r.tgt.Height(ctx)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	r.firstH.Store(h0 + 1)

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.eng = &dispatch.Engine{Target: r.tgt, Workload: r.wl, Recorder: r.rec, Connections: sc.Load.Connections, Seed: sc.Seed}
	r.trk = confirm.New(r.eng.Resolve, cometbft.CodeReason)
	r.eng.Tracker = r.trk
	r.cpuStart = cpuTime()
	r.lastCPU = r.cpuStart
	r.eng.Start(time.Now())

	var bg sync.WaitGroup
	blocks := make(chan target.Block, 256)
	bg.Add(4)
	go func() {
		defer bg.Done()
		if err := r.tgt.Blocks(runCtx, h0+1, blocks); err != nil {
			cancel(fmt.Errorf("target_failed: %v", err))
		}
	}()
	confirmShard := r.rec.NewShard()
	go func() { defer bg.Done(); r.consumeBlocks(runCtx, blocks, confirmShard) }()
	go func() { defer bg.Done(); r.sampleMempool(runCtx) }()
	go func() { defer bg.Done(); r.expire(runCtx, confirmShard) }()
	collectorDone := make(chan struct{})
	go func() { defer close(collectorDone); r.collect(runCtx, cancel) }()

	fmt.Fprintf(r.o.Log, "load: %s for %s; results in %s\n", describeLoad(sc), r.loadDur, r.o.Out)
	if sc.Load.Model == "open" {
		r.eng.RunOpen(runCtx, schedule.NewArrivals(r.profile, sc.Load.Arrival == "poisson", sc.Seed), sc.Load.Drain.D())
	} else {
		l := sc.Load
		r.eng.RunClosed(runCtx, dispatch.Closed{Users: l.Users, RampUp: l.RampUp.D(), Duration: l.Duration.D(),
			Pacing: l.Pacing.D(), Think: l.Think.D(), WaitForCommit: l.WaitFor == "commit"})
	}
	r.loadEnd.Store(int64(r.eng.Since()))
	r.cpuLoad = cpuTime() - r.cpuStart
	drainUntil := r.eng.Since() + sc.Load.Drain.D()
	for r.trk.Len() > 0 && r.eng.Since() < drainUntil && runCtx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	// Why the run ended, before our own cancel hides it.
	ended := "completed"
	if cause := context.Cause(runCtx); cause != nil {
		ended = cause.Error()
		if ctx.Err() != nil {
			ended = "interrupted"
		}
	}
	cancel(errors.New("finished"))
	<-collectorDone
	bg.Wait()
	// Whatever is still pending was not committed within the run.
	r.trk.Expire(time.Duration(math.MaxInt64), confirmShard)
	r.tick(true, cancel)

	end := time.Now().UTC()
	ths, _ := threshold.ParseAll(sc.Thresholds) // validated before the run
	var failed []string
	w.Update(func(res *report.Result) {
		res.Status, res.EndedBecause, res.EndedAt = "complete", ended, &end
		res.Summary = r.summary()
		for _, th := range ths {
			o := th.Check(&res.Summary)
			res.Thresholds = append(res.Thresholds, o)
			if !o.OK {
				failed = append(failed, fmt.Sprintf("%s (actual %g)", o.Expr, o.Actual))
			}
		}
		res.Chain = r.chain()
		res.Notes = r.notes
	})
	if err := w.Close(); err != nil {
		return res, err
	}
	switch {
	case ended == "interrupted":
		return res, exitcode.Wrap(exitcode.TargetFailed, errors.New("run interrupted; partial result written"))
	case ended != "completed":
		return res, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("run ended early: %s; partial result written", ended))
	case len(failed) > 0:
		return res, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("thresholds failed: %s", strings.Join(failed, "; ")))
	}
	return res, nil
}

// chain is the block range the run has read so far.
func (r *run) chain() report.Chain {
	return report.Chain{FirstHeight: r.firstH.Load(), LastHeight: r.lastH.Load(), SteadyFirstHeight: r.steadyH[0], SteadyLastHeight: r.steadyH[1]}
}

func describeLoad(sc scenario.Scenario) string {
	l := sc.Load
	if l.Model == "closed" {
		return fmt.Sprintf("closed model, %d users (wait for %s, pacing %s, think %s)", l.Users, l.WaitFor, l.Pacing.D(), l.Think.D())
	}
	switch {
	case l.Steps != nil:
		return fmt.Sprintf("open model, %g -> %g tx/s by %g every %s (%s arrivals)", l.Steps.From, l.Steps.To, l.Steps.By, l.Steps.Every.D(), l.Arrival)
	case len(l.Stages) > 0:
		return fmt.Sprintf("open model, %d stages (%s arrivals)", len(l.Stages), l.Arrival)
	}
	return fmt.Sprintf("open model, %g tx/s (%s arrivals), %s %s workload", l.Rate, l.Arrival, sc.Workload.Mode, sc.Workload.Kind)
}

func (r *run) consumeBlocks(ctx context.Context, blocks <-chan target.Block, shard *measure.Shard) {
	var prev time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-blocks:
			r.trk.Block(b, b.Seen.Sub(r.eng.StartTime()), prev, shard)
			prev = b.Time
			r.lastH.Store(b.Height)
		}
	}
}

func (r *run) sampleMempool(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
		if n, err := r.tgt.MempoolTxs(c); err == nil {
			r.mempool.Store(int64(n))
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *run) expire(ctx context.Context, shard *measure.Shard) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	timeout := r.sc.CommitTimeout.D()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.trk.Expire(r.eng.Since()-timeout, shard)
		}
	}
}

// collect takes a snapshot at every whole second of the run.
func (r *run) collect(ctx context.Context, cancel context.CancelCauseFunc) {
	for k := 1; ; k++ {
		d := time.Duration(k)*time.Second - r.eng.Since()
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		r.tick(false, cancel)
	}
}

// tick collects one second; final marks the last, partial one.
func (r *run) tick(final bool, cancel context.CancelCauseFunc) {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	now := r.eng.Since()
	t := math.Round(now.Seconds())
	if final {
		t = now.Seconds()
	}
	loadEnd := time.Duration(r.loadEnd.Load())
	warm := r.sc.Load.Warmup.D().Seconds()
	phase := "warmup"
	switch {
	case loadEnd > 0 && now > loadEnd+500*time.Millisecond:
		phase = "drain"
	case !final && t-1 >= warm-1e-9 && t <= r.loadDur.Seconds()+1e-9:
		phase = "steady"
	case t > r.loadDur.Seconds()+1e-9:
		phase = "drain"
	}
	iv := r.rec.Collect(phase == "steady")
	cpu := cpuTime()
	s := report.Second{T: t, Phase: phase, Offered: iv.Offered, Sent: iv.Sent, Accepted: iv.Accepted, Rejected: iv.Rejected,
		Committed: iv.Committed, Failed: iv.Failed, Expired: iv.Expired, Resyncs: iv.Resyncs, WindowWaits: iv.WindowWaits, ConnWaits: iv.ConnWaits, Unsent: iv.Unsent,
		AckMs: measure.Summarize(iv.Ack), CommitMs: measure.Summarize(iv.Commit), LagMs: measure.Summarize(iv.Lag),
		InFlight: r.trk.Len(), MempoolTxs: int(r.mempool.Load()), Blocks: len(iv.Blocks),
		GenCPU: math.Round(100*float64(cpu-r.lastCPU)/float64(time.Second)*10) / 10}
	r.lastCPU = cpu
	if r.sc.Load.Model == "open" && phase != "drain" {
		s.TargetRate = r.profile.RateAt(time.Duration((t - 0.5) * float64(time.Second)))
	}
	sort.Slice(iv.Blocks, func(i, j int) bool { return iv.Blocks[i].Height < iv.Blocks[j].Height })
	for _, b := range iv.Blocks {
		s.BlockTxs += b.Txs
		if phase == "steady" {
			if r.steadyH[0] == 0 {
				r.steadyH[0], r.steadyB[0], r.steadyB0 = b.Height, b.Seen, int64(b.OursOK)
			}
			r.steadyH[1], r.steadyB[1] = b.Height, b.Seen
		}
	}
	if phase == "steady" {
		r.steadyN++
	}
	r.w.Add(s, iv.Blocks)
	if !final {
		r.w.Update(func(res *report.Result) {
			res.Summary = r.summary()
			res.Chain = r.chain()
		})
		_ = r.w.Flush()
	}
	if r.o.Progress != nil && !final {
		fmt.Fprintf(r.o.Progress, "%5.0fs %-7s offered %6d/s  sent %6d/s  committed %6d/s  p99 commit %7.0f ms  in-flight %6d  mempool %6d  errors %d\n",
			t, phase, s.Offered, s.Sent, s.Committed, s.CommitMs.P99, s.InFlight, s.MempoolTxs, measure.Sum(s.Rejected)+measure.Sum(s.Failed)+s.Expired)
	}
	r.watch(s, cancel)
}

// watch ends the run when the system under test is gone: a crashed node of
// the built-in network, or no endpoint accepting anything for 5 s.
func (r *run) watch(s report.Second, cancel context.CancelCauseFunc) {
	if r.sut.net != nil {
		if dead := r.sut.net.Dead(); len(dead) > 0 {
			cancel(fmt.Errorf("node_crashed: %s (pid %d) exited; its log is %s", dead[0].Name, dead[0].PID, dead[0].Log))
			return
		}
	}
	transport := s.Rejected["transport_error"] + s.Rejected["timeout"]
	if s.Sent > 0 && s.Accepted == 0 && transport == measure.Sum(s.Rejected) {
		r.deadFor++
	} else {
		r.deadFor = 0
	}
	if r.deadFor >= 5 {
		cancel(errors.New("target_failed: no endpoint accepted a submission for 5 s (transport errors)"))
	}
}
