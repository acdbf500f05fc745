package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/testnet"
)

// checkpointEvery is how often result.json is rewritten while a run goes
// (it is small: the series stream to their own file).
const checkpointEvery = 5

// collectLate is how long after each whole second its snapshot is taken.
const collectLate = 50 * time.Millisecond

// collect takes a snapshot at every whole second of the run.
func (r collector) collect(ctx context.Context) {
	for k := 1; ; k++ {
		// A little after the second ends, so that payments due in it but
		// recorded late by a busy sender still count in it (ones recorded
		// early, due after it, wait for the next: measure.Shard.Offered).
		d := time.Duration(k)*time.Second + collectLate - r.ls.eng.Since()
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		r.tick(false)
		if k%checkpointEvery == 0 {
			r.snapshot(false, nil)
		}
	}
}

// phase labels the second ending at now: warm-up, steady, or drain (after
// the load, including the last partial second of any run).
func (r collector) phase(t float64, now time.Duration, final bool) string {
	loadEnd := time.Duration(r.ls.loadEnd.Load())
	// A second in which offering was stopped early is partial: drain.
	stopped, ok := r.ls.eng.Stopped()
	early := ok && stopped < r.loadDur && t > stopped.Seconds()
	warm := r.sc.Load.Warmup.D().Seconds()
	switch {
	case final, early, loadEnd > 0 && now > loadEnd+500*time.Millisecond, t > r.loadDur.Seconds()+1e-9:
		return "drain"
	case t-1 >= warm-1e-9:
		return "steady"
	}
	return "warmup"
}

// tick collects one second; final marks the last, partial one.
func (r collector) tick(final bool) {
	ls := r.ls
	ls.tickMu.Lock()
	defer ls.tickMu.Unlock()
	now := ls.eng.Since()
	t := math.Round(now.Seconds())
	if final {
		t = math.Round(now.Seconds()*1000) / 1000
	}
	phase := r.phase(t, now, final)
	next := measure.Final
	if !final {
		next = time.Duration(t+1) * time.Second
	}
	iv := r.rec.CollectUntil(phase == "steady", next)
	cpu := measure.CPUTime()
	s := report.Second{T: t, Phase: phase, Counts: iv.Counts.PerSecond(),
		AckMs: measure.Summarize(iv.Ack), CommitMs: measure.Summarize(iv.Commit), LagMs: measure.Summarize(iv.Lag),
		InFlight: ls.trk.Len(), MempoolTxs: int(ls.mempool.Load()), Blocks: len(iv.Blocks),
		GenCPU: math.Round(100*float64(cpu-ls.lastCPU)/float64(time.Second)*10) / 10}
	ls.lastCPU = cpu
	if r.sc.Load.Model == scenario.Open && phase != "drain" {
		s.TargetRate = r.profile.RateAt(time.Duration((t - 0.5) * float64(time.Second)))
	}
	sort.Slice(iv.Blocks, func(i, j int) bool { return iv.Blocks[i].Height < iv.Blocks[j].Height })
	for _, b := range iv.Blocks {
		s.BlockTxs += b.Txs
		if phase != "steady" {
			continue
		}
		if ls.steadyH[0] == 0 {
			ls.steadyH[0], ls.steadyB[0], ls.steadyB0 = b.Height, b.Seen, int64(b.OursOK)
		} else {
			_ = ls.steadyIv.RecordValue(max(1, int64((b.Seen-ls.steadyB[1])*1000)))
		}
		ls.steadyH[1], ls.steadyB[1] = b.Height, b.Seen
		ls.steadyBlocks++
		ls.steadyBytes += int64(b.Bytes)
		ls.steadyGas += b.OursGas
		ls.steadyBytesMax = max(ls.steadyBytesMax, b.Bytes)
		if ls.steadyTxs += int64(b.Txs); ls.steadyBlocks == 1 || b.Txs < ls.steadyTxsMin {
			ls.steadyTxsMin = b.Txs
		}
		ls.steadyTxsMax = max(ls.steadyTxsMax, b.Txs)
	}
	machine := [3]uint64{}
	machine[0], machine[1], machine[2] = machineCPU()
	if ls.machinePrev[1] == 0 {
		ls.machinePrev = ls.machine0
	}
	if phase == "steady" {
		if ls.steadyN == 0 {
			ls.machineSteady[0] = ls.machinePrev
		}
		ls.machineSteady[1] = machine
		ls.steadyN++
		ls.steadyGenCPU += s.GenCPU
	}
	ls.machinePrev = machine
	s.LiveNodes, s.LiveEndpts = r.watch(now, final)
	if r.tel != nil {
		// The counters as of the second's end: a read after it (faults
		// undone as the load ends, the drain) belongs to the next.
		snap := r.tel.Snapshot(r.start.Add(time.Duration(t * float64(time.Second))))
		s.Telemetry = snap.Values
		if phase == "steady" {
			ls.telWin.Add(snap)
		} else {
			ls.telWin.Before(snap)
		}
	}
	for _, o := range r.obs {
		o.Second(&s, iv, final)
	}
	if err := r.w.Err(); err != nil && !final {
		fmt.Fprintf(r.o.Log, "WARNING: %v; stopping the run\n", err)
		ls.stop(endf(DiskFull, "%v", err))
	}
}

