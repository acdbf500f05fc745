// Package fault does a scenario's scheduled faults to a local network
// while the load runs (crash, pause, partition, latency spike, bandwidth
// cut), undoes them, and measures what each did to the chain.
package fault

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Check validates faults against the network they will hit: every target a
// node of it, links where the action needs them, and a partition that
// leaves someone outside.
func Check(faults []scenario.Fault, n *testnet.Net) error {
	if len(faults) == 0 {
		return nil
	}
	if n == nil {
		return exitcode.BadInputf("faults: need a local network (--net-home, or one tpslab starts), not remote endpoints")
	}
	for i, f := range faults {
		if n.Kubernetes != nil && f.Action != "crash" {
			return exitcode.BadInputf("faults[%d]: %s on a network on Kubernetes, expected crash (its pod is deleted; pause, links and partitions need the nodes' processes and links on this machine)", i, f.Action)
		}
		for _, name := range f.Nodes() {
			if _, ok := n.NodeIndex(name); !ok {
				return exitcode.BadInputf("faults[%d].target: %q is not a node of the network, expected one of %s", i, name, strings.Join(n.NodeNames(), ", "))
			}
		}
		if f.NeedsLinks() && n.Links == nil {
			return exitcode.BadInputf("faults[%d]: %s needs emulated links, and the network in %s has none; start it with `tpslab net up --topology loopback` (or any topology)", i, f.Action, n.Home)
		}
		if f.Action == "partition" && len(f.Nodes()) >= len(n.Nodes) {
			return exitcode.BadInputf("faults[%d].target: %q is every node, expected a group that leaves some out", i, f.Target)
		}
	}
	return nil
}

// Env is what a schedule acts on and reports to.
type Env struct {
	Net   *testnet.Net
	Event func(at time.Time, kind, target, detail string)
}

// Schedule runs faults relative to the load's start.
type Schedule struct {
	env     Env
	faults  []scenario.Fault
	start   time.Time
	ctl     *netem.Control
	mu      sync.Mutex // guards net.json writes and applied
	applied []Applied
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	watch   context.Context // catch-up watches, until Close
	unwatch context.CancelFunc
	wgWatch sync.WaitGroup
	obs     observed
}

// Applied is one fault as it happened.
type Applied struct {
	Fault    scenario.Fault
	Start    time.Duration // since the load began
	End      time.Duration // 0 while active
	CaughtUp time.Duration // crash: from restart to the others' height; -1 not yet
	// Heightless: no node answers with a height (a service, geth): a
	// restarted node has nothing to catch up to that tpslab can read.
	Heightless bool
	Err        string
	undo       func() error
	restarted  time.Duration
}

// New makes a schedule of faults; Begin starts it.
func New(faults []scenario.Fault) *Schedule {
	s := &Schedule{faults: faults}
	s.watch, s.unwatch = context.WithCancel(context.Background())
	s.cancel = func() {}
	return s
}

// Begin starts the faults' clocks at start (the load's time zero).
func (s *Schedule) Begin(env Env, start time.Time) {
	s.env, s.start = env, start
	if env.Net.Links != nil {
		s.ctl = netem.NewControl(&env.Net.Links.Emulation)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for i := range s.faults {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.run(ctx, i)
		}()
	}
}

func (s *Schedule) since() time.Duration { return time.Since(s.start) }

// run does fault i at its time and undoes it after For (or at Stop).
func (s *Schedule) run(ctx context.Context, i int) {
	f := s.faults[i]
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(s.start.Add(f.At.D()))):
	}
	a := Applied{Fault: f, Start: s.since(), CaughtUp: -1}
	undo, detail, err := s.do(f)
	a.undo = undo
	if err != nil {
		a.Err, a.End = err.Error(), a.Start
		s.env.Event(time.Now(), "fault_error", f.Target, fmt.Sprintf("%s: %v", f, err))
	} else {
		s.env.Event(time.Now(), "fault", f.Target, fmt.Sprintf("%s: %s", f, detail))
	}
	s.mu.Lock()
	idx := len(s.applied)
	s.applied = append(s.applied, a)
	s.mu.Unlock()
	if err != nil {
		return
	}
	if f.For > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(s.start.Add(f.At.D() + f.For.D()))):
		}
	} else {
		<-ctx.Done()
	}
	s.end(idx)
	if f.Action == "crash" {
		s.wgWatch.Add(1)
		go func() {
			defer s.wgWatch.Done()
			s.watchCatchUp(idx)
		}()
	}
}

