package dispatch

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/sut"
)

// Lanes start at LanesFor's count, sized from the peak rate; growth adds
// lanes while the load runs, from what it measures: a lane whose own work
// (building, signing, recording) filled most of half a second while due payments
// waited for it is the limit, and another lane runs on another core. Live
// signing is why: one lane signed ~37k Ed25519 payments/s on one of two
// cores, and the rate alone never asked for a second lane.
//
// Connections (each payment on its own) start at load.connections and
// grow to what the rate needs, up to load.max_connections, while they
// spend most of their time waiting for answers and due payments wait for
// them: a far or slow target
// needs rate × answer time connections, which no fixed count fits (k6's
// maxVUs, vegeta's workers). Their own work is not the limit there, and a
// hot sender that keeps one connection busy (its payments stay in order on
// it) leaves the rest idle, so it adds none.
type growth struct {
	conns bool          // connections, judged on waiting; else lanes, judged on own work
	step  int           // lanes added at a time: one per endpoint, so each keeps as many
	most  int           // at most GOMAXPROCS lanes per endpoint, or max connections
	next  time.Duration // when to look again
	last  time.Duration // when it last looked
	clock []int64       // each queue's clock (queue.clock) when it last looked
	waits int64         // due payments that waited for their queue's earlier ones since then
	due   int64         // due payments since then
	taken int64         // payments the queues took since then
}

const (
	growEvery = 500 * time.Millisecond // how often growth looks
	// growBusy is the share of the time a lane's own work must fill:
	// below it, the lane has room and waits are the target's answers.
	growBusy = 0.7
	// growAnswering is the share of the connections' time they must
	// spend waiting for answers: below it, some connection had room.
	growAnswering = 0.5
	// growWaits is the share of due payments that must have waited.
	growWaits = 0.01
)

// watchQueues is the growth of qs, nil unless they can grow, and how the
// dispatcher counts a payment waiting for its queue (rec's conn_waits, and
// growth's).
func (e openModel) watchQueues(qs []queue, rec *measure.Shard) (*growth, func()) {
	g := &growth{next: e.Since() + growEvery, last: e.Since(), clock: make([]int64, len(qs))}
	switch qs[0].(type) {
	case *lane:
		g.step = e.Target.(sut.Batcher).BatchLanes()
		g.most = g.step * runtime.GOMAXPROCS(0)
	case *connQueue:
		g.conns, g.most = true, e.MaxConnections
	}
	if g.step < 1 && !g.conns || len(qs) >= g.most {
		return nil, rec.ConnWait
	}
	return g, func() { rec.ConnWait(); g.waits++ }
}

// offered counts a due payment (nil g: nothing to count).
func (g *growth) offered() {
	if g != nil {
		g.due++
	}
}

// took counts a payment a queue took (nil g: nothing to count).
func (g *growth) took() {
	if g != nil {
		g.taken++
	}
}

// restart judges qs afresh from now: the span of a growth, with its pause
// for idle queues, is not judged.
func (g *growth) restart(now time.Duration, qs []queue) {
	g.clock = g.clock[:0]
	for _, q := range qs {
		g.clock = append(g.clock, q.clock())
	}
	g.last, g.next, g.waits, g.due, g.taken = now, now+growEvery, 0, 0, 0
}

// add is how many queues to add at now, judging qs since the last look; 0
// for a nil g.
func (g *growth) add(now time.Duration, qs []queue) int {
	if g == nil || now < g.next {
		return 0
	}
	span, busiest, total := now-g.last, 0.0, 0.0
	for i, q := range qs {
		c := q.clock()
		share := float64(c-g.clock[i]) / float64(span)
		busiest, total = max(busiest, share), total+share
		g.clock[i] = c
	}
	saturated := busiest >= growBusy
	if g.conns {
		saturated = total >= growAnswering*float64(len(qs))
	}
	saturated = saturated && float64(g.waits) > growWaits*float64(g.due)
	due, taken := g.due, g.taken
	g.last, g.next, g.waits, g.due, g.taken = now, now+growEvery, 0, 0, 0
	n := len(qs)
	if !saturated || n >= g.most {
		return 0
	}
	if !g.conns {
		return min(g.step, g.most-n)
	}
	// Saturated connections carry what they took: the rate due needs
	// n × due / taken of them (Little's law); twice that drains the
	// backlog built meanwhile as fast as it built.
	need := max(n+1, int(math.Ceil(2*float64(n)*float64(due)/float64(max(taken, 1)))))
	return min(need, g.most) - n
}

// grow adds k queues to qs once every queue is idle: a sender's route (its
// number modulo the queues) changes with their count, and its payments
// must still reach the target in order, so none may be gathered or in
// flight on its old queue. Offering pauses for at most the exchanges in
// flight (the payments due meanwhile count it in their schedule lag). It
// returns qs unchanged when offering ends first; g judges them afresh.
func (e openModel) grow(io context.Context, p *pauser, g *growth, qs []queue, k int, wg *sync.WaitGroup) []queue {
	for !allIdle(qs) {
		if p.offer.Err() != nil {
			return qs
		}
		p.until(e.Since()+200*time.Microsecond, true)
	}
	_, lanes := qs[0].(*lane)
	for range k {
		qs = append(qs, e.startQueue(io, len(qs), lanes, p.room, wg))
	}
	p.qs = qs
	if lanes {
		e.grown.Store(int64(len(qs)))
	}
	g.restart(e.Since(), qs)
	return qs
}

func allIdle(qs []queue) bool {
	for _, q := range qs {
		if !q.idle() {
			return false
		}
	}
	return true
}
