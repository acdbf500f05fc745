// Package dispatch sends payments when they are due: it stamps every payment
// with its intended send time, hands it to the worker that owns its sender,
// and records how late it actually left (schedule lag). Open-model arrivals
// come from a schedule; closed-model users pace themselves.
package dispatch

import (
	"cmp"
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/confirm"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// DefaultMaxBacklog bounds the open model's backlog of due payments (8 bytes
// each): past it the generator is hopelessly behind, and further arrivals
// are counted offered and unsent at once instead of held.
const DefaultMaxBacklog = 1 << 20

// Engine drives one load phase.
type Engine struct {
	Target      sut.Target
	Workload    workload.Workload
	Tracker     *confirm.Tracker
	Recorder    *measure.Recorder
	Connections int
	// MaxConnections bounds the connections growth may add when each
	// payment goes on its own (grow.go); at most Connections: fixed.
	MaxConnections int
	Seed           int64
	MaxBacklog     int
	// SendEvery, when set, is how long the open model lets due payments
	// gather at time t before they leave together: on a target that
	// batches, one exchange per endpoint lane carries them (Connections
	// then does not apply). nil sends each payment at its own time.
	SendEvery func(t time.Duration) time.Duration
	// Peak is the load's peak offered rate (0: unknown): when payments
	// gather, it sets the lanes per endpoint (LanesFor).
	Peak float64

	start     time.Time
	confirmer sut.Confirmer
	stopped   atomic.Int64 // ns since start when offering was stopped; 0 while offering or after it ended by itself
	grown     atomic.Int64 // lanes after growth (grow.go); 0: never grew
	workersMu sync.Mutex
	workers   []*worker
	users     []chan bool // closed model: a user's wait for its commit
	samples
}

// samples keep the system's own words for each reason: the first text
// given, up to maxSamples reasons.
type samples struct {
	mu sync.Mutex
	m  map[string]string
}

// maxSamples bounds how many reasons keep a sample of the system's words.
const maxSamples = 64

// sample keeps the first text the system gave for reason.
func (e *samples) sample(reason, detail string) {
	if detail == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]string{}
	}
	if _, ok := e.m[reason]; !ok && len(e.m) < maxSamples {
		if len(detail) > 300 {
			detail = detail[:300] + "…"
		}
		e.m[reason] = detail
	}
}

// Samples are the system's own words for each rejection, failure or lost
// answer, one per reason (the first seen), including mismatches recovered.
func (e *samples) Samples() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]string, len(e.m))
	for k, v := range e.m {
		out[k] = v
	}
	return out
}

// Start fixes time zero of the load; every intended time is relative to it.
func (e *Engine) Start(t time.Time) {
	e.start = t
	e.confirmer = e.Target.Confirmer()
}

// watchStop records when offer is stopped while the load runs (an
// interrupt, a halted chain); the returned func ends the watch, so a load
// that ends by itself records nothing.
func (e *Engine) watchStop(offer context.Context) func() bool {
	return context.AfterFunc(offer, func() { e.stopped.Store(max(int64(e.Since()), 1)) })
}

// Stopped is when offering was stopped before the load ended by itself,
// and whether it was.
func (e *Engine) Stopped() (time.Duration, bool) {
	at := e.stopped.Load()
	return time.Duration(at), at > 0
}

// StartTime is time zero of the load.
func (e *Engine) StartTime() time.Time { return e.start }

// Since is the time since the load began, on the monotonic clock.
func (e *Engine) Since() time.Duration { return time.Since(e.start) }

// Resolve is the tracker's callback: it frees the sender's window slot,
// tells the workload (which may resync the sender), and wakes a closed-model
// user waiting for its commit.
func (e *Engine) Resolve(r confirm.Resolution) {
	if r.Invalid != "" {
		e.release(int(r.Sender)) // it took no sequence of its lane
		return
	}
	o := workload.Committed
	switch r.Outcome {
	case confirm.FailedInBlock:
		o = workload.Failed
		e.sample(r.Reason, r.Detail)
	case confirm.Expired, confirm.InFlightAtEnd:
		o = workload.Expired
	}
	e.resolved(int(r.Sender), r.Nonce, o, r.Reason)
}

func (e *Engine) resolved(s int, nonce uint64, o workload.Outcome, reason string) {
	if s < 0 {
		return
	}
	e.Workload.Release(s)
	e.Workload.Resolved(s, nonce, o, reason)
	e.wake(s)
}

