// Package ledgerclient is the load generator's side of the built-in
// ledger (package chain, the ABCI application): it signs payments with the
// keys derived from the genesis seed and reads sequences from the system.
// It lives beside the seam, not in the application, so the system under
// test imports nothing of the load generator.
package ledgerclient

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// NonceFunc reads an account's next admissible sequence.
type NonceFunc func(ctx context.Context, a chain.Address) (uint64, error)

// Client is the load generator's side of the ledger: it signs payments with
// the keys derived from the genesis seed and reads sequences from the
// system (a chain's ABCI query, a ledger service's account API). It is the
// ledger's workload codec.
type Client struct {
	chainID string
	padding int
	keys    []ed25519.PrivateKey
	addrs   []chain.Address
	nonce   NonceFunc
	// stateSeed and state: the genesis's pre-loaded accounts
	// (chain.StateAddress) that recipients are drawn from too.
	stateSeed string
	state     uint64
}

// NewClient derives the genesis accounts' keys (on all cores) and reads
// sequences by ABCI query.
func NewClient(chainID string, g chain.Genesis, padding int, query chain.QueryFunc) *Client {
	c := NewWallets(chainID, g.Seed, int(g.Accounts), padding, query)
	c.state = g.State
	return c
}

// NewWallets is a client of n accounts derived from seed as genesis
// accounts are (chain.DeriveKey), whether genesis funded them or not.
func NewWallets(chainID, seed string, n, padding int, query chain.QueryFunc) *Client {
	return NewClientNonce(chainID, chain.Genesis{Seed: seed, Accounts: uint64(n)}, padding, func(ctx context.Context, a chain.Address) (uint64, error) {
		ai, err := ReadAccount(ctx, query, a)
		return ai.NextSequence, err
	})
}

// ReadAccount asks a ledger node for an account (the /account query).
func ReadAccount(ctx context.Context, query chain.QueryFunc, a chain.Address) (chain.AccountInfo, error) {
	var ai chain.AccountInfo
	v, err := query(ctx, "/account", a[:])
	if err != nil {
		return ai, err
	}
	if err := json.Unmarshal(v, &ai); err != nil {
		return ai, fmt.Errorf("/account answer: %w", err)
	}
	return ai, nil
}

// NewClientNonce is NewClient with sequences read by nonce.
func NewClientNonce(chainID string, g chain.Genesis, padding int, nonce NonceFunc) *Client {
	keys := chain.DeriveKeys(g.Seed, int(g.Accounts))
	c := &Client{chainID: chainID, padding: padding, keys: keys, addrs: make([]chain.Address, len(keys)), nonce: nonce, stateSeed: g.Seed, state: g.State}
	for i, k := range keys {
		c.addrs[i] = chain.AddressOf(k[32:])
	}
	return c
}

// ChainID is the chain id payments are signed for.
func (c *Client) ChainID() string { return c.chainID }

// Accounts is the number of funded genesis accounts.
func (c *Client) Accounts() int { return len(c.keys) }

// Recipients counts the accounts payments may go to: the keyed ones and
// the pre-loaded state after them (workload.Recipients).
func (c *Client) Recipients() int { return len(c.keys) + int(c.state) }

// Address is account i's address: a keyed account's, or past them a
// pre-loaded one's.
func (c *Client) Address(i int) chain.Address {
	if i < len(c.addrs) {
		return c.addrs[i]
	}
	return chain.StateAddress(c.stateSeed, uint64(i-len(c.addrs)))
}

// ShareState draws c's recipients from the pre-loaded accounts of from's
// genesis too (test wallets funded from its accounts).
func (c *Client) ShareState(from *Client) { c.stateSeed, c.state = from.stateSeed, from.state }

// SignKind appends a payment of a mix's kind: multi_send is one batch
// (version 2) paying amount to each of to.
func (c *Client) SignKind(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool) {
	if kind != "multi_send" || len(to) == 0 || len(to) > chain.MaxOutputs {
		return dst, false
	}
	var buf [16]chain.Address // most mixes pay a few: no allocation
	addrs := buf[:0]
	for _, r := range to {
		addrs = append(addrs, c.Address(r))
	}
	return chain.AppendBatch(dst, c.chainID, c.keys[from], addrs, []uint64{amount}, nonce, c.padding), true
}

// Sign appends a signed payment.
func (c *Client) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	return chain.AppendPayment(dst, c.chainID, c.keys[from], c.Address(to), amount, nonce, c.padding)
}

// ID is CometBFT's transaction id: sha256 of the bytes.
func (c *Client) ID(tx []byte) sut.TxID { return sha256.Sum256(tx) }

// TxSize is the length of one payment.
func (c *Client) TxSize() int { return chain.Size(len(c.chainID), c.padding) }

// Durable: a ledger payment carries no fee or expiry, so it stays valid
// until its sequence is used (workload.Carry).
func (c *Client) Durable() bool { return true }

// Nonce reads account from's next admissible sequence (committed state plus
// what the mempool admitted).
func (c *Client) Nonce(ctx context.Context, from int) (uint64, error) {
	return c.nonce(ctx, c.addrs[from])
}

// Mismatch reads the ledger's sequence rejections: their log says
// "sequence too high: got G, expected E" (or too low).
func (c *Client) Mismatch(r sut.Receipt) (bool, uint64, bool) {
	if r.Reason != chain.CodeName(chain.CodeSequenceTooLow) && r.Reason != chain.CodeName(chain.CodeSequenceTooHigh) {
		return false, 0, false
	}
	i := strings.LastIndex(r.Detail, "expected ")
	if i < 0 {
		return true, 0, false
	}
	e, err := strconv.ParseUint(strings.TrimSpace(r.Detail[i+len("expected "):]), 10, 64)
	return true, e, err == nil
}

// SignInvalid appends a deliberately invalid payment (workload.invalid):
// its signature altered, signed for another chain id, with the stale
// sequence given, for more than any account holds, or padded one byte past
// the ledger's chain.MaxTxBytes.
func (c *Client) SignInvalid(dst []byte, sort string, from, to int, amount, nonce uint64) ([]byte, bool) {
	switch sort {
	case workload.BadSignature:
		dst = c.Sign(dst, from, to, amount, nonce)
		dst[len(dst)-1] ^= 0x01 // the payment ends with its signature
		return dst, true
	case workload.WrongChainID:
		return chain.AppendPayment(dst, c.chainID+"-other", c.keys[from], c.Address(to), amount, nonce, c.padding), true
	case workload.StaleSequence:
		return c.Sign(dst, from, to, amount, nonce), true
	case workload.InsufficientFunds:
		return c.Sign(dst, from, to, 1<<62, nonce), true
	case workload.Oversized:
		pad := chain.MaxTxBytes + 1 - chain.Size(len(c.chainID), 0)
		return chain.AppendPayment(dst, c.chainID, c.keys[from], c.Address(to), amount, nonce, max(pad, c.padding)), true
	}
	return dst, false
}
