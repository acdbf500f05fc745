// Package health watches every node of a CometBFT network through a run:
// each second its height and how far behind the highest it is, whether
// its signature is in each committed block, restarts (a changed pid), the
// error lines of its log and its peers; after the load, how long until
// every node is within a block of the highest. A chain of another kind
// that says its nodes' heights (Node.Height: factomd) gets the heights and
// the catch-up without signatures; other nodes, their processes. It is a
// telemetry source (the per-second series, Prometheus, the dashboard) and
// writes the result's health section (docs/health.md).
package health

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// Node is one node the monitor watches.
type Node struct {
	Name      string
	RPC       string // its CometBFT RPC; "": a process only (a database, a service)
	Log       string // its log file; "" when not on this machine
	Validator bool   // its signature is expected in every commit
	// Height reads the height of a chain other than CometBFT (factomd's
	// directory blocks), for how far behind it is and the catch-up; nil
	// for a CometBFT node (RPC) or a process only.
	Height func(context.Context) (int64, error)
	PID    func() int // its pid now (a restart changes it); nil: not local
}

// Monitor is the health of one network through a run.
type Monitor struct {
	nodes []Node
	cl    []*cometbft.Client
	mu    sync.Mutex
	st    []nodeState
	logs  []*logTail
	// The chain: the highest height seen, when it last grew, and the
	// longest stretch without growth.
	highest    int64
	grewAt     time.Time
	noProgress time.Duration
	checked    int64          // the highest height whose commit was read
	addrOf     map[string]int // validator address -> node
	loadEnd    time.Time
	caughtUp   float64 // seconds after the load's end; -1 unknown
	start      time.Time
}

type nodeState struct {
	height, behindMax    int64
	behindAt             float64 // seconds into the run of behindMax
	missed, signable     int64
	missedRun, runMax    int64 // blocks in a row without its signature: now, and the most
	pid, restarts, exits int
	gone                 bool // its process was found gone
	peers, peersMin      int
	reachable, everReach bool
}

// perSample bounds the commits read in one second (a node catching up on
// a long chain must not make one sample take long).
const perSample = 20

// New watches nodes; their logs are read from their current ends.
func New(nodes []Node) *Monitor {
	m := &Monitor{nodes: nodes, st: make([]nodeState, len(nodes)), addrOf: map[string]int{}, caughtUp: -1,
		start: time.Now(), grewAt: time.Now()}
	hc := &http.Client{Timeout: 800 * time.Millisecond}
	for i, n := range nodes {
		m.cl = append(m.cl, &cometbft.Client{URL: n.RPC, HTTP: hc})
		m.logs = append(m.logs, newLogTail(n.Log))
		m.st[i].peersMin = -1
		if n.PID != nil {
			m.st[i].pid = n.PID()
		}
	}
	return m
}

// Metrics are each node's behind_blocks, missed_signatures and peers (a
// CometBFT node), restarts, exits and log_errors, and the chain's
// no_progress_s.
func (m *Monitor) Metrics() []telemetry.Metric {
	var out []telemetry.Metric
	for _, n := range m.nodes {
		p := n.Name + "."
		if n.chain() {
			out = append(out, telemetry.Metric{Name: p + "behind_blocks", Unit: "blocks", Better: "lower", Help: "blocks behind the highest node"})
		}
		if n.RPC != "" {
			out = append(out,
				telemetry.Metric{Name: p + "missed_signatures", Unit: "1/s", Rate: true, Better: "lower", Help: "committed blocks without its signature (validators)"},
				telemetry.Metric{Name: p + "peers", Unit: "1", Help: "peers connected"})
		}
		out = append(out,
			telemetry.Metric{Name: p + "restarts", Unit: "1", Better: "lower", Help: "restarts since the run began (its pid changed)"},
			telemetry.Metric{Name: p + "exits", Unit: "1", Better: "lower", Help: "times its process was found gone since the run began"},
			telemetry.Metric{Name: p + "log_errors", Unit: "1", Better: "lower", Help: "error, fatal, panic and CONSENSUS FAILURE lines in its log since the run began"})
	}
	if m.chain() {
		out = append(out, telemetry.Metric{Name: "chain.no_progress_s", Unit: "s", Better: "lower", Help: "seconds since the highest node's height last grew"})
	}
	return out
}