// release frees sender s's window slot and wakes its user (closed model).
func (e *Engine) release(s int) {
	if s < 0 {
		return
	}
	e.Workload.Release(s)
	e.wake(s)
}

// wake tells sender s's user (closed model) that its payment resolved.
func (e *Engine) wake(s int) {
	if len(e.users) > 0 && (s < len(e.users) || wallets(e.Workload)) {
		select {
		case e.users[s%len(e.users)] <- true:
		default:
		}
	}
}

// wallets says closed-model users of w hold several senders each.
func wallets(w workload.Workload) bool {
	wl, ok := w.(workload.Wallets)
	return ok && wl.Wallets()
}

// sleepUntil waits for the load-relative time t; it returns false if ctx ended.
func (e *Engine) sleepUntil(ctx context.Context, t time.Duration) bool {
	d := t - e.Since()
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

type ticket struct {
	intended time.Duration
	sender   int32
	index    uint64
}

// worker submits one transaction at a time on its own submitter; all
// payments of a sender go through one worker, so they reach the system in
// sequence order.
type worker struct {
	e     *Engine
	conn  sut.Submitter
	build workload.Builder
	rec   *measure.Shard
	// How the worker spent the load, in ns: its own work (building,
	// signing, recording) and waiting for the target's answers. Read after
	// the load, so plain adds on the worker's own goroutine.
	working, waiting int64
	from             time.Duration // when it started, into the load (growth starts workers late)
	// a batch's payments, reused
	arena []byte // copies of bytes the builder reuses
	batch []sending
	txs   []sut.Tx
	rcpts []sut.Receipt
	track confirm.Batch
}

func (e *Engine) newWorker(i int, rec *measure.Shard) *worker {
	w := &worker{e: e, conn: e.Target.Submitter(i), build: e.Workload.NewBuilder(e.Seed + int64(i) + 1), rec: rec}
	if !e.start.IsZero() {
		w.from = e.Since()
	}
	e.workersMu.Lock()
	e.workers = append(e.workers, w)
	e.workersMu.Unlock()
	return w
}

// Busy is how the workers (lanes, connections or users) spent the load.
type Busy struct {
	Workers int
	Working time.Duration // their own work: building, signing, recording
	Waiting time.Duration // waiting for the target's answers
	Absent  time.Duration // summed time into the load before each started: their busy share counts from then
}

// Busy sums the workers' time; call it after the load has ended.
func (e *Engine) Busy() Busy {
	e.workersMu.Lock()
	defer e.workersMu.Unlock()
	b := Busy{Workers: len(e.workers)}
	for _, w := range e.workers {
		b.Working += time.Duration(w.working)
		b.Waiting += time.Duration(w.waiting)
		b.Absent += w.from
	}
	return b
}

// submit sends one transaction and counts the throttling its answer
// waited out.
func (w *worker) submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	r := w.conn.Submit(ctx, tx)
	if r.Throttled > 0 {
		w.rec.Throttled(r.Throttled)
	}
	return r
}

// maxRecoveries bounds how often one payment is sent again after sequence
// mismatches.
const maxRecoveries = 3

// sending is one payment between its build and its final answer.
type sending struct {
	tk     ticket
	sender int32 // -1 for senderless workloads
	tx     sut.Tx
	nonce  uint64
	p      confirm.Pending
	sent   time.Duration
	stable bool // tx.Bytes outlive the next build
}

// send builds, tracks and submits one payment, recovers it from sequence
// mismatches, and records the final answer. ctx aborts I/O.
func (w *worker) send(ctx context.Context, tk ticket) sut.Receipt {
	t0 := w.e.Since()
	var sg sending
	if r, ok := w.prepare(ctx, tk, &sg, &clock{e: w.e}); !ok {
		w.working += int64(w.e.Since() - t0)
		return r
	}
	r := w.submit(ctx, sg.tx)
	t1 := w.e.Since()
	r = w.finish(ctx, &sg, r, t1)
	t2 := w.e.Since()
	w.working += int64(sg.sent-t0) + int64(t2-t1)
	w.waiting += int64(t1 - sg.sent)
	return r
}

// clock is a batch's reading of the engine's clock while it builds: a
// presigned payment builds in about a microsecond, so one reading serves
// clockEvery of them (a reading per payment was 7% of the generator's CPU
// at 400k payments/s); a payment signed as it goes reads it afresh.
type clock struct {
	e    *Engine
	at   time.Duration
	left int
}

const clockEvery = 8