// watch follows the health of the system under test once a second: local
// nodes that die or come back, endpoints that stop answering, blocks that
// stop. It ends the run only when nothing can commit any more: no endpoint
// answers, every node is down, or no block came for commit_timeout. It
// returns how many nodes and endpoints are up.
func (r collector) watch(now time.Duration, final bool) (liveNodes, liveEndpoints int) {
	ls := r.ls
	if n := r.sys.Net; n != nil {
		if fresh, err := testnet.Load(n.Home); err == nil && len(fresh.Nodes) == len(n.Nodes) {
			n.Nodes = fresh.Nodes // pids change when nodes are restarted
			r.pidMu.Lock()
			if r.pids == nil {
				r.pids, r.podUIDs = map[string]int{}, map[string]string{}
			}
			for _, nd := range fresh.Nodes {
				r.pids[nd.Name], r.podUIDs[nd.Name] = nd.PID, nd.PodUID
			}
			r.pidMu.Unlock()
		}
		if ls.nodeUp == nil {
			ls.nodeUp = make([]bool, len(n.Nodes))
			for i := range ls.nodeUp {
				ls.nodeUp[i] = true // checked before the load
			}
		}
		for i, nd := range n.Nodes {
			up := nd.Alive()
			if up {
				liveNodes++
			}
			if up == ls.nodeUp[i] {
				continue
			}
			ls.nodeUp[i] = up
			if up {
				r.event(time.Now(), "node_up", nd.Name, fmt.Sprintf("running again (pid %d)", nd.PID))
				continue
			}
			if nd.Pod != "" {
				r.event(time.Now(), "node_down", nd.Name, fmt.Sprintf("its RPC no longer answers (%s)", nd.Log))
			} else {
				why := ""
				if w := nd.LastWords(); w != "" {
					why = "; it ended with: " + w
					ls.lastWords = fmt.Sprintf(" (%s ended with: %s)", nd.Name, w)
				}
				r.event(time.Now(), "node_down", nd.Name, fmt.Sprintf("pid %d exited; its log is %s%s", nd.PID, nd.Log, why))
			}
			if nd.Role == "database" && !final && !r.faulted(nd.Name) {
				// Nothing commits without it; what it took before may still
				// be read if it comes back, so the drain waits (issue 52).
				ls.stop(End{Kind: TargetFailed, tracking: true,
					Detail: fmt.Sprintf("the database (%s) stopped: pid %d exited; its log is %s", nd.Name, nd.PID, nd.Log)})
			}
			if p, ok := r.conn.Target.(sut.Pooled); ok {
				for j, u := range p.Pool().URLs {
					if u == nd.RPC || u == nd.ClientRPC || u == nd.LoadRPC {
						p.Pool().Down(j, fmt.Errorf("%s exited", nd.Name))
					}
				}
			}
		}
		if liveNodes == 0 && !final && !r.allFaulted(n.Nodes) {
			ls.stop(End{Kind: TargetFailed, Detail: "every node of the network is down" + ls.lastWords})
		}
	}
	if p, ok := r.conn.Target.(sut.Pooled); ok {
		for _, e := range p.Pool().EndpointStats() {
			if e.Up {
				liveEndpoints++
			}
		}
		switch {
		case liveEndpoints > 0:
			ls.downSince = 0
		case ls.downSince == 0:
			ls.downSince = now
		case now-ls.downSince >= 5*time.Second && !final && !(r.sys.Net != nil && r.allFaulted(r.sys.Net.Nodes)):
			ls.stop(endf(TargetFailed, "no endpoint answers: all %d endpoint(s) down for %.0f s", len(p.Pool().URLs), (now - ls.downSince).Seconds()))
		}
	}
	if ls.hasBlock && !final {
		ls.mu.Lock()
		last := ls.lastSeen
		ls.mu.Unlock()
		if timeout := r.sc.CommitTimeout.D(); now-last >= timeout {
			ls.stop(endf(ChainHalted, "no block for %.0f s from t=%.1f s", (now - last).Seconds(), last.Seconds()))
		}
	}
	return liveNodes, liveEndpoints
}
