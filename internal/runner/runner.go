// Package runner runs one scenario end to end: it finds or starts the system
// under test, connects its kind's target and workload, checks the system is
// alive, drives the dispatcher, follows blocks, collects a snapshot every
// second and writes the result. Whatever ends a run, the result on disk is
// valid and says why.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/fault"
	"github.com/tpslab/tpslab/internal/health"
	"github.com/tpslab/tpslab/internal/interrupt"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/profiling"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Options are how a run reports, not what it measures.
type Options struct {
	Out    string // run directory; default runs/<timestamp>
	Binary string // tpslab executable for local nodes; default this one
	// NodeBinary, when set, is the node program of a network the run
	// starts, instead of the kind's own (ab compares two builds).
	NodeBinary string
	Progress   io.Writer // live progress; nil for none
	// ProgressEvery is how often a progress line is printed (0: every
	// second); ProgressInPlace rewrites one line (a terminal).
	ProgressEvery   time.Duration
	ProgressInPlace bool
	ProgressWidth   int       // columns a progress line may fill (0: any)
	Log             io.Writer // what the run is doing
	Version         string
	Kinds           *kinds.Registry // the kinds of system it can measure
	Command         string          // the command that runs it, recorded as owner of a network it starts
	// Observers are fed every second and the result, besides the result
	// file, progress and thresholds (a live Prometheus endpoint).
	Observers []Observer
	// Gate, when set, is asked just before the load for the instant it
	// begins (a segment of a load spread over several generators waits
	// for the start they all agreed on); an error ends the run there.
	Gate func(ctx context.Context) (time.Time, error)
	// CommittedAt, when set, is when the caller last saw the system commit
	// (find-max's step before): a run starting within freshCommit of it
	// does not wait again for the height to advance.
	CommittedAt time.Time
	// Carry, when set, carries presigned payments from this run to the next
	// one given it (find-max's steps; workload.Carry).
	Carry *workload.Carry
}

// freshCommit is how recent a commit the caller saw must be for the
// preflight to take it as proof the chain commits (a wait there costs up to
// a block interval, in each of find-max's steps).
const freshCommit = 5 * time.Second

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

// checkOut makes sure the run directory can be written and holds no earlier
// run, before anything is started.
func checkOut(dir string) (created bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err == nil {
		return false, fmt.Errorf("out: %s already holds a run (result.json); expected a new directory", dir)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("out: %v", err)
	}
	probe := filepath.Join(dir, ".tpslab-write-test")
	if err := os.WriteFile(probe, []byte("ok"), 0o644); err != nil {
		if created {
			os.RemoveAll(dir)
		}
		return false, fmt.Errorf("out: %s is not writable: %v", dir, err)
	}
	os.Remove(probe)
	return created, nil
}

type run struct {
	sc      scenario.Scenario
	o       Options
	sys     *kinds.System
	conn    *kinds.Conn
	w       *report.Writer
	atEnd   []func() []string // notes the system adds after the load
	res     *report.Result
	profile schedule.Profile
	loadDur time.Duration
	rec     *measure.Recorder
	notesMu sync.Mutex
	notes   []string
	events  []report.Event
	start   time.Time // time zero of the load (zero before it)
	ls      *loadState
	sum     *summarizer // set with ls
	obs     []Observer
	prof    atomic.Pointer[profiling.Capture] // set once profiling began
	// releaseLock drops the network's load lock, when one was taken.
	releaseLock func()
	tel         *telemetry.Sampler // nil: nothing to read from the inside
	health      *health.Monitor    // nil: a network whose nodes it cannot read
	sched       *fault.Schedule    // nil: no faults
	links       []report.LinkStat  // emulated links, probed before the load
	netCheck    *report.NetCheck   // the audit after a run with faults
	kind        kinds.Kind
	pidMu       sync.Mutex
	pids        map[string]int    // local nodes' pids as net.json says (watch)
	podUIDs     map[string]string // pods' UIDs likewise (a crash makes a new pod)
}

