package factomnet

import (
	"context"
	"fmt"
	"time"

	"github.com/tpslab/tpslab/internal/targets/factom"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Status is `net status`: each node's directory block height and its
// pending entries.
func Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	out := make([]testnet.NodeStatus, len(n.Nodes))
	for i, nd := range n.Nodes {
		s := nd.BaseStatus()
		if i > 0 {
			s.Role = "follower"
		} else {
			s.Role = "leader"
		}
		if s.Running {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			cl := factom.NewClient(nd.RPC)
			h, err := cl.Heights(cctx)
			if err != nil {
				s.Err = err.Error()
			}
			s.Height = h.DirectoryBlock
			var pending []any
			if cl.Call(cctx, "pending-entries", map[string]any{}, &pending) == nil {
				s.MempoolTxs = len(pending)
			}
			cancel()
		}
		out[i] = s
	}
	return out
}

// Check is `net check`: every node holds the same directory block at each
// height all of them have (its key Merkle root commits to every entry,
// transaction and balance change), the same entry count, and the same
// entry-credit balance of each test wallet.
func Check(ctx context.Context, n *testnet.Net) (lines, problems []string) {
	f := Of(n)
	var cls []*factom.Client
	top := int64(-1)
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			problems = append(problems, nd.Name+": not running")
			continue
		}
		cl := factom.NewClient(nd.RPC)
		h, err := cl.Heights(ctx)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", nd.Name, err))
			continue
		}
		cls = append(cls, cl)
		if top < 0 || h.DirectoryBlock < top {
			top = h.DirectoryBlock
		}
	}
	if len(cls) == 0 {
		return lines, problems
	}
	entries := make([]int, len(cls))
	for h := int64(0); h <= top; h++ {
		var first string
		for k, cl := range cls {
			d, err := cl.DBlockByHeight(ctx, h)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: directory block %d: %v", cl.URL, h, err))
				continue
			}
			for _, e := range d.Entries {
				if factom.IsEntryChain(e.ChainID) {
					eb, err := cl.EntryBlock(ctx, e.KeyMR)
					if err != nil {
						problems = append(problems, fmt.Sprintf("%s: entry block %s: %v", cl.URL, e.KeyMR, err))
					}
					entries[k] += len(eb.Entries)
				}
			}
			if k == 0 {
				first = d.KeyMR
			} else if d.KeyMR != first {
				problems = append(problems, fmt.Sprintf("directory block %d: %s holds %s, %s holds %s", h, cls[0].URL, first, cl.URL, d.KeyMR))
			}
		}
	}
	for k := 1; k < len(cls); k++ {
		if entries[k] != entries[0] {
			problems = append(problems, fmt.Sprintf("%s holds %d entries in blocks 0..%d, %s holds %d", cls[0].URL, entries[0], top, cls[k].URL, entries[k]))
		}
	}
	lines = append(lines, fmt.Sprintf("%d nodes hold the same directory blocks 0..%d and the same %d entries in their entry blocks", len(cls), top, entries[0]))
	if f != nil && f.Wallets > 0 {
		checked := min(f.Wallets, 20)
		for i := 0; i < checked; i++ {
			addr := factom.ECWallet(f.WalletSeed, i).String()
			var first int64
			for k, cl := range cls {
				b, err := cl.ECBalance(ctx, addr)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: wallet %d: %v", cl.URL, i, err))
					continue
				}
				if k == 0 {
					first = b
				} else if b != first {
					problems = append(problems, fmt.Sprintf("wallet %d (%s): %s says %d entry credits, %s says %d", i, addr, cls[0].URL, first, cl.URL, b))
				}
			}
		}
		lines = append(lines, fmt.Sprintf("entry-credit balances of %d test wallets agree on every node", checked))
	}
	return lines, problems
}