// end undoes applied fault idx once.
func (s *Schedule) end(idx int) {
	s.mu.Lock()
	a := &s.applied[idx]
	undo := a.undo
	a.undo = nil
	s.mu.Unlock()
	if undo == nil {
		return
	}
	err := undo()
	s.mu.Lock()
	a.End = s.since()
	if a.Fault.Action == "crash" {
		a.restarted = a.End
	}
	if err != nil {
		a.Err = "undo: " + err.Error()
	}
	s.mu.Unlock()
	if err != nil {
		s.env.Event(time.Now(), "fault_error", a.Fault.Target, fmt.Sprintf("undo %s: %v", a.Fault, err))
		return
	}
	s.env.Event(time.Now(), "fault_end", a.Fault.Target, fmt.Sprintf("%s undone", a.Fault))
}

// watchCatchUp follows a restarted node until it reaches the height of
// the others, for up to 2 minutes.
func (s *Schedule) watchCatchUp(idx int) {
	s.mu.Lock()
	a := s.applied[idx]
	s.mu.Unlock()
	if a.Err != "" {
		return
	}
	i, _ := s.env.Net.NodeIndex(a.Fault.Target)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.watch.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		var top, mine int64 = 0, -1
		for j, nd := range s.env.Net.Nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			h, err := testnet.Height(ctx, nd.RPC)
			cancel()
			if err != nil {
				continue
			}
			if j == i {
				mine = h
			} else {
				top = max(top, h)
			}
		}
		if mine < 0 && top == 0 && time.Since(deadline.Add(-2*time.Minute)) > 5*time.Second {
			s.mu.Lock()
			s.applied[idx].Heightless = true
			s.mu.Unlock()
			return
		}
		if mine >= 0 && top > 0 && mine >= top-1 {
			s.mu.Lock()
			s.applied[idx].CaughtUp = s.since() - a.restarted
			s.mu.Unlock()
			s.env.Event(time.Now(), "caught_up", a.Fault.Target, fmt.Sprintf("at height %d, %.1f s after its restart", mine, (s.since()-a.restarted).Seconds()))
			return
		}
	}
}

// Stop undoes every active fault and cancels those not yet begun: the
// load has ended.
func (s *Schedule) Stop() {
	s.cancel()
	s.wg.Wait()
}

// Close ends the watches of restarted nodes catching up: the run is over.
func (s *Schedule) Close() {
	s.Stop()
	s.unwatch()
	s.wgWatch.Wait()
}

// Applied lists the faults done so far.
func (s *Schedule) Applied() []Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Applied(nil), s.applied...)
}

// do applies f and returns how to undo it.
func (s *Schedule) do(f scenario.Fault) (undo func() error, detail string, err error) {
	n := s.env.Net
	switch f.Action {
	case "crash":
		i, _ := n.NodeIndex(f.Target)
		if err := n.Kill(i); err != nil {
			return nil, "", err
		}
		return func() error {
			s.mu.Lock()
			defer s.mu.Unlock()
			return n.Restart(i, "")
		}, killedBy(n), nil
	case "pause":
		i, _ := n.NodeIndex(f.Target)
		if err := n.Pause(i); err != nil {
			return nil, "", err
		}
		return func() error { return n.Resume(i) }, "SIGSTOP", nil
	case "partition":
		group := map[string]bool{}
		for _, name := range f.Nodes() {
			group[name] = true
		}
		var cut []string
		for _, l := range n.Links.Links {
			if !l.IsClient() && group[l.From] != group[l.To] {
				if err := s.ctl.Cut(l.Name); err != nil {
					return nil, "", err
				}
				cut = append(cut, l.Name)
			}
		}
		return func() error {
			var first error
			for _, name := range cut {
				if err := s.ctl.Heal(name); err != nil && first == nil {
					first = err
				}
			}
			return first
		}, fmt.Sprintf("cut %d links", len(cut)), nil
	case "delay", "bandwidth":
		touched := n.Links.Touching(f.Target)
		for _, l := range touched {
			c := l.Conditions
			if f.Action == "delay" {
				d, _ := time.ParseDuration(f.Value)
				c.RTT += d
			} else {
				c.RateKbit, _ = netem.ParseRate(f.Value)
			}
			if err := s.ctl.Set(l.Name, c); err != nil {
				return nil, "", err
			}
		}
		return func() error {
			var first error
			for _, l := range touched {
				if err := s.ctl.Set(l.Name, l.Conditions); err != nil && first == nil {
					first = err
				}
			}
			return first
		}, fmt.Sprintf("%s on %d links", f.Value, len(touched)), nil
	}
	return nil, "", fmt.Errorf("unknown action %q", f.Action)
}

// killedBy says how a crash was done.
func killedBy(n *testnet.Net) string {
	if n.Kubernetes != nil {
		return "pod deleted"
	}
	return "SIGKILL"
}