// faulted says a scheduled fault acts on the node named: its going down
// is the fault's, not the system's death.
// whoDied names the network's nodes that are not running, with their
// last words: blocks that can no longer be read were often a node's
// death, which the next second's health check would have named too late
// (CI: factomd's leader, the run ended "connection refused").
func (r *run) whoDied() string {
	if r.sys == nil || r.sys.Net == nil {
		return ""
	}
	var out []string
	for _, nd := range r.sys.Net.Dead() {
		if r.faulted(nd.Name) {
			continue
		}
		if w := nd.LastWords(); w != "" {
			out = append(out, fmt.Sprintf("%s ended with: %s", nd.Name, w))
		} else {
			out = append(out, nd.Name+" exited, its log naming no cause")
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

func (r *run) faulted(node string) bool {
	for _, f := range r.sc.Faults {
		if slices.Contains(f.Nodes(), node) {
			return true
		}
	}
	return false
}

// allFaulted says every node that is down was taken down by a scheduled
// fault (the only node of a geth network, crashed and restarted): the run
// goes on through it.
func (r *run) allFaulted(nodes []testnet.Node) bool {
	for _, nd := range nodes {
		if !nd.Alive() && !r.faulted(nd.Name) {
			return false
		}
	}
	return true
}

// databaseFaulted says a scheduled fault acts on a database node.
func (r *run) databaseFaulted() bool {
	if r.sys == nil || r.sys.Net == nil {
		return false
	}
	for _, nd := range r.sys.Net.Nodes {
		if nd.Role == "database" && r.faulted(nd.Name) {
			return true
		}
	}
	return false
}

func (r *run) note(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.notesMu.Lock()
	r.notes = append(r.notes, msg)
	r.notesMu.Unlock()
	fmt.Fprintln(r.o.Log, msg)
}

// event records something that happened to the system under test.
func (r *run) event(at time.Time, kind, tgt, detail string) {
	t := 0.0
	if !r.start.IsZero() {
		t = math.Round(at.Sub(r.start).Seconds()*10) / 10
	}
	r.notesMu.Lock()
	r.events = append(r.events, report.Event{T: t, Kind: kind, Target: tgt, Detail: detail})
	r.notesMu.Unlock()
	fmt.Fprintf(r.o.Log, "t=%.1fs %s %s %s\n", t, kind, tgt, detail)
}

// Run executes sc. The result is returned (and on disk) whenever the run
// directory could be made, even if the run then failed; the error says why
// it failed.
func Run(ctx context.Context, sc scenario.Scenario, o Options) (*report.Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Command == "" {
		o.Command = "run"
	}
	if o.Kinds == nil {
		return nil, exitcode.BadInputf("runner: no kinds registered")
	}
	if err := o.Kinds.Resolve(&sc, true); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if err := o.Kinds.Validate(&sc); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if o.Out == "" {
		o.Out = sc.Out
	}
	if o.Out == "" {
		o.Out = DefaultOut()
	}
	created, err := checkOut(o.Out)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	r := &run{sc: sc, o: o, rec: measure.NewRecorder()}
	red := sc
	red.Workload.GenesisSeed = "" // it derives the account keys: never written out
	red.Workload.WalletSeed = ""  // so does this
	red.Network.Seed = ""         // and this (its JSON tag leaves it out too)
	if red.Workload.FunderKey != "" {
		red.Workload.FunderKey = "(given)" // a path to a key: not even that is written out
	}
	r.res = &report.Result{SchemaVersion: report.SchemaVersion, Status: "running", StartedAt: time.Now().UTC(),
		Scenario: red, Environment: environment(o.Version), PID: os.Getpid(), Dir: o.Out}
	if r.w, err = report.NewWriter(o.Out, r.res); err != nil {
		return nil, exitcode.BadInputf("out: %v", err)
	}
	if len(sc.Faults) > 0 {
		r.sched = fault.New(sc.Faults)
	}
	r.obs = r.observers()
	for _, w := range testnet.OrphanWarnings() {
		fmt.Fprintln(o.Log, "warning:", w)
	}
	if err := r.prepare(ctx); err != nil {
		if r.sys != nil {
			stopSystem(r.sys, o.Log, sc.Network.Keep)
		}
		if exitcode.Of(err) == exitcode.BadInput && created {
			r.w.Close()
			os.RemoveAll(o.Out) // nothing ran: leave nothing behind
			return nil, err
		}
		why := End{Kind: FailedEarly, Detail: err.Error()}
		if ctx.Err() != nil {
			why.Kind = InterruptedEarly
			err = exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("interrupted before the load (%v); result written", err))
		}
		r.finishEarly(why)
		return r.res, err
	}
	defer stopSystem(r.sys, o.Log, sc.Network.Keep)
	defer r.conn.Target.Close()
	if r.tel != nil {
		defer r.tel.Close()
	}
	return loop{r}.execute(ctx)
}

// prepare finds or starts the system, takes the load lock, connects the
// target and the workload, checks the system is alive, and presigns.
func (r *run) prepare(ctx context.Context) error {
	sc := &r.sc
	sys, kind, err := findSystem(ctx, sc, r.o)
	if err != nil {
		return err
	}
	r.sys, r.kind = sys, kind
	sys.Warn = func(msg string) { r.note("warning: %s", msg) }
	sys.Note = func(msg string) { r.note("%s", msg) }
	sys.AtEnd = func(f func() []string) { r.atEnd = append(r.atEnd, f) }
	aside := []string(nil)
	if sc.Target.NetHome != "" && sys.Net != nil {
		if aside = setAside(sc, sys.Net, r.o.Kinds.Flags(true)); len(aside) > 0 {
			r.note("the network in %s was made by net up with its own settings; the scenario's %s were set aside", sys.Net.Home, strings.Join(aside, ", "))
		}
	}
	r.w.Update(func(res *report.Result) { res.Network = networkInfo(sys, kind); res.Network.SetAside = aside })
	if len(sc.Faults) > 0 && !kind.Info().Faults && sys.Net != nil {
		takers := r.o.Kinds.NamesWhere(func(k kinds.Kind) bool { return k.Info().Faults })
		return exitcode.BadInputf("faults: for %s networks only, not a %s network", strings.Join(takers, ", "), sys.Kind)
	}
	for i, f := range sc.Faults {
		if f.NeedsLinks() && !kind.Info().Links && sys.Net != nil {
			return exitcode.BadInputf("faults[%d]: %s needs emulated links, which %s networks do not have; they take crash and pause of a node (%s)", i, f.Action, sys.Kind, strings.Join(sys.Net.NodeNames(), ", "))
		}
	}
	if err := fault.Check(sc.Faults, sys.Net); err != nil {
		return err
	}
	if sc.Load.Model == scenario.Open {
		r.profile = sc.Load.Profile()
		r.loadDur = r.profile.Duration()
		r.profile = r.profile.Scale(sc.Load.Segment.Share()) // what this generator offers
	} else {
		r.loadDur = sc.Load.Duration.D()
	}
	if err := r.checkNodes(); err != nil {
		return err
	}
	// A segment's senders are locked by its controller for writing, and by
	// the segment itself for sharing: it may outlive its controller.
	if sys.Net != nil && sc.Workload.Kind != "raw" {
		lock := testnet.LockSenders
		if sc.Load.Segment != nil {
			lock = testnet.LockSegment
		}
		lk, err := lock(sys.Net.Home, sc.Workload.SendersOffset, sc.Workload.Senders)
		if err != nil {
			return exitcode.Wrap(exitcode.BadInput, err)
		}
		r.releaseLock = lk.Release
	}
	conn, err := kinds.Connect(ctx, kind, sys, sc)
	if err != nil {
		return err
	}
	r.conn = conn
	if rk, ok := kind.(kinds.Resourced); ok {
		caps := rk.Capacities(ctx, sys, sc)
		r.w.Update(func(res *report.Result) { res.Capacities = caps })
	}
	r.startTelemetry(ctx, kind)
	if r.tel != nil {
		r.w.Update(func(res *report.Result) { res.Telemetry = r.tel.Metrics() })
	}
	if err := r.preflight(ctx); err != nil {
		return err
	}
	r.probeLinks()
	return r.presign(ctx)
}

// checkNodes refuses a local network with a node already down: the load
// would measure a network other than the one described.
func (r *run) checkNodes() error {
	n := r.sys.Net
	if n == nil {
		return nil
	}
	var dead []string
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			dead = append(dead, nd.Name)
		}
	}
	if len(dead) > 0 {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target.net_home %s: %d of %d nodes are not running (%s); start them again on their state with `tpslab net start --home %s` (or `tpslab net up --reset --home %s` for a fresh network) before loading it",
			n.Home, len(dead), len(n.Nodes), strings.Join(dead, ", "), n.Home, n.Home))
	}
	return nil
}