// chain says the node has a height: a CometBFT node, or one whose kind
// reads it (Height).
func (n Node) chain() bool { return n.RPC != "" || n.Height != nil }

// chain says some node has a height: heights, catch-up.
func (m *Monitor) chain() bool {
	for _, n := range m.nodes {
		if n.chain() {
			return true
		}
	}
	return false
}

// signed says some node is a CometBFT node: its commits carry signatures.
func (m *Monitor) signed() bool {
	for _, n := range m.nodes {
		if n.RPC != "" {
			return true
		}
	}
	return false
}

// Sample reads every node once.
func (m *Monitor) Sample(ctx context.Context, dst []float64) error {
	type read struct {
		st    cometbft.Status
		peers int
		err   error
	}
	reads := make([]read, len(m.nodes))
	var wg sync.WaitGroup
	for i, n := range m.nodes {
		if !n.chain() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &reads[i]
			if n.RPC == "" {
				var h int64
				h, r.err = n.Height(ctx)
				r.st.SyncInfo.LatestBlockHeight = cometbft.Int64(h)
				return
			}
			if r.st, r.err = m.cl[i].Status(ctx); r.err == nil {
				r.peers, _ = m.cl[i].Peers(ctx)
			}
		}()
	}
	wg.Wait()
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	top := -1
	for i, r := range reads {
		s := &m.st[i]
		if !m.nodes[i].chain() {
			m.process(i)
			continue
		}
		if s.reachable = r.err == nil; s.reachable {
			s.everReach = true
			s.height, s.peers = int64(r.st.SyncInfo.LatestBlockHeight), r.peers
			if s.peersMin < 0 || r.peers < s.peersMin {
				s.peersMin = r.peers
			}
			if m.nodes[i].Validator && r.st.ValidatorInfo.Address != "" {
				m.addrOf[r.st.ValidatorInfo.Address] = i
			}
			if top < 0 || s.height > m.st[top].height {
				top = i
			}
		}
		m.process(i)
	}
	if top >= 0 && m.st[top].height > m.highest {
		m.highest, m.grewAt = m.st[top].height, now
	}
	if m.chain() {
		m.noProgress = max(m.noProgress, now.Sub(m.grewAt))
	}
	t := now.Sub(m.start).Seconds()
	for i := range m.nodes {
		s := &m.st[i]
		if b := m.highest - s.height; s.everReach && b > s.behindMax {
			s.behindMax, s.behindAt = b, t
		}
	}
	if top >= 0 && m.nodes[top].RPC != "" {
		m.readCommits(ctx, m.cl[top])
	}
	if !m.loadEnd.IsZero() && m.caughtUp < 0 && m.chain() && m.allWithin(1) {
		m.caughtUp = max(0, now.Sub(m.loadEnd).Seconds())
	}
	k := 0
	for i, n := range m.nodes {
		s := &m.st[i]
		if n.chain() {
			dst[k] = float64(m.highest - s.height)
			k++
		}
		if n.RPC != "" {
			dst[k], dst[k+1] = float64(s.missed), float64(s.peers)
			if !s.reachable {
				dst[k+1] = 0
			}
			k += 2
		}
		dst[k], dst[k+1], dst[k+2] = float64(s.restarts), float64(s.exits), float64(m.logs[i].read())
		k += 3
	}
	if m.chain() {
		dst[k] = now.Sub(m.grewAt).Seconds()
	}
	return nil
}

