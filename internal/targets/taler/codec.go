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

// ID is the deposit's coin and contract hash, hashed.
func (c *Codec) ID(tx []byte) sut.TxID {
	if len(tx) < depositHead {
		return sut.TxID{}
	}
	return DepositID(tx[:32], tx[32:depositHead])
}

// Nonce: coins are fresh for each run.
func (c *Codec) Nonce(context.Context, int) (uint64, error) { return 0, nil }

// Mismatch: deposits have no sequence to miss.
func (c *Codec) Mismatch(sut.Receipt) (bool, uint64, bool) { return false, 0, false }

// TxSize is about one deposit's bytes.
func (c *Codec) TxSize() int { return depositHead + 1000 }
