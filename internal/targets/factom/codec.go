package factom

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/FactomProject/factom"

	"github.com/tpslab/tpslab/internal/sut"
)

// The payment kinds a mix names, as the Factom TPS report counts them.
const (
	KindEntry   = "entry"   // commit-entry then reveal-entry into a chain of the run's
	KindChain   = "chain"   // commit-chain then reveal-chain: a new chain and its first entry
	KindFactoid = "factoid" // a factoid transaction between two test wallets
)

// A signed payment is its kind's byte, its id, and one or two JSON-RPC
// request bodies made ahead (commit, then reveal): the submitter posts
// them as they are.
const (
	tagEntry byte = iota
	tagChain
	tagFactoid
	head = 1 + 32 + 4
)

// Codec signs the payments of one run: sender s is test wallet s (its
// entry-credit address pays entries and chains, its factoid address
// factoid transactions).
type Codec struct {
	EC      []*factom.ECAddress
	FA      []*factom.FactoidAddress
	Chains  []string // the run's chains, created before the load
	Rate    uint64   // factoshis per entry credit, for the fees
	Run     string   // unique to the run: no two runs' entries hash alike
	Content int      // entry content bytes
}

// Accounts are the wallets.
func (c *Codec) Accounts() int { return len(c.EC) }

// Sign appends an entry of wallet from (its number nonce) to one of the
// run's chains.
func (c *Codec) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	chain := c.Chains[from%len(c.Chains)]
	e := factom.NewEntryFromBytes(hexID(chain), c.content(from, to, amount, nonce), []byte("tpslab"))
	commit, _ := factom.ComposeEntryCommit(e, c.EC[from])
	reveal, _ := factom.ComposeEntryReveal(e)
	return appendPayment(dst, tagEntry, e.Hash(), commit, reveal)
}

// SignKind appends a payment of a mix's kind.
func (c *Codec) SignKind(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool) {
	switch kind {
	case KindEntry:
		return c.Sign(dst, from, to[0], amount, nonce), true
	case KindChain:
		ch := factom.NewChainFromBytes(c.content(from, to[0], amount, nonce), []byte("tpslab"), []byte(c.Run), []byte(fmt.Sprintf("%d/%d", from, nonce)))
		commit, _ := factom.ComposeChainCommit(ch, c.EC[from])
		reveal, _ := factom.ComposeChainReveal(ch)
		return appendPayment(dst, tagChain, ch.FirstEntry.Hash(), commit, reveal), true
	case KindFactoid:
		if len(c.FA) == 0 {
			return dst, false
		}
		// The amount's last digits carry the nonce: two payments of one
		// wallet in one millisecond are two transactions.
		amt := 1000 + amount%1000 + 1000*(nonce%1_000_000)
		raw, id, err := FactoidTx(c.FA[from], []Out{{Address: c.FA[to[0]%len(c.FA)].RCDHash(), Amount: amt}}, nil, c.Rate, uint64(time.Now().UnixMilli()))
		if err != nil {
			return dst, false
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "factoid-submit", "params": map[string]string{"transaction": hex.EncodeToString(raw)}})
		return appendPayment(dst, tagFactoid, id[:], body, nil), true
	}
	return dst, false
}

// content is an entry's content: who paid whom what, in the run, padded
// to the configured size.
func (c *Codec) content(from, to int, amount, nonce uint64) []byte {
	s := fmt.Sprintf("tpslab %s wallet %d payment %d to %d amount %d", c.Run, from, nonce, to, amount)
	if len(s) < c.Content {
		s += strings.Repeat(".", c.Content-len(s))
	}
	return []byte(s)
}

func hexID(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// appendPayment lays out a payment: tag, id, the first body's length, the
// first body, the second.
func appendPayment(dst []byte, tag byte, id []byte, first, second any) []byte {
	b1 := body(first)
	dst = append(dst, tag)
	dst = append(dst, id...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b1)))
	dst = append(dst, b1...)
	return append(dst, body(second)...)
}

func body(v any) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case []byte:
		return v
	}
	b, _ := json.Marshal(v)
	return b
}

// Split reads a payment back: its tag, id and request bodies (second is
// empty for a factoid transaction); ok is false for bytes too short.
func Split(tx []byte) (tag byte, id sut.TxID, first, second []byte, ok bool) {
	if len(tx) < head {
		return 0, id, nil, nil, false
	}
	n := int(binary.BigEndian.Uint32(tx[33:head]))
	if n > len(tx)-head {
		return 0, id, nil, nil, false
	}
	copy(id[:], tx[1:33])
	return tx[0], id, tx[head : head+n], tx[head+n:], true
}

// ID is the entry's hash (a chain's first entry's), or the transaction's id.
func (c *Codec) ID(tx []byte) sut.TxID {
	_, id, _, _, _ := Split(tx)
	return id
}

// Nonce: Factom has no account sequence; a commit is unique by its entry.
func (c *Codec) Nonce(context.Context, int) (uint64, error) { return 0, nil }

// Unsequenced: an entry is unique by its hash, a wallet has no sequence.
func (c *Codec) Unsequenced() bool { return true }

// Mismatch: there is no sequence to miss.
func (c *Codec) Mismatch(sut.Receipt) (bool, uint64, bool) { return false, 0, false }

// TxSize is about one entry's two requests.
func (c *Codec) TxSize() int { return head + 700 + 2*c.Content }