func (c *clock) now(fresh bool) time.Duration {
	if fresh || c.left == 0 {
		c.at, c.left = c.e.Since(), clockEvery
	}
	c.left--
	return c.at
}

// sendBatch sends tks' payments in one exchange (the target's batch), then
// finishes each as send does.
func (w *worker) sendBatch(ctx context.Context, bs sut.BatchSubmitter, tks []ticket) {
	t0 := w.e.Since()
	defer func() { w.working += int64(w.e.Since() - t0) }() // less the wait, below
	w.batch = w.batch[:0]
	w.txs = w.txs[:0]
	w.arena = w.arena[:0]
	if t, ok := w.build.(workload.Toucher); ok && len(tks) > 1 {
		for _, tk := range tks {
			t.Touch(int(tk.sender))
		}
	}
	c := clock{e: w.e}
	for _, tk := range tks {
		w.batch = append(w.batch, sending{})
		sg := &w.batch[len(w.batch)-1]
		if _, ok := w.assemble(ctx, tk, sg, &c); !ok {
			w.batch = w.batch[:len(w.batch)-1]
			continue
		}
		if !sg.stable {
			// The next build reuses the builder's buffer; a grown arena
			// leaves earlier copies in the old array, still valid.
			at := len(w.arena)
			w.arena = append(w.arena, sg.tx.Bytes...)
			sg.tx.Bytes = w.arena[at:len(w.arena):len(w.arena)]
		}
	}
	w.track.Reset()
	for k := range w.batch {
		w.track.Add(w.batch[k].tx.ID, w.batch[k].p)
	}
	w.e.Tracker.TrackAll(&w.track)
	kept := w.batch[:0]
	for k := range w.batch {
		if _, ok := w.tracked(&w.batch[k], w.track.OK[k]); ok {
			kept = append(kept, w.batch[k])
			w.txs = append(w.txs, w.batch[k].tx)
		}
	}
	w.batch = kept
	if len(w.txs) == 0 {
		return
	}
	if cap(w.rcpts) < len(w.txs) {
		w.rcpts = make([]sut.Receipt, len(w.txs))
	}
	rs := w.rcpts[:len(w.txs)]
	t1 := w.e.Since()
	bs.SubmitBatch(ctx, w.txs, rs)
	answered := w.e.Since()
	wait := int64(answered - t1)
	w.waiting += wait
	w.working -= wait
	for k := range w.batch {
		if rs[k].Throttled > 0 {
			w.rec.Throttled(rs[k].Throttled)
		}
		w.finish(ctx, &w.batch[k], rs[k], answered)
	}
}

// prepare builds and tracks one payment and records it sent at c's time;
// a payment that could not be built is answered at once (ok false).
func (w *worker) prepare(ctx context.Context, tk ticket, sg *sending, c *clock) (r sut.Receipt, ok bool) {
	if r, ok := w.assemble(ctx, tk, sg, c); !ok {
		return r, false
	}
	return w.tracked(sg, w.e.Tracker.Track(sg.tx.ID, sg.p))
}

// assemble builds one payment into sg, sent at c's time; a payment that
// could not be built is answered at once (ok false).
func (w *worker) assemble(ctx context.Context, tk ticket, sg *sending, c *clock) (r sut.Receipt, ok bool) {
	e := w.e
	s := int(tk.sender)
	sender := tk.sender
	if e.Workload.Senders() == 0 {
		sender = -1
	}
	b, err := w.build.Next(ctx, s, tk.index)
	if b.Resynced {
		w.rec.Resync()
	}
	if err != nil {
		w.rec.Sent(e.Since() - tk.intended)
		w.rec.Acked(false, false, "resync_failed", e.Since()-tk.intended)
		e.Workload.Release(s)
		return sut.Receipt{Status: sut.Rejected, Reason: "resync_failed", Detail: err.Error()}, false
	}
	sent := c.now(!b.Stable)
	*sg = sending{tk: tk, sender: sender, tx: b.Tx, nonce: b.Nonce, sent: sent, stable: b.Stable,
		p: confirm.Pending{Intended: tk.intended, Sent: sent, Sender: sender, Nonce: b.Nonce, Invalid: b.Invalid, Kind: b.Kind}}
	return sut.Receipt{}, true
}

