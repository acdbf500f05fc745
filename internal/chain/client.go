package chain

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/sut"
)

// QueryFunc runs an ABCI query against the ledger (a CometBFT target's
// ABCIQuery).
type QueryFunc func(ctx context.Context, path string, data []byte) ([]byte, error)

// NonceFunc reads an account's next admissible sequence.
type NonceFunc func(ctx context.Context, a Address) (uint64, error)

// Client is the load generator's side of the ledger: it signs payments with
// the keys derived from the genesis seed and reads sequences from the
// system (a chain's ABCI query, a ledger service's account API). It is the
// ledger's workload codec.
type Client struct {
	chainID string
	padding int
	keys    []ed25519.PrivateKey
	addrs   []Address
	nonce   NonceFunc
}

// NewClient derives the genesis accounts' keys (on all cores) and reads
// sequences by ABCI query.
func NewClient(chainID string, g Genesis, padding int, query QueryFunc) *Client {
	return NewClientNonce(chainID, g, padding, func(ctx context.Context, a Address) (uint64, error) {
		v, err := query(ctx, "/account", a[:])
		if err != nil {
			return 0, err
		}
		var ai AccountInfo
		if err := json.Unmarshal(v, &ai); err != nil {
			return 0, fmt.Errorf("/account answer: %w", err)
		}
		return ai.NextSequence, nil
	})
}

// NewClientNonce is NewClient with sequences read by nonce.
func NewClientNonce(chainID string, g Genesis, padding int, nonce NonceFunc) *Client {
	keys := DeriveKeys(g.Seed, int(g.Accounts))
	c := &Client{chainID: chainID, padding: padding, keys: keys, addrs: make([]Address, len(keys)), nonce: nonce}
	for i, k := range keys {
		c.addrs[i] = AddressOf(k[32:])
	}
	return c
}

// Accounts is the number of funded genesis accounts.
func (c *Client) Accounts() int { return len(c.keys) }

// Address is account i's address.
func (c *Client) Address(i int) Address { return c.addrs[i] }

// Sign appends a signed payment.
func (c *Client) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	return AppendPayment(dst, c.chainID, c.keys[from], c.addrs[to], amount, nonce, c.padding)
}

// ID is CometBFT's transaction id: sha256 of the bytes.
func (c *Client) ID(tx []byte) sut.TxID { return sha256.Sum256(tx) }

// TxSize is the length of one payment.
func (c *Client) TxSize() int { return Size(len(c.chainID), c.padding) }

// Nonce reads account from's next admissible sequence (committed state plus
// what the mempool admitted).
func (c *Client) Nonce(ctx context.Context, from int) (uint64, error) {
	return c.nonce(ctx, c.addrs[from])
}

// Mismatch reads the ledger's sequence rejections: their log says
// "sequence too high: got G, expected E" (or too low).
func (c *Client) Mismatch(r sut.Receipt) (bool, uint64, bool) {
	if r.Reason != CodeName(CodeSequenceTooLow) && r.Reason != CodeName(CodeSequenceTooHigh) {
		return false, 0, false
	}
	i := strings.LastIndex(r.Detail, "expected ")
	if i < 0 {
		return true, 0, false
	}
	e, err := strconv.ParseUint(strings.TrimSpace(r.Detail[i+len("expected "):]), 10, 64)
	return true, e, err == nil
}

// Reason names a result code: the ledger's names for its codespace,
// "<codespace>_<code>" for any other application.
func Reason(space string, code uint32, _ string) string {
	switch {
	case space == Codespace:
		return CodeName(code)
	case space != "":
		return space + "_" + strconv.FormatUint(uint64(code), 10)
	}
	return "code_" + strconv.FormatUint(uint64(code), 10)
}

// ReadGenesis asks a node for the ledger's genesis; an error means the
// chain is not a tpslab ledger.
func ReadGenesis(ctx context.Context, query QueryFunc) (Genesis, error) {
	v, err := query(ctx, "/genesis", nil)
	if err != nil {
		return Genesis{}, fmt.Errorf("not a tpslab ledger (its /genesis query failed: %v)", err)
	}
	return ParseGenesis(v)
}
