package segment

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/fault"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Faults are done by the controller, once for all segments, on the clock
// they agreed (a segment in a pod could not reach the network's processes
// or the cluster's API). What each did is measured on the merged series.
type Faults struct {
	sched  *fault.Schedule
	net    *testnet.Net
	mu     sync.Mutex
	start  time.Time
	events []report.Event
}

// StartFaults schedules sc's faults on the network in home, from the
// instant the coordinator agrees; nil when there are none.
func StartFaults(ctx context.Context, faults []scenario.Fault, home string, c *Coordinator) (*Faults, error) {
	if len(faults) == 0 {
		return nil, nil
	}
	var n *testnet.Net
	if home != "" {
		var err error
		if n, err = testnet.Load(home); err != nil {
			return nil, err
		}
	}
	if err := fault.Check(faults, n); err != nil {
		return nil, err
	}
	f := &Faults{sched: fault.New(faults), net: n}
	go func() {
		start, err := c.Wait(ctx)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.start = start
		f.mu.Unlock()
		f.sched.Begin(fault.Env{Net: n, Event: f.event}, start)
	}()
	return f, nil
}

func (f *Faults) event(at time.Time, kind, target, detail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := math.Round(at.Sub(f.start).Seconds()*10) / 10
	f.events = append(f.events, report.Event{T: t, Kind: kind, Target: target, Detail: detail})
}

// Stop undoes what is still active (after the load).
func (f *Faults) Stop() {
	if f != nil {
		f.sched.Stop()
	}
}

// apply measures each fault's effect on the merged result and adds the
// controller's events.
func (f *Faults) apply(res *report.Result) {
	bi := 0
	for _, s := range res.Series {
		var bs []measure.BlockStat
		for bi < len(res.Blocks) && res.Blocks[bi].Seen <= s.T {
			bs = append(bs, res.Blocks[bi])
			bi++
		}
		f.sched.Observe(s.T, s.Committed, s.Expired, s.Phase == "drain", bs)
	}
	for _, e := range f.sched.Effects(res.Summary.Lost) {
		res.Summary.Faults = append(res.Summary.Faults, report.FaultEffect(e))
	}
	f.sched.Close()
	f.mu.Lock()
	res.Events = append(res.Events, f.events...)
	f.mu.Unlock()
	sort.SliceStable(res.Events, func(i, j int) bool { return res.Events[i].T < res.Events[j].T })
	for _, a := range f.sched.Applied() {
		if a.Err != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("fault %s failed: %s", a.Fault, a.Err))
		}
	}
}