// tracked records sg's payment sent once the tracker took it (ok); if it
// did not, the payment is answered at once (ok false).
func (w *worker) tracked(sg *sending, ok bool) (sut.Receipt, bool) {
	e, tk, sent := w.e, sg.tk, sg.sent
	if !ok {
		// Another payment reached this presigned sequence first and is in
		// flight with these very bytes: sending them again is not a payment.
		w.rec.Sent(sent - tk.intended)
		w.rec.Acked(false, false, "duplicate_in_flight", e.Since()-tk.intended)
		e.Workload.Release(int(tk.sender))
		return sut.Receipt{Status: sut.Rejected, Reason: "duplicate_in_flight"}, false
	}
	if sg.p.Invalid != "" {
		w.rec.Invalid("sent", sg.p.Invalid, "")
		return sut.Receipt{}, true
	}
	w.rec.Sent(sent - tk.intended)
	if sg.p.Kind != "" {
		w.rec.SentKind(sg.p.Kind)
	}
	return sut.Receipt{}, true
}

// finish takes a payment's first answer r, which came at answered: it
// recovers sequence mismatches (sending again as the workload says) and
// records the final answer.
func (w *worker) finish(ctx context.Context, sg *sending, r sut.Receipt, answered time.Duration) sut.Receipt {
	e := w.e
	tk, sender, tx, nonce, p, sent, stable := sg.tk, sg.sender, sg.tx, sg.nonce, sg.p, sg.sent, sg.stable
	s := int(tk.sender)
	if p.Invalid != "" {
		w.finishInvalid(sg, r)
		return r
	}
	for try := 0; ; try++ {
		if r.Status != sut.Pending {
			e.sample(r.Reason, r.Detail)
		}
		rc := w.build.Answer(ctx, s, tx, stable, nonce, r, try < maxRecoveries)
		if rc.Resynced {
			w.rec.Resync()
		}
		if rc.Class == "" {
			break
		}
		for _, o := range rc.Resubmit {
			w.submit(ctx, o)
		}
		resubmits := len(rc.Resubmit)
		if rc.Resigned {
			if _, late := e.Tracker.Untrack(tx.ID, p); late {
				w.rec.LateRefused() // it lives on as new bytes
			}
			tx, nonce, stable = rc.Tx, rc.Nonce, false
			p.Nonce, p.Kind = nonce, rc.Kind
			if !e.Tracker.Track(tx.ID, p) {
				// The retry is another payment's presigned bytes, in
				// flight: they are that payment's, and this one ends here.
				r = sut.Receipt{Status: sut.Rejected, Reason: "duplicate_in_flight"}
				break
			}
		} else {
			resubmits++ // the payment's own bytes again
		}
		if rc.Repriced {
			w.rec.Repriced()
		} else {
			w.rec.Mismatch(rc.Class, resubmits, rc.Resigned)
		}
		r = w.submit(ctx, tx)
		answered = e.Since()
	}
	now := answered
	switch r.Status {
	case sut.Pending:
		w.rec.Acked(true, false, "", now-tk.intended)
		if e.confirmer != nil {
			e.confirmer.Watch(tx.ID)
		}
	case sut.Unacked:
		// Its fate is unknown: it stays tracked, and a block may commit it.
		w.rec.Acked(false, true, r.Reason, now-tk.intended)
		if e.confirmer != nil {
			e.confirmer.Watch(tx.ID)
		}
	case sut.Committed, sut.Failed:
		// An answer that came after the payment's commit timeout settles
		// it late (the tracker had counted it expired and told the
		// workload); one a block settled first is not counted again.
		tracked, late := e.Tracker.Untrack(tx.ID, p)
		ok := r.Status == sut.Committed
		w.rec.Acked(true, false, "", now-tk.intended)
		if !tracked && !late {
			break
		}
		w.rec.Settled(tx.ID, ok, r.Reason, now-tk.intended, now-sent, late)
		if p.Kind != "" {
			w.rec.SettledKind(p.Kind, ok, now-tk.intended)
		}
		if late {
			break
		}
		o := workload.Committed
		if !ok {
			o = workload.Failed
		}
		e.resolved(int(sender), nonce, o, r.Reason)
	default:
		_, late := e.Tracker.Untrack(tx.ID, p)
		w.rec.Acked(false, false, r.Reason, now-tk.intended)
		if late {
			w.rec.LateRefused() // its expiry already told the workload
			break
		}
		if sender >= 0 {
			e.Workload.Release(s)
		}
	}
	return r
}