// process notes node i's restart (its pid changed) or exit (its process
// gone).
func (m *Monitor) process(i int) {
	s := &m.st[i]
	if m.nodes[i].PID == nil {
		return
	}
	pid := m.nodes[i].PID()
	switch {
	case pid != 0 && s.pid != 0 && pid != s.pid:
		s.restarts++
		s.pid, s.gone = pid, false
	case s.pid == 0:
		s.pid = pid
	}
	if s.pid == 0 {
		return // not known yet
	}
	if alive := s.pid != 0 && syscall.Kill(s.pid, 0) != syscall.ESRCH; !alive && !s.gone {
		s.exits++
		s.gone = true
	} else if alive {
		s.gone = false
	}
}

// readCommits reads the commits of the blocks since the last read (the
// highest's own is not final yet) and counts each validator's absences.
func (m *Monitor) readCommits(ctx context.Context, cl *cometbft.Client) {
	if m.checked == 0 {
		m.checked = m.highest - 1 // blocks before the run are not its
	}
	for h, n := m.checked+1, 0; h < m.highest && n < perSample && len(m.addrOf) > 0; h, n = h+1, n+1 {
		sigs, err := cl.Signatures(ctx, h)
		if err != nil {
			return
		}
		signed := map[int]bool{}
		for _, s := range sigs {
			if i, ok := m.addrOf[s.Address]; ok && s.Flag != cometbft.FlagAbsent {
				signed[i] = true
			}
		}
		for _, i := range m.addrOf {
			s := &m.st[i]
			s.signable++
			if signed[i] {
				s.missedRun = 0
				continue
			}
			s.missed++
			s.missedRun++
			s.runMax = max(s.runMax, s.missedRun)
		}
		m.checked = h
	}
}

// allWithin says every node that answered is within d blocks of the
// highest; a node whose process is gone is not waited for (its exit is
// counted apart), a paused one is.
func (m *Monitor) allWithin(d int64) bool {
	for i := range m.st {
		if m.nodes[i].chain() && m.st[i].everReach && !m.st[i].gone && (!m.st[i].reachable || m.highest-m.st[i].height > d) {
			return false
		}
	}
	return true
}

// LoadEnded marks the end of the load: catch-up counts from it.
func (m *Monitor) LoadEnded(at time.Time) {
	m.mu.Lock()
	m.loadEnd = at
	m.mu.Unlock()
}

// WaitCaughtUp samples until every node is within a block of the highest,
// or timeout.
func (m *Monitor) WaitCaughtUp(ctx context.Context, timeout time.Duration) {
	if !m.chain() {
		return // processes only: nothing to catch up on
	}
	dst := make([]float64, len(m.Metrics()))
	deadline := time.Now().Add(timeout)
	for {
		m.mu.Lock()
		done := m.caughtUp >= 0
		m.mu.Unlock()
		if done || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		m.Sample(ctx, dst)
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Close ends nothing: the monitor holds no connection.
func (m *Monitor) Close() {}

// Report is the run's health as result.json's summary keeps it.
func (m *Monitor) Report() *report.Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := &report.Health{CaughtUpS: m.caughtUp, NoProgressS: m.noProgress.Seconds(), Chain: m.chain(), Unsigned: m.chain() && !m.signed()}
	if !h.Chain {
		h.CaughtUpS = 0 // no blocks to fall behind on
	}
	for i, n := range m.nodes {
		s := &m.st[i]
		nh := report.NodeHealth{Name: n.Name, BehindMax: s.behindMax, BehindMaxAt: s.behindAt, Restarts: s.restarts, Exits: s.exits,
			LogErrors: m.logs[i].count, LogBenign: m.logs[i].benign, LogQuotes: m.logs[i].quotes, PeersMin: s.peersMin}
		if n.Validator {
			nh.Missed, nh.Signable, nh.MissedInARow = s.missed, s.signable, s.runMax
		}
		h.Nodes = append(h.Nodes, nh)
	}
	h.Summarize()
	return h
}

func (m *Monitor) String() string { return fmt.Sprintf("health of %d nodes", len(m.nodes)) }
