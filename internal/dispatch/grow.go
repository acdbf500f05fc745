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
// lanes while the load runs, from what it measures. A lane whose own work
// (building, signing, recording) filled most of half a second while due
// payments waited for it is the limit, and another lane runs on another
// core, up to GOMAXPROCS: live signing is why (one lane signed ~37k
// Ed25519 payments/s on one of two cores, and the rate alone never asked
// for a second lane). A lane busy for most of it, a quarter to three
// quarters of that waiting for its batch's answer, leaves its core idle
// while it waits: lanes grow a step at a time, while the process has CPU
// to spare, up to two a core, so one builds while the other's batch is
// answered. One lane against the sink left 15% of its core idle at 400k
// payments/s; a second one on the same core built the next batch
// meanwhile. A lane that only waits is held by the target: against a
// busy chain (CheckTx in turn) lanes that grew on such waits reached 15,
// split the batches, and find-max's confirmation runs missed at rates
// one lane held.
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
	conns bool          // connections, judged on waiting; else lanes, judged on own work, then on waiting
	step  int           // lanes added at a time: one per endpoint, so each keeps as many
	cores int           // lanes growth adds for their own work: GOMAXPROCS per endpoint
	most  int           // at most: max connections, or two lanes a core
	next  time.Duration // when to look again
	last  time.Duration // when it last looked
	clock [][2]int64    // each queue's clocks (queue.clocks) when it last looked
	cpu   time.Duration // the process's CPU time when it last looked
	procs float64       // the cores it may use
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
	// laneAnswering..laneOverlap is the share of busy lanes' time that
	// must go to waiting for answers: a core that much idle, which
	// another lane's building fills; above it, the lanes only wait, and
	// the target is what holds them.
	laneAnswering, laneOverlap = 0.25, 0.75
	// growCPU is the share of its cores the process must leave idle for
	// queues to grow on waiting: above it (docs/metrics.md: CPU-bound),
	// their waits are for the CPU, not for answers, and more would not
	// help (at 400k/s on one core, lanes that grew on waits alone reached
	// 256).
	growCPU = 0.9
)

// watchQueues is the growth of qs, nil unless they can grow, and how the
// dispatcher counts a payment waiting for its queue (rec's conn_waits, and
// growth's).
func (e openModel) watchQueues(qs []queue, rec *measure.Shard) (*growth, func()) {
	g := &growth{next: e.Since() + growEvery, last: e.Since(), clock: make([][2]int64, len(qs)),
		cpu: measure.CPUTime(), procs: float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))}
	switch qs[0].(type) {
	case *lane:
		g.step = e.Target.(sut.Batcher).BatchLanes()
		g.cores = g.step * runtime.GOMAXPROCS(0)
		g.most = 2 * g.cores
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
		work, wait := q.clocks()
		g.clock = append(g.clock, [2]int64{work, wait})
	}
	g.last, g.next, g.waits, g.due, g.taken, g.cpu = now, now+growEvery, 0, 0, 0, measure.CPUTime()
}

// add is how many queues to add at now, judging qs since the last look; 0
// for a nil g.
func (g *growth) add(now time.Duration, qs []queue) int {
	if g == nil || now < g.next {
		return 0
	}
	span := float64(now - g.last)
	busiest, working, waiting := 0.0, 0.0, 0.0 // the busiest queue's own work; the queues' summed own work and waiting
	for i, q := range qs {
		work, wait := q.clocks()
		share := float64(work-g.clock[i][0]) / span
		busiest, working, waiting = max(busiest, share), working+share, waiting+float64(wait-g.clock[i][1])/span
		g.clock[i] = [2]int64{work, wait}
	}
	waited := float64(g.waits) > growWaits*float64(g.due)
	cpu := measure.CPUTime()
	spare := float64(cpu-g.cpu)/span < growCPU*g.procs
	due, taken := g.due, g.taken
	g.last, g.next, g.waits, g.due, g.taken, g.cpu = now, now+growEvery, 0, 0, 0, cpu
	n := len(qs)
	if !waited || n >= g.most {
		return 0
	}
	if !g.conns {
		busy := working + waiting
		switch {
		case busiest >= growBusy: // own work: another core, if one is left
			return max(0, min(g.step, g.cores-n))
		case !spare: // the waits were for the CPU
			return 0
		case busy < growBusy*float64(n) || waiting < laneAnswering*busy || waiting > laneOverlap*busy:
			return 0 // room in the lanes, too little of their time in answers, or nothing else
		}
		// A step at a time: a lane's batch carries what gathered while
		// the last was answered, so the lanes a rate needs are not
		// n × due / taken.
		return min(g.step, g.most-n)
	}
	if !spare || waiting < growAnswering*float64(n) {
		return 0 // the waits were for the CPU, or some connection had room
	}
	// Connections saturated by answers carry what they took: the rate due
	// needs n × due / taken of them (Little's law); twice that drains the
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
