package taler

import (
	"context"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// Codec is the workload's view of a wallet's coins: sender s is coin s,
// each of whose payments deposits amount to a merchant, the sequence
// being the coin's deposit count (each a contract of its own).
type Codec struct {
	Coins     []*Coin
	Merchants []*Merchant
	Amount    Amount
	Seed      []byte // the run's, in every contract hash
	// Reserves fund the withdrawals of a mix (kind withdraw): sender s
	// withdraws from reserve s mod their count, a coin of each of Denoms
	// in turn.
	Reserves []Reserve
	Denoms   []*Denom
}

// SignKind appends a payment of a mix's kind: deposit (Sign's) or
// withdraw, a fresh coin from the sender's reserve.
func (c *Codec) SignKind(dst []byte, kind string, from int, to []int, _, nonce uint64) ([]byte, bool) {
	switch {
	case kind == "deposit":
		return c.Sign(dst, from, to[0], 0, nonce), true
	case kind == "withdraw" && len(c.Reserves) > 0 && len(c.Denoms) > 0:
		return AppendWithdraw(dst, c.Reserves[from%len(c.Reserves)], c.Denoms[int(nonce%uint64(len(c.Denoms)))]), true
	}
	return dst, false
}

// Accounts: recipients are drawn over the coins and mapped to merchants.
func (c *Codec) Accounts() int { return len(c.Coins) }

// Sign appends coin from's deposit number nonce to merchant to (mod the
// merchants); amount is the workload's draw, unused: every deposit is
// c.Amount.
func (c *Codec) Sign(dst []byte, from, to int, _, nonce uint64) []byte {
	coin := c.Coins[from]
	return AppendDeposit(dst, coin, c.Merchants[to%len(c.Merchants)], c.Amount, ContractHash(c.Seed, coin.Pub, nonce), time.Now())
}

// ID is the deposit's coin and contract hash, hashed; a withdrawal's
// blinded coin hash.
func (c *Codec) ID(tx []byte) sut.TxID {
	switch {
	case len(tx) < depositHead:
		return sut.TxID{}
	case IsWithdraw(tx):
		return WithdrawID(tx[32:depositHead])
	}
	return DepositID(tx[:32], tx[32:depositHead])
}

// Nonce: coins are fresh for each run.
func (c *Codec) Nonce(context.Context, int) (uint64, error) { return 0, nil }

// Mismatch: deposits have no sequence to miss.
func (c *Codec) Mismatch(sut.Receipt) (bool, uint64, bool) { return false, 0, false }

// TxSize is about one deposit's bytes.
func (c *Codec) TxSize() int { return depositHead + 1000 }
