package runner

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/fault"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testnet"
)

// notProbed is a link's probe error when no probe speaks its protocol
// (the report prints "not probed").
const notProbed = "not probed: no probe speaks its protocol"

// probeLinks measures each emulated link's round trip before the load.
func (r *run) probeLinks() {
	n := r.sys.Net
	if n == nil || n.Links == nil {
		return
	}
	// All links at once: a probe waits out its link's round trips, and a
	// global network's 15 links probed one by one would delay the load by
	// seconds.
	r.links = make([]report.LinkStat, len(n.Links.Links))
	var wg sync.WaitGroup
	for i, l := range n.Links.Links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls := report.LinkStat{Name: l.Name, Conditions: l.Conditions.String(), RTTMs: float64(l.RTT) / float64(time.Millisecond),
				RateKbit: l.RateKbit, ResetProb: l.ResetProb}
			probe := netem.ProbeRTT
			switch {
			case l.Protocol == netem.Opaque:
				ls.ProbeError = notProbed
				r.links[i] = ls
				return
			case l.IsClient():
				probe = netem.ProbeHTTP
			case l.Protocol == "postgres":
				probe = netem.ProbePostgres
			}
			if d, err := probe(l.Listen, 5); err != nil {
				ls.ProbeError = err.Error()
			} else {
				ls.MeasuredRTTMs = math.Round(float64(d)/float64(time.Microsecond)) / 1000
			}
			r.links[i] = ls
		}()
	}
	wg.Wait()
	// Links no probe speaks are counted, not listed one by one: a 5-node
	// factom network has 10 of them.
	var measured []string
	opaque := 0
	for _, l := range r.links {
		switch {
		case l.ProbeError == "":
			measured = append(measured, fmt.Sprintf("%s %.1f ms", l.Name, l.MeasuredRTTMs))
		case l.ProbeError == notProbed:
			opaque++
		default:
			measured = append(measured, fmt.Sprintf("%s not measured (%s)", l.Name, l.ProbeError))
		}
	}
	line := fmt.Sprintf("links: topology %s, %d links", n.Links.Topology, len(r.links))
	if len(measured) > 0 {
		line += "; measured round trips: " + strings.Join(measured, ", ")
	}
	if opaque > 0 {
		line += fmt.Sprintf("; %d not probed (no probe speaks their protocol)", opaque)
	}
	fmt.Fprintln(r.o.Log, line)
}

// linkStats are the links with the traffic telemetry saw through them.
func (r ending) linkStats(s *report.Summary) []report.LinkStat {
	out := append([]report.LinkStat(nil), r.links...)
	for i := range out {
		if st, ok := s.Telemetry[linkMetric(out[i].Name)]; ok {
			out[i].BytesPerS, out[i].MaxBytesPerS = st.Mean, st.Max
		}
	}
	return out
}

func linkMetric(name string) string { return "link." + name + ".bytes" }

// beginFaults starts the fault schedule at the load's time zero.
func (r loop) beginFaults() {
	if r.sched == nil {
		return
	}
	// Its own copy of the network: the watch reloads r.sys.Net's nodes each
	// second, and a restart writes the new pid to net.json for it to see.
	n := r.sys.Net
	if fresh, err := testnet.Load(n.Home); err == nil {
		n = fresh
	}
	r.sched.Begin(fault.Env{Net: n, Event: r.event}, r.start)
}

// checkAfterFaults audits the network after a run with faults, once every
// node answers again (a restarted one may still be starting).
func (r loop) checkAfterFaults(k kinds.Kind) {
	if r.sched == nil || r.sys.Net == nil {
		return
	}
	c, ok := k.(kinds.Network)
	if !ok {
		return
	}
	n := r.sys.Net
	if fresh, err := testnet.Load(n.Home); err == nil {
		n = fresh
	}
	// A restarted node may still be starting: wait until every node answers
	// (a node that does not is named by the check itself), as the kind
	// reads its nodes: heights of a chain, a database's statements.
	settle(c, n, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a := c.Check(ctx, n)
	lines, problems := a.Lines, a.Problems
	r.netCheck = &report.NetCheck{OK: len(problems) == 0, Said: a.OK, Lines: lines, Problems: problems}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(r.o.Log, "net check: FAIL:", p)
		}
	} else {
		fmt.Fprintln(r.o.Log, "net check after the faults: ok")
	}
}

// settle waits up to timeout until the kind's status of every node is
// running and answered.
func settle(c kinds.Network, n *testnet.Net, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		sts := c.Status(ctx, n)
		cancel()
		ok := len(sts) > 0
		for _, st := range sts {
			ok = ok && st.Running && st.Err == "" && !st.CatchingUp
		}
		if ok {
			return
		}
	}
}

// faultEffects feeds the fault schedule each second and puts what each
// fault did in the summary (an Observer).
type faultEffects struct{ s *fault.Schedule }

func (f faultEffects) Second(sec *report.Second, iv *measure.Interval, _ bool) {
	f.s.Observe(sec.T, sec.Committed, sec.Expired, sec.Phase == "drain", iv.Blocks)
}

func (f faultEffects) Result(res *report.Result, _ bool) {
	for _, e := range f.s.Effects(res.Summary.Lost) {
		res.Summary.Faults = append(res.Summary.Faults, report.FaultEffect(e))
	}
}
