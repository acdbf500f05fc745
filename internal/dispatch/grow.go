package dispatch

import (
	"context"
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
type growth struct {
	step  int           // lanes added at a time: one per endpoint, so each keeps as many
	most  int           // at most GOMAXPROCS lanes per endpoint
	next  time.Duration // when to look again
	last  time.Duration // when it last looked
	work  []int64       // each lane's own work when it last looked
	waits int64         // due payments that waited for a lane's previous batch since then
	due   int64         // due payments since then
}

const (
	growEvery = 500 * time.Millisecond // how often growth looks
	// growBusy is the share of the time a lane's own work must fill:
	// below it, the lane has room and waits are the target's answers.
	growBusy = 0.7
	// growWaits is the share of due payments that must have waited.
	growWaits = 0.01
)

// newGrowth watches lanes (lanes over endpoints) from now; nil when there
// are none or they cannot grow.
func newGrowth(lanes, endpoints int, now time.Duration) *growth {
	most := endpoints * runtime.GOMAXPROCS(0)
	if lanes == 0 || endpoints < 1 || lanes >= most {
		return nil
	}
	return &growth{step: endpoints, most: most, next: now + growEvery, last: now, work: make([]int64, lanes)}
}

// watchLanes is the growth of qs, nil unless they are lanes that can grow,
// and how the dispatcher counts a payment waiting for a lane (rec's
// conn_waits, and growth's).
func (e openModel) watchLanes(qs []queue, lanes int, rec *measure.Shard) (*growth, func()) {
	if _, ok := qs[0].(*lane); !ok {
		return nil, rec.ConnWait
	}
	g := newGrowth(lanes, e.Target.(sut.Batcher).BatchLanes(), e.Since())
	if g == nil {
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

// add is how many lanes to add at now, judging qs (all lanes) since the
// last look; 0 for a nil g.
func (g *growth) add(now time.Duration, qs []queue) int {
	if g == nil || now < g.next {
		return 0
	}
	// Right after growth the lanes outnumber the clocks: that span, with
	// its pause, is not judged.
	same := len(g.work) == len(qs)
	if !same {
		g.work = make([]int64, len(qs))
	}
	span, busiest := now-g.last, 0.0
	for i, q := range qs {
		w := q.(*lane).work.Load()
		busiest = max(busiest, float64(w-g.work[i])/float64(span))
		g.work[i] = w
	}
	saturated := same && busiest >= growBusy && float64(g.waits) > growWaits*float64(g.due)
	g.last, g.next, g.waits, g.due = now, now+growEvery, 0, 0
	if !saturated || len(qs) >= g.most {
		return 0
	}
	return min(g.step, g.most-len(qs))
}

// grow adds k lanes to qs once every lane is idle: a sender's route (its
// number modulo the lanes) changes with their count, and its payments must
// still reach the target in order, so none may be gathered or in flight
// on its old lane. Offering pauses for at most the batches in flight (the
// payments due meanwhile count it in their schedule lag). It returns qs
// unchanged when offering ends first.
func (e openModel) grow(io context.Context, p *pauser, qs []queue, k int, wg *sync.WaitGroup) []queue {
	for !allIdle(qs) {
		if p.offer.Err() != nil {
			return qs
		}
		p.until(e.Since()+200*time.Microsecond, true)
	}
	for range k {
		qs = append(qs, e.startQueue(io, len(qs), true, p.room, wg))
	}
	p.qs = qs
	e.grown.Store(int64(len(qs)))
	return qs
}

func allIdle(qs []queue) bool {
	for _, q := range qs {
		if !q.(*lane).idle() {
			return false
		}
	}
	return true
}
