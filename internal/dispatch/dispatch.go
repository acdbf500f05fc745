// Package dispatch sends payments when they are due: it stamps every payment
// with its intended send time, hands it to the worker that owns its sender,
// and records how late it actually left (schedule lag). Open-model arrivals
// come from a schedule; closed-model users pace themselves.
package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/confirm"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/target"
	"github.com/tpslab/tpslab/internal/workload"
)

// Engine drives one load phase.
type Engine struct {
	Target      target.Target
	Workload    workload.Workload
	Tracker     *confirm.Tracker
	Recorder    *measure.Recorder
	Connections int
	Seed        int64

	start time.Time
	users []chan confirm.Outcome // closed model: a user's wait for its commit
}

// Start fixes time zero of the load; every intended time is relative to it.
func (e *Engine) Start(t time.Time) { e.start = t }

// StartTime is time zero of the load.
func (e *Engine) StartTime() time.Time { return e.start }

// Since is the time since the load began, on the monotonic clock.
func (e *Engine) Since() time.Duration { return time.Since(e.start) }

// Resolve is the tracker's callback: it frees the sender's window slot,
// asks for a resync when the chain's sequence may differ from ours, and
// wakes a closed-model user waiting for its commit.
func (e *Engine) Resolve(r confirm.Resolution) {
	if r.Sender < 0 {
		return
	}
	s := int(r.Sender)
	e.Workload.Release(s)
	if r.Outcome == confirm.Expired || sequenceMismatch(r.Reason) {
		e.Workload.Mismatch(s)
	}
	if s < len(e.users) {
		select {
		case e.users[s] <- r.Outcome:
		default:
		}
	}
}

// sequenceMismatch says the chain expected another sequence from the sender.
func sequenceMismatch(reason string) bool {
	return reason == "sequence_too_low" || reason == "sequence_too_high"
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

// worker submits one transaction at a time on its own connection; all
// payments of a sender go through one worker, so they reach the node in
// sequence order.
type worker struct {
	e     *Engine
	conn  target.Conn
	build workload.Builder
	rec   *measure.Shard
}

func (e *Engine) newWorker(i int) *worker {
	return &worker{e: e, conn: e.Target.Conn(i), build: e.Workload.NewBuilder(e.Seed + int64(i) + 1), rec: e.Recorder.NewShard()}
}

// send builds, tracks and submits one payment, and records its ack.
func (w *worker) send(ctx context.Context, tk ticket) target.Ack {
	e := w.e
	s := int(tk.sender)
	tx, resynced, err := w.build.Build(ctx, s, tk.index)
	if resynced {
		w.rec.Resync()
	}
	if err != nil {
		w.rec.Acked(false, "resync_failed", e.Since()-tk.intended)
		e.Workload.Release(s)
		return target.Ack{Reason: "resync_failed", Log: err.Error()}
	}
	id := workload.TxID(tx)
	sender := tk.sender
	if e.Workload.Senders() == 0 {
		sender = -1
	}
	sent := e.Since()
	e.Tracker.Track(id, confirm.Pending{Intended: tk.intended, Sent: sent, Sender: sender})
	w.rec.Sent(sent - tk.intended)
	ack := w.conn.Submit(ctx, tx)
	w.rec.Acked(ack.OK, ack.Reason, e.Since()-tk.intended)
	if !ack.OK {
		e.Tracker.Untrack(id)
		e.Workload.Release(s)
		if sequenceMismatch(ack.Reason) {
			e.Workload.Mismatch(s)
		}
	}
	return ack
}

// RunOpen offers arrivals from the schedule until it ends or ctx does. Due
// payments join a backlog at their intended time (that is when they count
// as offered) and leave it when a sender has room and its worker is free;
// what is still waiting grace after the schedule ends is counted unsent.
func (e *Engine) RunOpen(ctx context.Context, arrivals *schedule.Arrivals, grace time.Duration) {
	n := e.Connections
	chans := make([]chan ticket, n)
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan ticket, 8) // small: a busy connection shows as backpressure, not as a hidden queue
		w := e.newWorker(i)
		wg.Add(1)
		go func(ch chan ticket) {
			defer wg.Done()
			for tk := range ch {
				w.send(ctx, tk)
			}
		}(chans[i])
	}
	rec := e.Recorder.NewShard()
	senders := e.Workload.Senders()
	var backlog []time.Duration
	var index uint64
	waited := 0  // backlog entries, from the head, already counted as waiting
	sender := -1 // reserved for the backlog's head
	// blocked counts every due payment held back, once, by the reason it first met.
	blocked := func(count func()) {
		for ; waited < len(backlog); waited++ {
			count()
		}
	}
	next, more := arrivals.Next()
	var giveUp time.Duration
loop:
	for ctx.Err() == nil {
		now := e.Since()
		for more && next <= now {
			backlog = append(backlog, next)
			rec.Offered()
			next, more = arrivals.Next()
		}
		if !more && giveUp == 0 {
			giveUp = now + grace
		}
		if len(backlog) == 0 {
			if !more {
				break
			}
			e.sleepUntil(ctx, next)
			continue
		}
		if sender < 0 {
			sender = e.Workload.Reserve()
		}
		if sender < 0 {
			// Every sender's window is full: the system confirms slower than
			// payments are offered.
			blocked(rec.WindowWait)
			if !more && now > giveUp {
				break loop
			}
			e.pause(ctx, next, more)
			continue
		}
		route := int(index) % n
		if senders > 0 {
			route = sender % n
		}
		select {
		case chans[route] <- ticket{intended: backlog[0], sender: int32(sender), index: index}:
			backlog = backlog[1:]
			index++
			sender = -1
			if waited > 0 {
				waited--
			}
		default:
			// The worker is still busy with earlier payments: the target
			// answers slower than payments are due.
			blocked(rec.ConnWait)
			if !more && now > giveUp {
				break loop
			}
			e.pause(ctx, next, more)
		}
	}
	if sender >= 0 {
		e.Workload.Release(sender)
	}
	if len(backlog) > 0 {
		rec.Unsent(int64(len(backlog)))
	}
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
}

// pause waits briefly for room, but not past the next arrival.
func (e *Engine) pause(ctx context.Context, next time.Duration, more bool) {
	until := e.Since() + 200*time.Microsecond
	if more && next < until {
		until = next
	}
	e.sleepUntil(ctx, until)
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

// RunClosed runs c.Users users, user u paying from sender u, each sending,
// waiting for its result, then pacing or thinking.
func (e *Engine) RunClosed(ctx context.Context, c Closed) {
	e.users = make([]chan confirm.Outcome, c.Users)
	for i := range e.users {
		e.users[i] = make(chan confirm.Outcome, 1)
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
			w := &worker{e: e, conn: e.Target.Conn(u), build: e.Workload.NewBuilder(e.Seed + int64(u) + 1), rec: shards[u%len(shards)]}
			next := time.Duration(0)
			if c.Users > 1 {
				next = c.RampUp * time.Duration(u) / time.Duration(c.Users)
			}
			var i uint64
			for next < c.Duration && e.sleepUntil(ctx, next) {
				intended := next
				w.rec.Offered()
				for !e.Workload.ReserveSender(u) {
					w.rec.WindowWait()
					if !e.sleepUntil(ctx, e.Since()+10*time.Millisecond) {
						return
					}
				}
				ack := w.send(ctx, ticket{intended: intended, sender: int32(u), index: uint64(u)<<32 | i})
				i++
				if ack.OK && c.WaitForCommit {
					select {
					case <-e.users[u]:
					case <-ctx.Done():
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