// preflight checks, before any load, that every endpoint answers and that
// the chain commits: its height must advance.
func (r *run) preflight(ctx context.Context) error {
	tgt := r.conn.Target
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := tgt.Probe(hctx)
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %s does not answer: %w", strings.Join(r.sys.Endpoints, ", "), err))
	}
	if p, ok := tgt.(sut.EndpointProber); ok {
		urls := r.sys.Endpoints
		if pl, ok := tgt.(sut.Pooled); ok {
			urls = pl.Pool().URLs // where submissions go (REST, gRPC, or the RPC)
		}
		for i, e := range urls {
			if err := p.ProbeEndpoint(hctx, i); err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("endpoint %s does not answer: %v", e, err))
			}
		}
	}
	if info.Height == 0 {
		return nil // a system without blocks
	}
	if at := r.o.CommittedAt; !at.IsZero() && time.Since(at) < freshCommit {
		return nil
	}
	wait := 30 * time.Second
	if tc := r.sc.Network.TimeoutCommit.D(); r.sys.Started && 10*tc+5*time.Second < wait {
		wait = 10*tc + 5*time.Second
	}
	wctx, wcancel := context.WithTimeout(ctx, wait)
	defer wcancel()
	for {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("the chain at %s is not committing: height %d did not advance in %s", strings.Join(r.sys.Endpoints, ", "), info.Height, wait))
		case <-time.After(100 * time.Millisecond):
		}
		if now, err := tgt.Probe(wctx); err == nil && now.Height > info.Height {
			return nil
		}
	}
}