// finishInvalid records the answer to a deliberately invalid payment: it is
// never recovered, and counts apart from the payments (docs/metrics.md).
func (w *worker) finishInvalid(sg *sending, r sut.Receipt) {
	e, p, sort := w.e, sg.p, sg.p.Invalid
	if r.Status != sut.Pending {
		e.sample(r.Reason, r.Detail)
	}
	switch r.Status {
	case sut.Pending, sut.Unacked:
		// A lost answer is not an acceptance: unless a block shows the
		// payment, what became of it stays unknown (docs/metrics.md).
		if r.Status == sut.Unacked {
			w.rec.Invalid("unanswered", sort, "")
			e.Tracker.Unanswered(sg.tx.ID)
		} else {
			w.rec.Invalid("accepted", sort, "")
		}
		if e.confirmer != nil {
			e.confirmer.Watch(sg.tx.ID)
		}
		return
	case sut.Committed:
		w.rec.Invalid("accepted", sort, "")
		w.rec.Invalid("committed", sort, "")
	case sut.Failed:
		w.rec.Invalid("accepted", sort, "")
		w.rec.Invalid("refused", sort, "in block: "+r.Reason)
	default:
		w.rec.Invalid("refused", sort, r.Reason)
	}
	e.Tracker.Untrack(sg.tx.ID, p)
	if sg.sender >= 0 {
		e.Workload.Release(int(sg.tk.sender))
	}
}

// Lanes is how many gathering lanes the open model sends batches on (one
// per endpoint, one batch in flight each), or 0 when each payment goes
// on its own over Connections workers. After the load, it counts the
// lanes growth added (grow.go).
func (e *Engine) Lanes() int {
	if n := e.grown.Load(); n > 0 {
		return int(n)
	}
	return startLanes(e)
}

// startLanes is the lanes the open model starts with, from the peak rate.
func startLanes(e *Engine) int {
	if b, ok := e.Target.(sut.Batcher); ok && e.SendEvery != nil {
		eps := b.BatchLanes()
		return eps * LanesFor(e.Peak, eps)
	}
	return 0
}

// PerLane is the rate one lane carries with room to spare: one core sent
// up to 387k presigned payments a second on one lane against the sink
// (bench/generator-ceiling.sh).
const PerLane = 150_000

// LanesFor is the lanes per endpoint for a peak offered rate spread over
// endpoints: one per PerLane, at least 1, at most GOMAXPROCS. A lane's
// sending runs on one goroutine; more lanes spread it over cores. A
// sender's payments always take the same lane, so they stay in order.
func LanesFor(peak float64, endpoints int) int {
	if !(peak > 0) || endpoints < 1 {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), int(math.Ceil(peak/float64(endpoints)/PerLane))))
}

// RunOpen offers arrivals from the schedule until it ends or offer ends.
// Due payments join a backlog at their intended time (that is when they
// count as offered) and leave it when a sender has room and its worker is
// free; what is still waiting grace after the schedule ends, or when offer
// ends, is counted unsent. Submissions in progress finish under io. With
// grace 0 the schedule's end is a hard stop: payments gathered in a lane
// but not yet sent are unsent too, so nothing new leaves after the load
// (a hung endpoint costs at most the request in flight).
func (e *Engine) RunOpen(offer, io context.Context, arrivals *schedule.Arrivals, grace time.Duration) {
	openModel{e}.run(offer, io, arrivals, grace)
}

// openModel is the open model's dispatcher over the engine: the backlog,
// the queues to the workers, and what is unsent when offering stops.
type openModel struct{ *Engine }

