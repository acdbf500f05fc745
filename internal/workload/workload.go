// Package workload builds the transactions a run sends: it owns the choice
// of sender and recipient, the per-sender nonce lanes and windows, the
// presigned buffers, and the recovery from sequence mismatches. It knows
// nothing about transports; a Codec per chain family signs transfers.
package workload

import (
	"context"

	"github.com/tpslab/tpslab/internal/sut"
)

// Codec is one chain family's transfer.
type Codec interface {
	// Accounts is how many funded accounts there are: recipients are drawn
	// from all of them.
	Accounts() int
	// Sign appends to dst a transfer of amount from account from to account
	// to with sequence (nonce) nonce.
	Sign(dst []byte, from, to int, amount, nonce uint64) []byte
	// ID is the system's id of a signed transfer.
	ID(tx []byte) sut.TxID
	// Nonce reads account from's next sequence from the system.
	Nonce(ctx context.Context, from int) (uint64, error)
	// Mismatch says whether a rejection or failure is a sequence mismatch
	// and, when the system said, which sequence it expected.
	Mismatch(r sut.Receipt) (mismatch bool, expected uint64, known bool)
	// TxSize is the length of one signed transfer, for memory estimates.
	TxSize() int
}

// Recipients is a codec whose payments may also go to accounts past its
// funded senders' (an optional capability): a system's pre-loaded state
// (net up --state), which holds no key here. Recipients counts them all,
// the funded accounts first.
type Recipients interface {
	Recipients() int
}

// recipients is how many accounts c's payments are drawn to.
func recipients(c Codec) int {
	if r, ok := c.(Recipients); ok {
		return r.Recipients()
	}
	return c.Accounts()
}

// Outcome is how a tracked payment ended, as the workload needs to know.
type Outcome uint8

const (
	Committed Outcome = iota
	Failed
	Expired
)

// Workload is what the dispatcher needs: room in senders' windows, and a
// builder per worker.
type Workload interface {
	Senders() int // 0 when the workload has no senders
	Reserve() int // a sender with room in its window, or -1
	ReserveSender(s int) bool
	Release(s int)
	// Resolved tells the workload what became of sender s's payment with
	// sequence nonce, once it is final.
	Resolved(s int, nonce uint64, o Outcome, reason string)
	NewBuilder(seed int64) Builder
}

// Wallets is a workload whose closed-model users each hold several
// senders (an optional capability): user u pays from the senders s with
// s mod users = u, in turn, as a wallet spends its coins one after
// another (a Taler wallet: one coin per user emptied it in seconds).
type Wallets interface {
	Wallets() bool
}

// Traced is a workload that replays a trace naming its payments' accounts
// (an optional capability): the dispatcher reserves the sender the trace
// gives arrival k, and hands k to the builder as Next's i.
type Traced interface {
	Traced() bool
	// TraceSender is arrival k's sender, or -1 when its row names none.
	TraceSender(k uint64) int
}

// Built is one payment's transaction.
type Built struct {
	Tx       sut.Tx
	Nonce    uint64
	Resynced bool // the sender's sequence was read from the system first
	Stable   bool // Tx.Bytes outlive the next call (presigned)
	// Invalid is the sort of a deliberately invalid payment (workload.invalid),
	// "" for a payment. It takes no sequence of its sender's lane.
	Invalid string
	Kind    string // its kind in a mix (workload.mix); "" without one
}

// Mix is one kind of payment in a mix, drawn by weight.
type Mix struct {
	Kind    string // send | multi_send
	Weight  float64
	Outputs int // multi_send: recipients
}

// Unsequenced is a codec whose system keeps no sequence per sender
// (Factom's entries are unique by their hash): an expired payment says
// nothing about the sender's state, and its number is never signed again
// (presigned bytes sent twice are the same payment twice, which the system
// refuses as repeated).
type Unsequenced interface {
	Unsequenced() bool
}

// KindSigner is a codec that signs payments of other kinds than its
// transfer (an optional capability, for mixes): to holds the recipients.
type KindSigner interface {
	SignKind(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool)
}

// Recovery says how to recover a payment from a sequence mismatch.
type Recovery struct {
	Class    string   // chain_lower | chain_higher | unknown; "" when there is nothing to recover
	Resubmit []sut.Tx // original bytes to send again first, in order
	Tx       sut.Tx   // then this: the payment's own bytes again, or re-signed
	Nonce    uint64
	Resigned bool
	Resynced bool
	Repriced bool   // refused for its fee: re-signed at the chain's price (Class "repriced")
	Kind     string // a re-signed payment's kind in the mix ("" without one)
}

// Repricer is a codec whose fee follows the chain's gas price (an optional
// capability): Reprice takes a refusal and says whether it was for the fee
// and the payment should be signed again at the price the chain asks now.
type Repricer interface {
	Reprice(ctx context.Context, r sut.Receipt) bool
}

// Builder makes the transactions of one worker goroutine; every payment of
// a sender goes through the same builder, in order.
type Builder interface {
	// Next returns sender s's next payment (or, without senders, number i).
	// Its bytes stay valid until the next call.
	Next(ctx context.Context, s int, i uint64) (Built, error)
	// Answer tells the builder how the system answered tx; a Recovery with
	// a Class asks for tx to be sent again as it says. Without recover, a
	// mismatch is final like any other rejection. stable is Built.Stable
	// for tx: its bytes may be kept without a copy.
	Answer(ctx context.Context, s int, tx sut.Tx, stable bool, nonce uint64, r sut.Receipt, recover bool) Recovery
}

// Toucher reads ahead what Next will read for sender s's next payment.
// Called for every payment of a batch before any is built, the batch's
// cache misses overlap instead of each stalling the sender in turn: a
// presigned queue larger than the cache missed on every payment (Next and
// copying its bytes were 28% of the generator's CPU at 20k/s).
type Toucher interface {
	Touch(s int)
}

// The sorts of deliberately invalid payment (workload.invalid.sorts).
const (
	BadSignature      = "bad_signature"      // a signature that does not verify
	WrongChainID      = "wrong_chain_id"     // signed for another chain
	StaleSequence     = "stale_sequence"     // a sequence the chain has used
	InsufficientFunds = "insufficient_funds" // more than any account holds
	Oversized         = "oversized"          // larger than the system takes
)

// InvalidSorts are all the sorts, in the order docs/metrics.md lists them.
var InvalidSorts = []string{BadSignature, WrongChainID, StaleSequence, InsufficientFunds, Oversized}

// InvalidSigner is a codec that can build deliberately invalid payments (an
// optional capability): SignInvalid appends a payment of the given sort, or
// says false when it cannot build that sort (a stale sequence before any
// was used).
type InvalidSigner interface {
	SignInvalid(dst []byte, sort string, from, to int, amount, nonce uint64) ([]byte, bool)
}

// Presigner is a workload that can sign ahead of the load (an optional
// capability: the runner presigns when a workload has it).
type Presigner interface {
	// EncodeAhead has Presign encode each payment for e too (Tx.Wire).
	EncodeAhead(e sut.Encoder)
	PresignPlan(n int) (count int, bytes float64)
	Presign(ctx context.Context, n int, seed int64, progress func(done, total int)) (int, error)
}
