package runner

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/report"
)

// pauseTick is the pause watch's clock: ten wake-ups a second cost
// nothing beside the load, and a tick ten times late is unmistakable.
const pauseTick = 100 * time.Millisecond

// pauseWatch measures the stretches in which tpslab itself did not run
// while it offered the load: a tick that comes report.T.PauseMs or more
// late was not delayed by a busy machine (that costs milliseconds) but by
// a stopped process, a paused virtual machine or a swapped-out one. The
// judgement then knows a late send for the generator's own, whatever
// else waited (docs/metrics.md, "What limited it").
type pauseWatch struct {
	mu      sync.Mutex
	total   time.Duration
	longest time.Duration
}

// run ticks until ctx ends.
func (p *pauseWatch) run(ctx context.Context) {
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	least := time.Duration(report.T.PauseMs * float64(time.Millisecond))
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now() // the tick's own time is when it was due
			if late := now.Sub(last) - pauseTick; late >= least {
				p.mu.Lock()
				p.total += late
				p.longest = max(p.longest, late)
				p.mu.Unlock()
			}
			last = now
		}
	}
}

// into writes the pauses into the generator's figures.
func (p *pauseWatch) into(g *report.Generator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.longest > 0 {
		g.PausedS, g.LongestPauseMs = math.Round(p.total.Seconds()*100)/100, math.Round(float64(p.longest.Microseconds())/100)/10
	}
}
