package testnet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/tpslab/tpslab/internal/chain"
)

func client(rpc string) (*rpchttp.HTTP, error) { return rpchttp.New(rpc, "/websocket") }

// NodeStatus is one row of `net status`.
type NodeStatus struct {
	Name         string `json:"name"`
	Role         string `json:"role"`  // validator | rpc | ...
	State        string `json:"state"` // running | catching_up | paused | stopped (by net stop) | crashed
	Running      bool   `json:"running"`
	Height       int64  `json:"height"`
	Peers        int    `json:"peers"`
	MempoolTxs   int    `json:"mempool_txs"`
	MempoolBytes int64  `json:"mempool_bytes"`
	CatchingUp   bool   `json:"catching_up"`
	Err          string `json:"error,omitempty"`
}

// BaseStatus is what the process table says of a node: its name, role and
// state (running, paused, stopped by `net stop`, or crashed).
func (nd Node) BaseStatus() NodeStatus {
	s := NodeStatus{Name: nd.Name, Role: nd.Role, Running: nd.Alive(), State: "running"}
	if s.Role == "" {
		s.Role = "validator"
	}
	switch {
	case !s.Running && nd.Stopped:
		s.State = "stopped"
	case !s.Running:
		s.State = "crashed"
	case paused(nd.PID):
		s.State = "paused"
	}
	return s
}

// Status asks every node for its height, peers and mempool.
func (n *Net) Status(ctx context.Context) []NodeStatus {
	out := make([]NodeStatus, len(n.Nodes))
	for i, nd := range n.Nodes {
		s := nd.BaseStatus()
		out[i] = s
		if s.State != "running" {
			continue
		}
		c, err := client(nd.RPC)
		if err != nil {
			out[i].Err = err.Error()
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := c.Status(cctx)
		if err == nil {
			out[i].Height, out[i].CatchingUp = st.SyncInfo.LatestBlockHeight, st.SyncInfo.CatchingUp
			if ni, err2 := c.NetInfo(cctx); err2 == nil {
				out[i].Peers = ni.NPeers
			}
			if mp, err2 := c.NumUnconfirmedTxs(cctx); err2 == nil {
				out[i].MempoolTxs, out[i].MempoolBytes = mp.Total, mp.TotalBytes
			}
		} else {
			out[i].Err = err.Error()
		}
		cancel()
	}
	// A node well behind the others is catching up even if it does not
	// know it yet (it has not heard of the newer blocks).
	var top int64
	for _, s := range out {
		top = max(top, s.Height)
	}
	for i, s := range out {
		if s.State == "running" && (s.CatchingUp || s.Height < top-2) {
			out[i].State = "catching_up"
		}
	}
	return out
}

// Height returns the latest height a node reports.
func Height(ctx context.Context, rpc string) (int64, error) {
	c, err := client(rpc)
	if err != nil {
		return 0, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return 0, err
	}
	return st.SyncInfo.LatestBlockHeight, nil
}

// WaitForBlocks waits until every running node has committed height h.
func (n *Net) WaitForBlocks(ctx context.Context, h int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		done := true
		for _, nd := range n.Nodes {
			if !nd.Alive() {
				return nd.Exited(15)
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			got, err := Height(cctx, nd.RPC)
			cancel()
			if err != nil || got < h {
				done = false
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("network did not reach height %d within %s; see the node logs under %s", h, timeout, n.Home)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// QueryAudit asks a node's ledger to recount its committed state.
func QueryAudit(ctx context.Context, rpc string) (chain.Audit, error) {
	var a chain.Audit
	c, err := client(rpc)
	if err != nil {
		return a, err
	}
	res, err := c.ABCIQuery(ctx, "/audit", nil)
	if err != nil {
		return a, err
	}
	if res.Response.Code != 0 {
		return a, fmt.Errorf("audit query: %s", res.Response.Log)
	}
	err = json.Unmarshal(res.Response.Value, &a)
	return a, err
}

// CheckReport is the outcome of `net check`.
type CheckReport struct {
	Audits   map[string]chain.Audit `json:"audits"`
	Problems []string               `json:"problems"`
}

// Check audits every running node's state: supply conserved, no balance
// beyond the supply, the running digest equal to a recount, each node's app
// hash equal to the one the chain agreed on in the next block header, and
// equal app hashes at equal heights.
func (n *Net) Check(ctx context.Context) CheckReport {
	r := CheckReport{Audits: map[string]chain.Audit{}}
	byHeight := map[int64]string{}
	byHeightNode := map[int64]string{}
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: not running", nd.Name))
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		a, err := QueryAudit(cctx, nd.RPC)
		if err != nil {
			cancel()
			r.Problems = append(r.Problems, fmt.Sprintf("%s: audit query: %v", nd.Name, err))
			continue
		}
		r.Audits[nd.Name] = a
		for _, p := range a.Problems {
			r.Problems = append(r.Problems, fmt.Sprintf("%s at height %d: %s", nd.Name, a.Height, p))
		}
		if h, ok := byHeight[a.Height]; ok && h != a.AppHash {
			r.Problems = append(r.Problems, fmt.Sprintf("app hash differs at height %d: %s has %s, %s has %s", a.Height, byHeightNode[a.Height], h, nd.Name, a.AppHash))
		}
		byHeight[a.Height], byHeightNode[a.Height] = a.AppHash, nd.Name
		if agreed, err := headerAppHash(cctx, nd.RPC, a.Height+1); err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: read header %d: %v", nd.Name, a.Height+1, err))
		} else if agreed != a.AppHash {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: app hash at height %d is %s but block %d records %s", nd.Name, a.Height, a.AppHash, a.Height+1, agreed))
		}
		cancel()
	}
	n.checkFork(ctx, &r)
	return r
}

// checkFork compares the block every audited node holds at the lowest of
// their heights: one chain, one hash.
func (n *Net) checkFork(ctx context.Context, r *CheckReport) {
	var h int64
	for _, a := range r.Audits {
		if h == 0 || a.Height < h {
			h = a.Height
		}
	}
	if h == 0 {
		return
	}
	seen, by := "", ""
	for _, nd := range n.Nodes {
		if _, ok := r.Audits[nd.Name]; !ok {
			continue
		}
		c, err := client(nd.RPC)
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := c.Block(cctx, &h)
		cancel()
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: read block %d: %v", nd.Name, h, err))
			continue
		}
		hash := b.BlockID.Hash.String()
		if seen == "" {
			seen, by = hash, nd.Name
		} else if hash != seen {
			r.Problems = append(r.Problems, fmt.Sprintf("fork: block %d is %s on %s but %s on %s", h, seen, by, hash, nd.Name))
		}
	}
}

// headerAppHash waits for block h and returns the app hash its header carries,
// which is the state after block h-1 that the validators signed.
func headerAppHash(ctx context.Context, rpc string, h int64) (string, error) {
	c, err := client(rpc)
	if err != nil {
		return "", err
	}
	for {
		b, err := c.Block(ctx, &h)
		if err == nil {
			return b.Block.AppHash.String(), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("block %d did not appear: %w", h, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
