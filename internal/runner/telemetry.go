package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tpslab/tpslab/internal/health"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/profiling"

	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
)

// startTelemetry builds the run's sampler: every local node's process (and
// children) from /proc, and what the kind reads.
func (r *run) startTelemetry(ctx context.Context, k kinds.Kind) {
	var srcs []telemetry.Source
	if n := r.sys.Net; n != nil {
		for _, nd := range n.Nodes {
			role := nd.Role
			if role == "" {
				role = "validator"
			}
			name := nd.Name
			if nd.Pod == "" {
				proc := telemetry.NewProcess(nd.Name, role, nd.PID, true)
				proc.PIDOf = func() int { return collector{r}.pidOf(name, proc.PID) }
				srcs = append(srcs, proc)
			} else if pp, uid := new(telemetry.PodPID), nd.PodUID; pp.Get(uid) > 0 {
				// A local cluster's pod runs here: its process, and the
				// CPU limit --node-cpu gave its cgroup, are read like a
				// local node's. A remote cluster's metrics say the rest.
				proc := telemetry.NewProcess(nd.Name, role, pp.Get(uid), true)
				proc.PIDOf = func() int { return pp.Get(collector{r}.podUIDOf(name, uid)) }
				srcs = append(srcs, proc)
			}
			if k.Info().CometBFTMetrics && nd.Metrics != "" {
				srcs = append(srcs, telemetry.NewPrometheus([]string{nd.Metrics}, telemetry.CometBFT(nd.Name, false)))
			}
		}
		if os.Getenv("TPSLAB_BENCH_NO_HEALTH") != "1" { // the switch: bench/health-cost.sh only
			var hn []health.Node
			for _, nd := range n.Nodes {
				if nd.Pod != "" {
					continue // a pod's log and pid are not on this machine
				}
				name, pid, rpc := nd.Name, nd.PID, ""
				if k.Info().CometBFTMetrics {
					rpc = nd.RPC // else a process only: its restarts, exits and log
				}
				hn = append(hn, health.Node{Name: name, RPC: rpc, Log: nd.Log, Validator: rpc != "" && nd.Role == "",
					PID: func() int { return collector{r}.pidOf(name, pid) }, Height: height(k, nd)})
			}
			if len(hn) > 0 {
				r.health = health.New(hn)
				srcs = append(srcs, r.health)
			}
		}
		if n.Links != nil {
			// The proxies cost CPU on this machine too; and their byte
			// counters are the traffic through each link.
			srcs = append(srcs, telemetry.NewProcess("links", "links", n.Links.PID, false))
			var m []telemetry.PromMetric
			for _, l := range n.Links.Links {
				m = append(m, telemetry.PromMetric{Family: netem.LinkBytesFamily, Match: map[string]string{"link": l.Name},
					Metric: telemetry.Metric{Name: linkMetric(l.Name), Unit: "bytes/s", Rate: true, Role: "link",
						Help: "bytes through the link " + l.Name + ", both directions"}})
			}
			srcs = append(srcs, telemetry.NewPrometheus([]string{n.Links.Metrics}, m))
		}
	}
	for i, u := range r.sc.Target.NodeMetrics {
		srcs = append(srcs, telemetry.NewPrometheus([]string{u}, telemetry.CometBFT(fmt.Sprintf("remote%d", i), true)))
	}
	if t, ok := k.(kinds.Telemetered); ok {
		s, err := t.Telemetry(ctx, r.sys)
		if err != nil {
			r.note("telemetry: %v", err)
		}
		srcs = append(srcs, s...)
	}
	if len(srcs) > 0 {
		r.tel = telemetry.NewSampler(srcs)
	}
}

// height reads a node's height for the health watch when its kind says
// heights other than through CometBFT's RPC (nil otherwise).
func height(k kinds.Kind, nd testnet.Node) func(context.Context) (int64, error) {
	hk, ok := k.(kinds.Heighted)
	if !ok || k.Info().CometBFTMetrics || nd.RPC == "" || nd.Role == "database" || nd.Role == "service" {
		return nil
	}
	return func(ctx context.Context) (int64, error) { return hk.Height(ctx, nd) }
}

// pidOf is a local node's pid as the last watch read it from net.json
// (restarts change it), or old when it has not been read.
func (r collector) pidOf(name string, old int) int {
	r.pidMu.Lock()
	defer r.pidMu.Unlock()
	if pid, ok := r.pids[name]; ok {
		return pid
	}
	return old
}

// podUIDOf is a pod's UID as the last watch read it from net.json, or
// old when it has not been read.
func (r collector) podUIDOf(name, old string) string {
	r.pidMu.Lock()
	defer r.pidMu.Unlock()
	if uid, ok := r.podUIDs[name]; ok && uid != "" {
		return uid
	}
	return old
}

// runTelemetry samples until ctx ends; a source's error is noted once.
func (r loop) runTelemetry(ctx context.Context) {
	if r.tel == nil {
		return
	}
	r.tel.Run(ctx, func(_ int, err error) { r.note("telemetry: %v", fmt.Sprint(err)) })
}

// takeProfiles profiles the local nodes and tpslab itself over the steady
// window: from the warm-up's end until offering ends (docs/results.md,
// profiles/).
func (r loop) takeProfiles(ctx context.Context, loadDone <-chan struct{}) {
	var nodes []profiling.Node
	if n := r.sys.Net; n != nil {
		for _, nd := range n.Nodes {
			if nd.Pprof != "" {
				nodes = append(nodes, profiling.Node{Name: nd.Name, Addr: nd.Pprof})
			}
		}
	}
	if len(nodes) == 0 {
		r.note("profile: no local node serves /debug/pprof (profiles are taken from the nodes tpslab net starts); profiling tpslab only")
	}
	nodes = append(nodes, profiling.Self)
	select {
	case <-time.After(r.sc.Load.Warmup.D() - r.ls.eng.Since()):
	case <-loadDone:
		return
	case <-ctx.Done():
		return
	}
	c := profiling.Start(ctx, nodes, r.sc.Profile, r.o.Out, r.start.Add(r.loadDur))
	r.prof.Store(c)
	select {
	case <-loadDone:
	case <-ctx.Done():
	}
	// An early end cuts the CPU profiles under way; a completed load waits
	// for the last one, which ends with the window.
	end := time.Until(r.start.Add(r.loadDur)) + 15*time.Second
	if time.Duration(r.ls.loadEnd.Load()) < r.loadDur-time.Second {
		end = 5 * time.Second
	}
	fctx, fcancel := context.WithTimeout(context.Background(), end)
	defer fcancel()
	sum := c.Finish(fctx)
	for _, e := range sum.Errors {
		r.note("profile: %s", e)
	}
}