// presign signs the payments ahead of the load when the workload is
// presigned, after checking they fit in memory.
func (r *run) presign(ctx context.Context) error {
	sc := r.sc
	p, ok := r.conn.Workload.(workload.Presigner)
	if sc.Workload.Mode != scenario.Presigned || !ok {
		return nil
	}
	n := int(sc.Load.MaxOffers())
	if e, ok := r.conn.Target.(sut.Encoder); ok {
		p.EncodeAhead(e)
	}
	count, bytes := p.PresignPlan(n)
	if limit := float64(scenario.MemoryLimit()); bytes > limit {
		return exitcode.BadInputf("workload.mode: presigned: %d payments need about %s, more than the limit of %s (half of this machine's memory); use --mode live, or a lower rate or shorter duration",
			count, scenario.Bytes(bytes), scenario.Bytes(limit))
	}
	if c, ok := p.(workload.Carrier); ok && r.o.Carry != nil {
		c.UseCarry(r.o.Carry)
	}
	inPlace := r.o.Progress != nil && r.o.ProgressInPlace
	if inPlace {
		// One line on a terminal, rewritten, then replaced by the note.
		fmt.Fprintf(r.o.Progress, "presigning %d payments (about %s)", count, scenario.Bytes(bytes))
	} else {
		fmt.Fprintf(r.o.Log, "presigning %d payments (about %s)\n", count, scenario.Bytes(bytes))
	}
	start := time.Now()
	progress := func(done, total int) {}
	if inPlace {
		progress = func(done, total int) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(r.o.Progress, "\r\033[Kpresigning %d payments (about %s): %3.0f%% (%.0f/s)", total, scenario.Bytes(bytes), 100*float64(done)/float64(total), float64(done)/math.Max(el, 1e-3))
		}
	}
	signed, err := p.Presign(ctx, n, sc.Seed, progress)
	if inPlace {
		fmt.Fprint(r.o.Progress, "\r\033[K")
	}
	el := time.Since(start)
	if err != nil {
		return fmt.Errorf("presigning stopped after %d of %d payments (%.1f s)", signed, count, el.Seconds())
	}
	kept := ""
	if carried := count - signed; carried > 0 { // the plan's payments not signed came from the carry
		kept = fmt.Sprintf(", and took %d signed by the run before", carried)
	}
	r.note("presigned %d payments%s (%d offers, headroom per sender) in %.1f s, %.0f/s", signed, kept, n, el.Seconds(), float64(signed)/el.Seconds())
	// Collect now, before the clock starts: the collection that presigning
	// made due otherwise came during the load (at 400k/s against the sink,
	// a 0.3 s collection mid-run set the schedule lag's p99), and after it
	// the next is not due before the heap doubles.
	runtime.GC()
	return nil
}

