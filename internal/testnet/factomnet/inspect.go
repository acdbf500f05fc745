package factomnet

import (
	"context"
	"fmt"
	"strings"
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
		// factomd answers a balance with the entries it holds but has not
		// yet put in a block, which the leader holds before the followers:
		// right after a load the nodes may differ by what is pending. A
		// difference must outlast the next directory blocks to be one.
		var differ []string
		for try := 0; try < 3; try++ {
			if differ = ecDifferences(ctx, cls, f, checked); len(differ) == 0 {
				break
			}
			if !nextBlock(ctx, cls[0], f.BlockTime) {
				break
			}
		}
		switch held := pendingOn(ctx, cls); {
		case len(differ) == 0:
			lines = append(lines, fmt.Sprintf("entry-credit balances of %d test wallets agree on every node", checked))
		case held != "":
			// Balances count what a node holds outside any block; the
			// directory blocks above, which commit to every balance
			// change, agree.
			lines = append(lines, fmt.Sprintf("entry-credit balances not compared: %s (factomd's balances count them; %d wallets differ by them)", held, len(differ)))
		default:
			problems = append(problems, differ...)
		}
	}
	return lines, problems
}

// ecDifferences compares the first n test wallets' entry-credit balances
// across the nodes.
func ecDifferences(ctx context.Context, cls []*factom.Client, f *Factom, n int) (problems []string) {
	for i := 0; i < n; i++ {
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
	return problems
}

// nextBlock waits for the node's next directory block (two block times at
// most); false when none came.
func nextBlock(ctx context.Context, cl *factom.Client, blockTime int) bool {
	h0, err := cl.Heights(ctx)
	if err != nil {
		return false
	}
	deadline := time.Now().Add(time.Duration(2*max(blockTime, 1)+5) * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if h, err := cl.Heights(ctx); err == nil && h.DirectoryBlock > h0.DirectoryBlock {
			return true
		}
	}
	return false
}

// pendingOn names the nodes that hold entries not yet in a block ("" when
// none does).
func pendingOn(ctx context.Context, cls []*factom.Client) string {
	var held []string
	for _, cl := range cls {
		var pending []any
		if cl.Call(ctx, "pending-entries", map[string]any{}, &pending) == nil && len(pending) > 0 {
			held = append(held, fmt.Sprintf("%s holds %d entries not yet in a block", cl.URL, len(pending)))
		}
	}
	return strings.Join(held, ", ")
}
