package cosmos

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
)

// SetupKind is the name AddKind gives a scenario's set-up messages.
const SetupKind = "setup"

// Setup sends, from each of senders, one transaction of the set-up
// messages (a kind AddKind made under SetupKind), before the load and not
// measured, and waits until every one is in a block with code 0: what a
// load of MsgExec needs (its grants), say. Its gas is the first sender's
// simulation x2.
func (c *Codec) Setup(ctx context.Context, sub sut.Submitter, cl *cometbft.Client, senders []int) error {
	ms, ok := c.custom[SetupKind]
	if !ok || len(senders) == 0 {
		return nil
	}
	used, err := c.SimulateGasOfKind(ctx, senders[0], SetupKind)
	if err != nil {
		return fmt.Errorf("cosmos.setup: its simulation: %v", err)
	}
	// Twice the simulation: a sender that never paid also stores its key
	// (gaiad: 104,958 used where the first sender simulated 80,000), and
	// the set-up is not measured, so room costs only fees.
	gas := uint64(math.Ceil(float64(used)*2)+999) / 1000 * 1000
	fee := c.fee()
	if c.Gas > 0 {
		fee = scaleFee(fee, gas, c.Gas)
	}
	h0, err := cl.Height(ctx)
	if err != nil {
		return err
	}
	want := map[sut.TxID]int{}
	for _, from := range senders {
		seq, err := c.Nonce(ctx, from)
		if err != nil {
			return err
		}
		tx := c.customTx(nil, SetupKind, ms, from, []int{c.next(from)}, 1, seq, gas, fee)
		if r := sub.Submit(ctx, sut.Tx{ID: c.ID(tx), Bytes: tx}); r.Status != sut.Pending && r.Status != sut.Committed {
			return fmt.Errorf("cosmos.setup: sender %d's set-up was refused: %s: %s", from, r.Reason, clip(r.Detail, 200))
		}
		want[sha256.Sum256(tx)] = from
	}
	// Each is found in a block, its result read: code 0, or the chain's
	// reason. Two minutes without one found ends it.
	next, moved := h0+1, time.Now()
	for len(want) > 0 {
		h, err := cl.Height(ctx)
		if err != nil {
			return err
		}
		for ; next <= h; next++ {
			b, err := cl.Block(ctx, next)
			if err != nil {
				return err
			}
			var res []cometbft.ExecResult
			for k, t := range b.Data.Txs {
				from, ours := want[sha256.Sum256(t)]
				if !ours {
					continue
				}
				if res == nil {
					if res, err = blockResults(ctx, cl, next); err != nil || k >= len(res) {
						return fmt.Errorf("block %d's results: %v", next, err)
					}
				}
				if r := res[k]; r.Code != 0 {
					return fmt.Errorf("cosmos.setup: sender %d's set-up failed in block %d: %s: %s", from, next, Reason(r.Codespace, r.Code, r.Log), clip(r.Log, 200))
				}
				delete(want, sha256.Sum256(t))
				moved = time.Now()
			}
		}
		if len(want) == 0 {
			break
		}
		if time.Since(moved) > 2*time.Minute || ctx.Err() != nil {
			return fmt.Errorf("cosmos.setup: %d of %d set-up transactions not in a block after 2 minutes", len(want), len(senders))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// blockResults reads a block's results, asking again while the node has
// served the block but not yet stored them.
func blockResults(ctx context.Context, cl *cometbft.Client, h int64) ([]cometbft.ExecResult, error) {
	res, err := cl.BlockResults(ctx, h)
	for try := 0; err != nil && try < 25 && ctx.Err() == nil; try++ {
		time.Sleep(200 * time.Millisecond)
		res, err = cl.BlockResults(ctx, h)
	}
	return res, err
}

// SetSenders says which wallets send, for {next} and {prev}: the next and
// the previous sender in that range, wrapping.
func (c *Codec) SetSenders(offset, n int) { c.sendOffset, c.sendCount = offset, n }

// next is the sender after from in the senders' range.
func (c *Codec) next(from int) int { return c.step(from, 1) }

func (c *Codec) step(from, d int) int {
	if c.sendCount <= 0 {
		return (from + d + len(c.wallets)) % len(c.wallets)
	}
	return c.sendOffset + ((from-c.sendOffset+d)%c.sendCount+c.sendCount)%c.sendCount
}