// finishEarly completes a result for a run that ended before its load.
func (r *run) finishEarly(why End) {
	end := time.Now().UTC()
	r.w.Update(func(res *report.Result) {
		res.Status, res.EndedBecause, res.EndedAt = "complete", why.String(), &end
		res.Notes = r.notes
		res.Seal(res.Environment.TpslabVersion)
	})
	if r.releaseLock != nil {
		r.releaseLock()
	}
	r.w.Close()
}

func describeLoad(sc scenario.Scenario) string {
	l := sc.Load
	if l.Model == scenario.Closed {
		return fmt.Sprintf("closed model, %d users (wait for %s, pacing %s, think %s)", l.Users, l.WaitFor, l.Pacing.D(), l.Think.D())
	}
	switch {
	case l.Trace != "":
		p, speed := l.Profile(), l.TraceSpeed
		if speed == 0 {
			speed = 1
		}
		return fmt.Sprintf("open model, the trace %s (%.0f arrivals over %s, speed %g), %s %s workload", l.Trace, p.Total(), p.Duration(), speed, sc.Workload.Mode, sc.Workload.Kind)
	case l.Steps != nil:
		return fmt.Sprintf("open model, %g -> %g tx/s by %g every %s (%s arrivals)", l.Steps.From, l.Steps.To, l.Steps.By, l.Steps.Every.D(), l.Arrival)
	case len(l.Stages) > 0:
		return fmt.Sprintf("open model, %d stages (%s arrivals)", len(l.Stages), l.Arrival)
	}
	// A rate is the open model; uniform arrivals are its default.
	arrivals := ""
	if l.Arrival != "uniform" {
		arrivals = fmt.Sprintf(" (%s arrivals)", l.Arrival)
	}
	return fmt.Sprintf("%g tx/s of %s %s%s", l.Rate, sc.Workload.Mode, plural(string(sc.Workload.Kind)), arrivals)
}

func sortStrings(s []string) { sort.Strings(s) }

// plural is a workload kind's name for many of them (payment: payments,
// raw: raw transactions).
func plural(kind string) string {
	switch {
	case kind == "raw":
		return "raw transactions"
	case kind == "erc20":
		return "ERC-20 transfers"
	case strings.HasSuffix(kind, "s"):
		return kind
	}
	return kind + "s"
}

// hardOf is the context a second interruption ends.
func hardOf(ctx context.Context) context.Context { return interrupt.Hard(ctx) }

// The run's parts: run itself wires the system and the observers up and
// keeps the notes; loop offers the load and waits for it to resolve;
// collector reads each second and judges the phase; ending turns what was
// recorded into the result. Each part reads the run's state through its
// *run and owns the methods of its step.
type (
	loop      struct{ *run }
	collector struct{ *run }
	ending    struct{ *run }
)
