// Package target is the seam between the load engine and a system under
// test. A kind of system (a CometBFT chain, a Cosmos SDK chain, an EVM
// chain, an HTTP ledger) implements Target: it submits transactions and
// says what became of them, either in its answer (a synchronous ledger) or
// through a Confirmer that follows blocks or polls. The engine knows no
// concrete kind; see docs/architecture.md.
package sut

import (
	"context"
	"encoding/hex"
	"strconv"
	"time"
)

// TxID is a transaction's id in its own system's terms: sha256 of the bytes
// for CometBFT and Cosmos, keccak256 for EVM, the idempotency key for an
// HTTP ledger. The workload's codec computes it.
type TxID [32]byte

func (id TxID) String() string { return hex.EncodeToString(id[:]) }

// Tx is one transaction ready to send.
type Tx struct {
	ID    TxID
	Bytes []byte
	// Wire is Bytes as the target's submitters send them (Encoder), made
	// ahead for a presigned payment; nil when a submitter encodes Bytes.
	Wire []byte
}

// Encoder is a target whose submitters send a transaction's bytes encoded
// (base64 or hex inside a JSON body), an optional capability: presigned
// payments are encoded ahead into Tx.Wire, so the send path copies them
// instead of encoding each one while the clock runs (base64 was an eighth
// of the generator's CPU at 400k payments/s against the sink).
type Encoder interface {
	AppendWire(dst, tx []byte) []byte
}

// AppendWire appends tx as e sends it: its Wire when made ahead, else its
// bytes encoded now.
func AppendWire(dst []byte, tx Tx, e Encoder) []byte {
	if tx.Wire != nil {
		return append(dst, tx.Wire...)
	}
	return e.AppendWire(dst, tx.Bytes)
}

// Status is what a submission's answer says about a transaction.
type Status uint8

const (
	// Rejected: the system refused it; it will never commit.
	Rejected Status = iota
	// Pending: the system accepted it; a Confirmer will say what became of it.
	Pending
	// Committed: settled with success, in the answer itself (synchronous ledgers).
	Committed
	// Failed: settled without effect, in the answer itself.
	Failed
	// Unacked: the request left but its answer was lost (a connection broke
	// after it was written, or it timed out). The system may or may not hold
	// it, so it stays tracked: a block may still commit it.
	Unacked
)

func (s Status) String() string {
	switch s {
	case Rejected:
		return "rejected"
	case Pending:
		return "pending"
	case Committed:
		return "committed"
	case Failed:
		return "failed"
	case Unacked:
		return "unacked"
	}
	return "unknown"
}

// Receipt is a system's answer to one submission.
type Receipt struct {
	Status   Status
	Reason   string // why Rejected, Failed or Unacked: a stable snake_case name
	Detail   string // the system's own words, for the record
	Endpoint int    // index of the endpoint that answered
	// Throttled counts the answers that asked to slow down (HTTP 429)
	// before this one; each was waited out as the system asked.
	Throttled int
}

// Submitter sends transactions; one per worker, not safe for concurrent use.
type Submitter interface {
	Submit(ctx context.Context, tx Tx) Receipt
}

// TxResult is one transaction of a block.
type TxResult struct {
	ID     TxID
	OK     bool   // executed with success
	Reason string // why not OK, named by the kind's codec
	Detail string // the system's own words, when not OK
	Gas    uint64 // gas it used, where the block says (0: not said)
	// Gossiped is when a second node's mempool first held it, on that
	// node's wall clock; zero when not observed (sampled systems only).
	Gossiped time.Time
	// Proposed is when the chain placed this transaction in the block it
	// was building, where it says so per transaction (Factom's
	// TransactionACK), on tpslab's clock; zero: the block's Proposed.
	Proposed time.Time
}

// Block is a block as a block-following Confirmer reports it.
type Block struct {
	Height int64
	// Hash is the block's content hash as the chain names it (CometBFT's
	// header data_hash, an EVM block's hash); "" where it has none.
	Hash string
	Time time.Time // the header's time
	Seen time.Time // when tpslab observed it, on its own clock
	// Proposed is when tpslab saw the proposal of this block complete
	// (CometBFT's CompleteProposal event), on its own clock; zero when not
	// seen (a block read by RPC, a chain without the event).
	Proposed time.Time
	Txs      []TxResult
	Bytes    int
	// Final is set when inclusion is finality (BFT chains, or depth 0).
	Final bool
}

// Events is what a Confirmer reports to; the engine implements it. Calls
// come from one goroutine, in order.
type Events interface {
	// Block reports a block and the result of each of its transactions.
	Block(b *Block)
	// Final says every block up to height upTo is final (depth-k chains).
	Final(upTo int64, seen time.Time)
	// Reorg says the blocks from height from on were replaced: what they
	// included is pending again.
	Reorg(from int64, seen time.Time)
	// Resolved settles one watched transaction (per-transaction confirmers).
	Resolved(id TxID, ok bool, reason string, seen time.Time)
}

// Confirmer says what became of submitted transactions.
type Confirmer interface {
	// Watch asks for id to be followed; block followers ignore it.
	Watch(id TxID)
	// Run reports to ev from height from on (block followers) until ctx
	// ends. It returns an error when the system can no longer be read.
	Run(ctx context.Context, from int64, ev Events) error
}

// Resilient is a confirmer that reads on through an outage of its system
// (a database that stopped): Run retries until ctx ends, and calls down
// once when reading first fails, so that the run stops offering while
// payments already acknowledged stay tracked until their commit timeout.
type Resilient interface {
	OnOutage(down func(error))
}

// Info is what a probe learns about the system.
type Info struct {
	ChainID string
	Height  int64 // latest committed height; 0 for systems without blocks
	Version string
}

// Target is a system under test.
type Target interface {
	// Probe asks the system who it is; an error means it does not answer.
	Probe(ctx context.Context) (Info, error)
	// Submitter returns submitter i; submitters are spread over the endpoints.
	Submitter(i int) Submitter
	// Confirmer is nil when every answer is final (a synchronous ledger).
	Confirmer() Confirmer
	Close() error
}

// Unreadable is the receipt for an answer that says nothing readable about
// the transaction: a gateway's error page, a body without a result. A
// gateway in front of a node (nginx, a load balancer, an RPC provider) may
// have forwarded it before answering any 5xx (a 500 after a node's reset,
// 502, 503, 504), or an unreadable 200, so it stays tracked (Unacked) and
// counts if a block commits it: only a node's own refusal, read from its
// answer, is a rejection. A 4xx (throttled, forbidden, not found) was not
// forwarded. Every kind's target reads answers by this one rule.
func Unreadable(status int, detail string) Receipt {
	switch {
	case status >= 500 && status < 600:
		return Receipt{Status: Unacked, Reason: "http_" + strconv.Itoa(status), Detail: detail}
	case status >= 200 && status < 300:
		return Receipt{Status: Unacked, Reason: "unreadable_answer", Detail: detail}
	}
	return Receipt{Status: Rejected, Reason: "http_" + strconv.Itoa(status), Detail: detail}
}
