package cosmos

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// FundBatch is how many wallets one MultiSend pays, and fundInFlight how
// many batches are sent before one commits. The next batches are sent when
// the last commit, too late for the next proposal: blocks alternate
// between four batches of 300 (29.2M gas, the default block's 30M) and
// none, half the block on average, the fee market's target, so a big
// funding moves the gas price up and down but not away.
const (
	FundBatch    = 300
	fundInFlight = 4
)

// gas a MultiSend needs: a base, and per output (a balance write, often a
// new account: 22,454 gas each measured on tpsd, 500 new accounts using
// 11.33M), with room to spare.
func multiSendGas(outputs int) uint64 { return 100_000 + 24_000*uint64(outputs) }

// Fund gives amount of the codec's denom to each of the wallets to, from
// funder, in MultiSend transactions of FundBatch outputs submitted through
// sub, and waits until all are committed. progress is told as batches
// commit. With resume, a batch whose last wallet already holds half of
// amount is skipped: a funding that was interrupted goes on where it stopped. The
// funder's key is used only to sign; it is never printed.
func Fund(ctx context.Context, c *Codec, sub sut.Submitter, funder Wallet, to []int, amount uint64, resume bool, progress func(done, total int)) error {
	acct, err := c.Account(ctx, funder.Address)
	if err != nil {
		return fmt.Errorf("workload.funder_key: %w", err)
	}
	need := new(big.Int).Mul(new(big.Int).SetUint64(amount), big.NewInt(int64(len(to))))
	have, err := Balance(ctx, c.query, funder.Address, c.Denom)
	if err != nil {
		return fmt.Errorf("workload.funder_key: read the funder's balance: %w", err)
	}
	if new(big.Int).SetUint64(have).Cmp(need) < 0 {
		return fmt.Errorf("workload.funder_key: the funder %s holds %d%s, and funding %d wallets with %d%s each needs %s%s", funder.Address, have, c.Denom, len(to), amount, c.Denom, need, c.Denom)
	}
	seq := acct.Sequence
	first := seq
	var sizes []int // each sent batch's wallets, in sequence order
	done := 0       // wallets funded: skipped on resume, then committed
	s := c.scratch.Get().(*scratch)
	defer c.scratch.Put(s)
	each := strconv.FormatUint(amount, 10)
	// committed waits until at most inFlight batches are uncommitted,
	// telling progress; it gives up after 2 minutes without one committing.
	last, moved := first, time.Now()
	committed := func(inFlight uint64) error {
		for seq-last > inFlight {
			if a, err := c.Account(ctx, funder.Address); err == nil && a.Sequence > last {
				for _, n := range sizes[last-first : min(a.Sequence, seq)-first] {
					done += n
				}
				last, moved = min(a.Sequence, seq), time.Now()
				if progress != nil {
					progress(done, len(to))
				}
				continue
			}
			if time.Since(moved) > 2*time.Minute || ctx.Err() != nil {
				return fmt.Errorf("funding: no batch committed for 2 minutes (funder at sequence %d of %d)", last, seq)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	}
	for start := 0; start < len(to); start += FundBatch {
		end := min(start+FundBatch, len(to))
		if resume {
			// Batches are sent in order, so the last wallet of a batch
			// holding half the amount (it may have paid since) means the
			// batch committed, as reuse_wallets judges.
			if got, err := Balance(ctx, c.query, c.wallets[to[end-1]].Address, c.Denom); err == nil && got >= amount/2 {
				done += end - start
				continue
			}
		}
		if err := committed(fundInFlight - 1); err != nil {
			return err
		}
		total := new(big.Int).Mul(new(big.Int).SetUint64(amount), big.NewInt(int64(end-start))).String()
		// MsgMultiSend{inputs: [Input{address, coins}], outputs: [Output{address, coins}...]}
		s.msg = appendMessage(s.msg[:0], 1, &s.sub, func(b []byte) []byte {
			b = appendString(b, 1, funder.Address)
			return appendCoin(b, 2, Coin{Denom: c.Denom, Amount: total})
		})
		for _, w := range to[start:end] {
			s.msg = appendMessage(s.msg, 2, &s.sub, func(b []byte) []byte {
				b = appendString(b, 1, c.wallets[w].Address)
				return appendCoin(b, 2, Coin{Denom: c.Denom, Amount: each})
			})
		}
		gas := multiSendGas(end - start)
		var r sut.Receipt
		for try := 0; ; try++ {
			tx := c.signTx(nil, s, typeMsgMultiSend, funder, acct.Number, seq, gas, scaleFee(c.fee(), gas, c.Gas))
			r = sub.Submit(ctx, sut.Tx{ID: c.ID(tx), Bytes: tx})
			// The fee market's price can move while a big funding runs:
			// read it again and pay it.
			if try < 3 && c.Reprice(ctx, r) {
				continue
			}
			break
		}
		if r.Status != sut.Pending && r.Status != sut.Committed {
			return fmt.Errorf("funding wallets %d..%d: %s: %s", to[start], to[end-1], r.Reason, r.Detail)
		}
		seq++
		sizes = append(sizes, end-start)
	}
	if err := committed(0); err != nil {
		return err
	}
	if len(sizes) == 0 && progress != nil { // every batch was done before
		progress(done, len(to))
	}
	w := to[len(to)-1]
	if got, err := Balance(ctx, c.query, c.wallets[w].Address, c.Denom); err != nil || got < amount {
		return fmt.Errorf("funding: wallet %d holds %d%s after funding, expected at least %d (%v)", w, got, c.Denom, amount, err)
	}
	return nil
}

// scaleFee is a transfer's fee scaled to gas (fees grow with gas).
func scaleFee(fee []Coin, gas, base uint64) []Coin {
	out := make([]Coin, len(fee))
	for i, f := range fee {
		v, ok := new(big.Int).SetString(f.Amount, 10)
		if !ok {
			out[i] = f
			continue
		}
		v.Mul(v, new(big.Int).SetUint64(gas))
		v.Add(v, new(big.Int).SetUint64(base-1))
		v.Div(v, new(big.Int).SetUint64(base))
		out[i] = Coin{Denom: f.Denom, Amount: v.String()}
	}
	return out
}

// StakingDenom reads the chain's staking (bond) denom.
func StakingDenom(ctx context.Context, query QueryFunc) (string, error) {
	v, err := query(ctx, "/cosmos.staking.v1beta1.Query/Params", nil)
	if err != nil {
		return "", err
	}
	fs, err := fields(v)
	if err != nil {
		return "", err
	}
	p, _ := first(fs, 1)
	pfs, err := fields(p.bytes)
	if err != nil {
		return "", err
	}
	d, _ := first(pfs, 5)
	return string(d.bytes), nil
}

// Bech32Prefix reads the chain's account address prefix.
func Bech32Prefix(ctx context.Context, query QueryFunc) (string, error) {
	v, err := query(ctx, "/cosmos.auth.v1beta1.Query/Bech32Prefix", nil)
	if err != nil {
		return "", err
	}
	fs, err := fields(v)
	if err != nil {
		return "", err
	}
	p, _ := first(fs, 1)
	return string(p.bytes), nil
}
