package runner

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tpslab/tpslab/internal/fault"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Checker is a kind that can audit a local network's state (`net check`):
// it is run after every run with faults.
type Checker interface {
	Check(ctx context.Context, n *testnet.Net) (lines, problems []string)
}

// probeLinks measures each emulated link's round trip before the load.
func (r *run) probeLinks() {
	n := r.sys.Net
	if n == nil || n.Links == nil {
		return
	}
	for _, l := range n.Links.Links {
		ls := report.LinkStat{Name: l.Name, Conditions: l.Conditions.String(), RTTMs: float64(l.RTT) / float64(time.Millisecond)}
		probe := netem.ProbeRTT
		if l.IsClient() {
			probe = netem.ProbeHTTP
		}
		if d, err := probe(l.Listen, 5); err != nil {
			ls.ProbeError = err.Error()
		} else {
			ls.MeasuredRTTMs = math.Round(float64(d)/float64(time.Microsecond)) / 1000
		}
		r.links = append(r.links, ls)
	}
	fmt.Fprintf(r.o.Log, "links: topology %s, %d links; measured round trips:", n.Links.Topology, len(r.links))
	for _, l := range r.links {
		fmt.Fprintf(r.o.Log, " %s %.1f ms", l.Name, l.MeasuredRTTMs)
	}
	fmt.Fprintln(r.o.Log)
}

// linkStats are the links with the traffic telemetry saw through them.
func (r *run) linkStats(s *report.Summary) []report.LinkStat {
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
func (r *run) beginFaults() {
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
func (r *run) checkAfterFaults(k Kind) {
	if r.sched == nil || r.sys.Net == nil {
		return
	}
	c, ok := k.(Checker)
	if !ok {
		return
	}
	n := r.sys.Net
	if fresh, err := testnet.Load(n.Home); err == nil {
		n = fresh
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		up := 0
		for _, nd := range n.Nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if _, err := testnet.Height(ctx, nd.RPC); err == nil {
				up++
			}
			cancel()
		}
		if up == len(n.Nodes) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lines, problems := c.Check(ctx, n)
	r.netCheck = &report.NetCheck{OK: len(problems) == 0, Lines: lines, Problems: problems}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(r.o.Log, "net check: FAIL:", p)
		}
	} else {
		fmt.Fprintln(r.o.Log, "net check after the faults: ok")
	}
}
