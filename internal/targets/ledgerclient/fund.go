package ledgerclient

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/sut"
)

// Funding gives every wallet of a client the same amount, paid from funded
// accounts (the roots: genesis accounts) by a tree of batches: each root
// pays up to Fanout wallets in one batch, each of those pays up to Fanout
// more once its own funding committed, and so on, so a million wallets take
// about a million/Fanout batches in log_Fanout(wallets/roots) rounds. A
// wallet is paid its own amount plus all its subtree's.
type Funding struct {
	Roots, Wallets *Client
	Query          chain.QueryFunc
	Submitters     []sut.Submitter // one goroutine each
	Amount         uint64
	Fanout         int
	// Resume skips a batch whose last wallet holds half of Amount: a
	// funding that was cut short goes on where it stopped.
	Resume   bool
	Progress func(funded, total int) // after each chunk of batches committed
}

// FundStats says what a funding did.
type FundStats struct {
	Batches, Skipped, Rounds, Roots int
}

// maxChunk is the most batches in flight at once: about two blocks' worth
// of 100-output batches, well inside the default mempool.
const maxChunk = 4000

// Fund runs the funding; it returns when every wallet's funding committed.
func (f Funding) Fund(ctx context.Context) (FundStats, error) {
	W, F := f.Wallets.Accounts(), f.Fanout
	var st FundStats
	if W == 0 {
		return st, nil
	}
	if F < 2 || F > chain.MaxOutputs {
		return st, fmt.Errorf("funding fan-out %d, expected 2..%d", F, chain.MaxOutputs)
	}
	if hi, _ := bits.Mul64(uint64(W), f.Amount); hi != 0 {
		return st, fmt.Errorf("workload.fund_amount: %d x %d wallets overflows a balance", f.Amount, W)
	}
	R := min(f.Roots.Accounts(), (W+F-1)/F)
	st.Roots = R
	// sub[w]: wallets in w's subtree, itself included. A node n (roots
	// 0..R-1, then wallet w as node R+w) pays wallets n*F .. n*F+F-1, so
	// children come after their parent and one backward pass adds up.
	sub := make([]uint32, W)
	for w := W - 1; w >= 0; w-- {
		sub[w]++
		if p := w / F; p >= R {
			sub[p-R] += sub[w]
		}
	}
	for a, b := 0, R; a*F < W; a, b = R+a*F, R+min(b*F, W) {
		st.Rounds++
		chunk := min(maxChunk, max(100, (b-a+9)/10)) // progress every tenth of a big round
		for c := a; c < b; c += chunk {
			n, skipped, err := f.round(ctx, c, min(c+chunk, b), R, sub)
			st.Batches += n
			st.Skipped += skipped
			if err != nil {
				return st, err
			}
			if f.Progress != nil { // nodes below c+chunk paid wallets below (c+chunk)*F
				f.Progress(min(min(c+chunk, b)*F, W), W)
			}
		}
	}
	return st, nil
}

// pending is a batch sent and not yet seen committed.
type pending struct {
	payer chain.Address
	seq   uint64
}

// round sends the batches of payers (nodes) [a, b) and waits until all
// committed.
func (f Funding) round(ctx context.Context, a, b, R int, sub []uint32) (sent, skipped int, err error) {
	W, F := len(sub), f.Fanout
	var mu sync.Mutex
	var wait []pending
	var firstErr error
	var next atomic.Int64
	next.Store(int64(a))
	var wg sync.WaitGroup
	for _, s := range f.Submitters {
		wg.Add(1)
		go func(s sut.Submitter) {
			defer wg.Done()
			var tx []byte
			to := make([]chain.Address, 0, F)
			amounts := make([]uint64, 0, F)
			for {
				n := int(next.Add(1) - 1)
				if n >= b || ctx.Err() != nil {
					return
				}
				lo, hi := n*F, min(n*F+F, W)
				if lo >= W {
					continue
				}
				if f.Resume {
					if ai, err := ReadAccount(ctx, f.Query, f.Wallets.Address(hi-1)); err == nil && ai.Balance >= f.Amount/2 {
						mu.Lock()
						skipped++
						mu.Unlock()
						continue
					}
				}
				payer, key := f.node(n, R)
				ai, err := ReadAccount(ctx, f.Query, payer)
				to, amounts = to[:0], amounts[:0]
				var need uint64
				for w := lo; w < hi; w++ {
					to = append(to, f.Wallets.Address(w))
					amounts = append(amounts, uint64(sub[w])*f.Amount)
					need += uint64(sub[w]) * f.Amount
				}
				if err == nil && ai.Balance < need {
					err = fmt.Errorf("workload.fund_amount: %d: the paying account %s holds %d and its share of the funding needs %d", f.Amount, payer, ai.Balance, need)
				}
				if err == nil {
					tx = chain.AppendBatch(tx[:0], f.Roots.chainID, key, to, amounts, ai.NextSequence, 0)
					if r := s.Submit(ctx, sut.Tx{ID: f.Roots.ID(tx), Bytes: tx}); r.Status != sut.Pending && r.Status != sut.Committed {
						err = fmt.Errorf("funding wallets %d..%d: %s: %s", lo, hi-1, r.Reason, r.Detail)
					}
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					next.Store(int64(b)) // stop the others
				}
				if err == nil {
					wait = append(wait, pending{payer, ai.NextSequence})
					sent++
				}
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	if firstErr != nil {
		return sent, skipped, firstErr
	}
	return sent, skipped, f.committed(ctx, wait)
}

// node is the address and key of node n: a root, or a wallet.
func (f Funding) node(n, R int) (chain.Address, []byte) {
	if n < R {
		return f.Roots.addrs[n], f.Roots.keys[n]
	}
	return f.Wallets.addrs[n-R], f.Wallets.keys[n-R]
}

// committed waits until every payer's committed sequence passed its batch's,
// giving up after two minutes without progress.
func (f Funding) committed(ctx context.Context, wait []pending) error {
	last, progress := len(wait), time.Now()
	for len(wait) > 0 {
		var mu sync.Mutex
		var left []pending
		var next atomic.Int64
		var wg sync.WaitGroup
		for range len(f.Submitters) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(wait); i = int(next.Add(1) - 1) {
					ai, err := ReadAccount(ctx, f.Query, wait[i].payer)
					if err != nil || ai.Sequence <= wait[i].seq {
						mu.Lock()
						left = append(left, wait[i])
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		wait = left
		if len(wait) < last {
			last, progress = len(wait), time.Now()
		}
		if len(wait) > 0 {
			if time.Since(progress) > 2*time.Minute || ctx.Err() != nil {
				return fmt.Errorf("funding: %d batches accepted but not committed within 2 minutes (the first from %s at sequence %d)", len(wait), wait[0].payer, wait[0].seq)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