func (e openModel) run(offer, io context.Context, arrivals *schedule.Arrivals, grace time.Duration) {
	maxBacklog := cmp.Or(max(e.MaxBacklog, 0), DefaultMaxBacklog)
	lanes := startLanes(e.Engine)
	e.grown.Store(0)                  // each run starts from the rate's count
	n := cmp.Or(lanes, e.Connections) // a worker per lane, or per connection
	p := &pauser{e: e.Engine, offer: offer, room: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	defer p.timer.Stop()
	qs, wg := e.startQueues(io, n, lanes, p.room)
	p.qs = qs
	rec := e.Recorder.NewShard()
	g, connWait := e.watchQueues(qs, rec)
	sleep := p.until
	senders := e.Workload.Senders()
	var backlog []time.Duration
	var rows []uint64 // with a trace that names senders: each backlog entry's arrival
	traced, _ := e.Workload.(workload.Traced)
	if traced != nil && !traced.Traced() {
		traced = nil
	}
	var index uint64
	waited := 0  // backlog entries, from the head, already counted as waiting
	sender := -1 // reserved for the backlog's head
	// blocked counts every due payment held back, once, by the reason it first met.
	blocked := func(count func()) {
		for ; waited < len(backlog); waited++ {
			count()
		}
	}
	defer e.watchStop(offer)()
	next, more := arrivals.Next()
	var giveUp time.Duration
loop:
	for offer.Err() == nil {
		now := e.Since()
		if k := g.add(now, qs); k > 0 {
			qs = e.grow(io, p, g, qs, k, wg)
			n = len(qs)
			continue
		}
		for more && next <= now {
			rec.Offered(next)
			g.offered()
			if len(backlog) < maxBacklog {
				backlog = append(backlog, next)
				if traced != nil {
					rows = append(rows, arrivals.Index())
				}
			} else {
				rec.Unsent(1)
			}
			next, more = arrivals.Next()
		}
		if !more && giveUp == 0 {
			giveUp = now + grace
		}
		if len(backlog) == 0 {
			if !more {
				break
			}
			until := next
			if e.SendEvery != nil {
				until = max(until, now+e.SendEvery(now))
			}
			sleep(until, false)
			continue
		}
		if sender < 0 && traced != nil {
			index = rows[0]
			sender = e.reserveTraced(traced, index)
		} else if sender < 0 {
			sender = e.Workload.Reserve()
		}
		if sender < 0 {
			// Every sender's window is full: the system confirms slower than
			// payments are offered.
			blocked(rec.WindowWait)
			if !more && now > giveUp {
				break loop
			}
			sleep(e.pauseUntil(next, more), false)
			continue
		}
		route := int(index) % n
		if senders > 0 {
			route = sender % n
		}
		if ok, busy := qs[route].offer(ticket{intended: backlog[0], sender: int32(sender), index: index}); ok {
			g.took()
			if busy && waited == 0 {
				connWait() // it waits behind a batch still being sent
			}
			backlog = backlog[1:]
			if traced != nil {
				rows = rows[1:]
			}
			index++
			sender = -1
			if waited > 0 {
				waited--
			}
		} else {
			// The worker is still busy with earlier payments: the target
			// answers slower than payments are due.
			blocked(connWait)
			if !more && now > giveUp {
				break loop
			}
			sleep(e.pauseUntil(next, more), true)
		}
	}
	if sender >= 0 {
		e.Workload.Release(sender)
	}
	e.unsentAtStop(offer, rec, arrivals, next, more)
	if len(backlog) > 0 {
		rec.Unsent(int64(len(backlog)))
	}
	e.closeQueues(qs, rec, senders, grace)
	wg.Wait()
}

// pauser is the open model's dispatcher at rest. Lanes are woken once per
// gathering, when it pauses; a pause ends at its time, when offering ends,
// or, waiting for room, when a full lane takes its batch (room), so a lane
// that sends faster than a pause is never held to one batch a pause.
type pauser struct {
	e     *Engine
	offer context.Context
	qs    []queue
	room  chan struct{}
	// One timer for every pause: a new one per pause would allocate at
	// each of thousands of pauses a second.
	timer *time.Timer
}

func (p *pauser) until(t time.Duration, wantRoom bool) {
	for _, q := range p.qs {
		q.flush()
	}
	d := t - p.e.Since()
	if d <= 0 {
		return
	}
	var room chan struct{}
	if wantRoom {
		room = p.room
	}
	p.timer.Reset(d)
	select {
	case <-p.offer.Done():
	case <-p.timer.C:
	case <-room:
	}
}

// reserveTraced reserves the sender a trace names for its arrival row (its
// payments wait for it), or any sender when it names none; -1 when the one
// it needs has no room.
func (e openModel) reserveTraced(traced workload.Traced, row uint64) int {
	if ts := traced.TraceSender(row); ts < 0 {
		return e.Workload.Reserve()
	} else if e.Workload.ReserveSender(ts) {
		return ts
	}
	return -1
}

// startQueues starts one worker per connection, or per lane when the
// target takes batches, each behind its queue.
func (e openModel) startQueues(io context.Context, n, lanes int, room chan struct{}) ([]queue, *sync.WaitGroup) {
	var wg sync.WaitGroup
	qs := make([]queue, n)
	for i := range qs {
		qs[i] = e.startQueue(io, i, lanes > 0, room, &wg)
	}
	return qs, &wg
}

// startQueue starts worker i: a lane when gathering and the target takes
// batches, else a connection sending payments one by one.
func (e openModel) startQueue(io context.Context, i int, gather bool, room chan struct{}, wg *sync.WaitGroup) queue {
	w := e.newWorker(i, e.Recorder.NewShard())
	wg.Add(1)
	if bs, ok := w.conn.(sut.BatchSubmitter); ok && gather {
		l := &lane{kick: make(chan struct{}, 1), room: room}
		go func() {
			defer wg.Done()
			l.run(io, w, bs)
		}()
		return l
	}
	q := &connQueue{ch: make(chan ticket, 8)} // small: a busy connection shows as backpressure, not as a hidden queue
	go func() {
		defer wg.Done()
		for tk := range q.ch {
			w.send(io, tk)
			q.wait.Store(w.waiting)
			q.held.Add(-1)
		}
	}()
	return q
}

// unsentAtStop counts offered, and unsent, every arrival due by the moment
// offering was stopped (an interrupt, a halted chain), even if the
// dispatcher was busy elsewhere: a stalled dispatcher must not shrink
// offered (docs/metrics.md).
func (e openModel) unsentAtStop(offer context.Context, rec *measure.Shard, arrivals *schedule.Arrivals, next time.Duration, more bool) {
	if offer.Err() != nil {
		at, ok := e.Stopped()
		if !ok { // the callback has not run yet: it is about now
			at = e.Since()
		}
		for more && next <= at {
			rec.Offered(next)
			rec.Unsent(1)
			next, more = arrivals.Next()
		}
	}
}

// closeQueues closes every queue; without grace, what lanes still gather
// is unsent, and its senders are released.
func (e openModel) closeQueues(qs []queue, rec *measure.Shard, senders int, grace time.Duration) {
	for _, q := range qs {
		if l, ok := q.(*lane); ok && grace == 0 {
			for _, tk := range l.drop() {
				rec.Unsent(1)
				if senders > 0 {
					e.Workload.Release(int(tk.sender))
				}
			}
		}
		q.close()
	}
}

// queue holds due payments for one worker.
type queue interface {
	offer(ticket) (ok, busy bool) // ok false when the worker has no room; busy: it waits behind an exchange in progress
	flush()                       // the dispatcher is going to sleep
	close()
	idle() bool                 // nothing held: none waiting, none in flight
	clocks() (work, wait int64) // what growth judges (grow.go): its worker's own work and waiting for answers
}

// connQueue feeds a worker that sends payments one by one.
type connQueue struct {
	ch   chan ticket
	held atomic.Int32 // offered and not yet answered
	// wait is its worker's time waiting for answers (worker.waiting),
	// published after each payment for the dispatcher, which adds
	// connections from it.
	wait atomic.Int64
}

func (q *connQueue) offer(tk ticket) (ok, busy bool) {
	q.held.Add(1)
	select {
	case q.ch <- tk:
		return true, false
	default:
		q.held.Add(-1)
		return false, true
	}
}
func (*connQueue) flush()                       {}
func (q *connQueue) close()                     { close(q.ch) }
func (q *connQueue) idle() bool                 { return q.held.Load() == 0 }
func (q *connQueue) clocks() (work, wait int64) { return 0, q.wait.Load() } // its own work is not judged

// lane gathers payments for a batch: the dispatcher adds them while it is
// awake and kicks the lane once before it sleeps, so a gathering leaves as
// one batch (a channel send per payment woke the lane mid-gathering and
// split it). It holds at most maxBatch: one batch waits while another is
// being sent.
type lane struct {
	mu      sync.Mutex
	pending []ticket
	kick    chan struct{}
	room    chan struct{} // told when a full lane takes its batch
	closed  bool
	sending bool // a batch is in flight
	// work and wait are its worker's clocks (worker.working: building,
	// signing, recording; worker.waiting: for answers), published after
	// each batch for the dispatcher, which grows lanes from them.
	work, wait atomic.Int64
}

func (l *lane) clocks() (work, wait int64) { return l.work.Load(), l.wait.Load() }

// idle: nothing gathered, no batch in flight.
func (l *lane) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending) == 0 && !l.sending
}

