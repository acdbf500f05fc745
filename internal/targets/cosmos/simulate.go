package cosmos

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
)

// SimulateGas asks the chain how much gas one bank send from wallet from
// uses: it signs a send of 1 to the next wallet with the account's current
// sequence and a generous limit, and runs it through the application's
// simulation (the ABCI query path /app/simulate, which every SDK chain
// answers; nothing is broadcast).
func (c *Codec) SimulateGas(ctx context.Context, from int) (uint64, error) {
	return c.SimulateGasOf(ctx, from, 1)
}

// SimulateGasOf is SimulateGas for a payment to outputs recipients: a
// MsgSend for 1, a MsgMultiSend for more.
func (c *Codec) SimulateGasOf(ctx context.Context, from, outputs int) (uint64, error) {
	seq, err := c.Nonce(ctx, from)
	if err != nil {
		return 0, err
	}
	to := make([]int, outputs)
	for i := range to {
		to[i] = (from + 1 + i) % len(c.wallets)
	}
	s := c.scratch.Get().(*scratch)
	defer c.scratch.Put(s)
	w := c.wallets[from]
	typeURL := typeMsgSend
	if outputs == 1 {
		c.msgSend(s, w, to[0], "1")
	} else {
		c.multiSend(s, w, to, 1)
		typeURL = typeMsgMultiSend
	}
	return c.simulate(ctx, seq, func(seq, limit uint64) []byte {
		return c.signTx(nil, s, typeURL, w, c.numbers[from].Load(), seq, limit, c.fee())
	})
}

// SimulateGasOfKind is SimulateGas for a payment of a kind AddKind made.
func (c *Codec) SimulateGasOfKind(ctx context.Context, from int, kind string) (uint64, error) {
	ms, ok := c.custom[kind]
	if !ok {
		return 0, fmt.Errorf("no kind %q", kind)
	}
	seq, err := c.Nonce(ctx, from)
	if err != nil {
		return 0, err
	}
	to := []int{(from + 1) % len(c.wallets)}
	return c.simulate(ctx, seq, func(seq, limit uint64) []byte {
		return c.customTx(nil, kind, ms, from, to, 1, seq, limit, c.fee())
	})
}

// simulate runs the transaction sign makes for a sequence and a gas limit
// through the application's simulation, and returns the gas it used.
func (c *Codec) simulate(ctx context.Context, seq uint64, sign func(seq, limit uint64) []byte) (uint64, error) {
	var err error
	// A generous limit, unless the chain caps a block's gas below it (a tx
	// may not ask for more than a block holds).
	var out []byte
	for _, limit := range []uint64{1_000_000, 200_000} {
		out, err = c.query(ctx, "/app/simulate", sign(seq, limit))
		if want, ok := expectedSequence(err); ok && want != seq {
			// After a backlog the node's check state is ahead of the
			// committed sequence: simulate with the one it expects
			// (issue 51: auto gas fell back to 200,000).
			seq = want
			out, err = c.query(ctx, "/app/simulate", sign(seq, limit))
		}
		if err == nil || !strings.Contains(err.Error(), "exceeds block max gas") {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	var res struct {
		GasInfo struct {
			GasUsed string `json:"gas_used"`
		} `json:"gas_info"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("the simulation's answer: %v", err)
	}
	used, err := strconv.ParseUint(res.GasInfo.GasUsed, 10, 64)
	if err != nil || used == 0 {
		return 0, fmt.Errorf("the simulation's answer has no gas used: %.200s", out)
	}
	return used, nil
}

// SetGas sets the gas limit each payment reserves.
func (c *Codec) SetGas(gas uint64) {
	c.Gas = gas
	if c.pricing != nil {
		c.fees.Store(c.feeFor(gas, math.Float64frombits(c.pricing.price.Load())))
	}
	if len(c.wallets) > 1 {
		c.size = len(c.Sign(nil, 0, 1, 1, 0))
	}
}

// Calibrate sends one real payment of 1 from wallet from to the next,
// reserving gas, waits up to a minute for a block to commit it, and returns
// the gas it used there: what the chain charges beyond its simulation (a
// fee market's deduction and tip) included. Made before the load, below
// its first height, it is not counted; the sender's sequence moves on.
func (c *Codec) Calibrate(ctx context.Context, sub sut.Submitter, cl *cometbft.Client, from int, gas uint64) (uint64, error) {
	h0, err := cl.Height(ctx)
	if err != nil {
		return 0, err
	}
	seq, err := c.Nonce(ctx, from)
	if err != nil {
		return 0, err
	}
	s := c.scratch.Get().(*scratch)
	w := c.wallets[from]
	c.msgSend(s, w, (from+1)%len(c.wallets), "1")
	fee := c.fee()
	if c.Gas > 0 {
		fee = scaleFee(fee, gas, c.Gas)
	}
	tx := c.signTx(nil, s, typeMsgSend, w, c.numbers[from].Load(), seq, gas, fee)
	c.scratch.Put(s)
	if r := sub.Submit(ctx, sut.Tx{ID: c.ID(tx), Bytes: tx}); r.Status != sut.Pending && r.Status != sut.Committed {
		return 0, fmt.Errorf("the calibration payment was refused: %s: %s", r.Reason, r.Detail)
	}
	id := sha256.Sum256(tx)
	next := h0 + 1
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		h, err := cl.Height(ctx)
		if err != nil {
			return 0, err
		}
		for ; next <= h; next++ {
			b, err := cl.Block(ctx, next)
			if err != nil {
				return 0, err
			}
			for k, t := range b.Data.Txs {
				if sha256.Sum256(t) != id {
					continue
				}
				// A node serves a block before its results are stored
				// ("could not find results for height"): asked again.
				res, err := blockResults(ctx, cl, next)
				if err != nil || k >= len(res) {
					return 0, fmt.Errorf("block %d's results: %v", next, err)
				}
				if res[k].Code != 0 {
					return 0, fmt.Errorf("the calibration payment failed in block %d: %s", next, res[k].Log)
				}
				return uint64(res[k].GasUsed), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("the calibration payment was not in a block within a minute")
}

// sequenceMismatch is the SDK's "account sequence mismatch, expected N,
// got M" in a refusal's log.
var sequenceMismatch = regexp.MustCompile(`account sequence mismatch, expected (\d+)`)

// expectedSequence is the sequence a refusal says the chain expects.
func expectedSequence(err error) (uint64, bool) {
	if err == nil {
		return 0, false
	}
	m := sequenceMismatch.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	v, perr := strconv.ParseUint(m[1], 10, 64)
	return v, perr == nil
}