func (l *lane) offer(tk ticket) (ok, busy bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) >= maxBatch {
		return false, true
	}
	l.pending = append(l.pending, tk)
	return true, l.sending
}

func (l *lane) flush() {
	l.mu.Lock()
	n := len(l.pending)
	l.mu.Unlock()
	if n > 0 {
		l.wake()
	}
}

// drop takes back what the lane gathered and has not begun to send.
func (l *lane) drop() []ticket {
	l.mu.Lock()
	defer l.mu.Unlock()
	tks := l.pending
	l.pending = nil
	return tks
}

func (l *lane) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wake()
}

// wake kicks the lane unless a kick is already waiting.
func (l *lane) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run sends each gathering as one batch until the lane is closed and empty.
// A lane that finds a full batch waiting when its last one is answered
// sends it at once (nothing more can gather) and tells the dispatcher,
// which waits for that room.
func (l *lane) run(ctx context.Context, w *worker, bs sut.BatchSubmitter) {
	var tks []ticket
	for range l.kick {
		for {
			l.mu.Lock()
			tks, l.pending = l.pending, tks[:0]
			closed := l.closed
			l.sending = len(tks) > 0
			l.mu.Unlock()
			if len(tks) == 0 {
				if closed {
					return
				}
				break
			}
			if len(tks) >= maxBatch {
				select {
				case l.room <- struct{}{}:
				default:
				}
			}
			w.sendBatch(ctx, bs, tks)
			l.work.Store(w.working)
			l.wait.Store(w.waiting)
			l.mu.Lock()
			l.sending = false
			full := len(l.pending) >= maxBatch
			l.mu.Unlock()
			if !closed && !full {
				break // the next gathering comes with its kick
			}
		}
	}
}

// maxBatch bounds the payments of one batch.
const maxBatch = 1024

// maxPause bounds the dispatcher's wait for room in a lane or a window.
const maxPause = time.Millisecond

// pauseUntil is a brief wait for room, but not past the next arrival; when
// payments gather, a gathering interval, at most maxPause. A full lane
// also wakes the dispatcher when it takes its batch; the bound keeps a
// sender's window, which nothing signals, checked often.
func (e openModel) pauseUntil(next time.Duration, more bool) time.Duration {
	now := e.Since()
	if e.SendEvery != nil {
		return now + min(maxPause, max(200*time.Microsecond, e.SendEvery(now)))
	}
	until := now + 200*time.Microsecond
	if more && next < until {
		until = next
	}
	return until
}

// Closed describes closed-model users.
type Closed struct {
	Users         int
	RampUp        time.Duration
	Duration      time.Duration
	Pacing        time.Duration // time between a user's starts (Locust's constant_pacing)
	Think         time.Duration // pause after each result when Pacing is 0
	WaitForCommit bool
}

// RunClosed runs c.Users users, user u paying from sender u (from the
// senders u, u+Users, … in turn when the workload holds Wallets), each
// sending, waiting for its result, then pacing or thinking, until the
// duration is over or offer ends. Submissions in progress finish under io.
func (e *Engine) RunClosed(offer, io context.Context, c Closed) {
	defer e.watchStop(offer)()
	e.users = make([]chan bool, c.Users)
	for i := range e.users {
		e.users[i] = make(chan bool, 1)
	}
	shards := make([]*measure.Shard, e.Connections)
	for i := range shards {
		shards[i] = e.Recorder.NewShard()
	}
	var wg sync.WaitGroup
	for u := 0; u < c.Users; u++ {
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			w := e.newWorker(u, shards[u%len(shards)])
			next := time.Duration(0)
			if c.Users > 1 {
				next = c.RampUp * time.Duration(u) / time.Duration(c.Users)
			}
			var i uint64
			held := 1 // senders u, u+Users, …
			if wallets(e.Workload) {
				held = (e.Workload.Senders() - u + c.Users - 1) / c.Users
			}
			for next < c.Duration && e.sleepUntil(offer, next) {
				intended := next
				w.rec.Offered(intended)
				s := u + int(i%uint64(held))*c.Users
				for !e.Workload.ReserveSender(s) {
					w.rec.WindowWait()
					if !e.sleepUntil(offer, e.Since()+10*time.Millisecond) {
						w.rec.Unsent(1)
						return
					}
				}
				r := w.send(io, ticket{intended: intended, sender: int32(s), index: uint64(u)<<32 | i})
				i++
				if (r.Status == sut.Pending || r.Status == sut.Unacked) && c.WaitForCommit {
					select {
					case <-e.users[u]:
					case <-offer.Done():
						return
					}
				}
				done := e.Since()
				if c.Pacing > 0 {
					next = intended + c.Pacing
					if next < done {
						next = done
					}
				} else {
					next = done + c.Think
				}
			}
		}(u)
	}
	wg.Wait()
}
