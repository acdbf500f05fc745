package evm

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/httpclient"
	"github.com/tpslab/tpslab/internal/targets/jsonrpc"
)

// batchSize is the most eth_sendRawTransaction calls one JSON-RPC batch
// carries: well under geth's and Cosmos EVM's default limit of 1000 calls
// per batch, and a few hundred KB per answer.
const batchSize = 100

type submitter struct {
	t     *Target
	pref  int
	body  []byte
	id    uint64
	conns *httpclient.Set // per http:// endpoint; with every one, batches are pipelined
	bufs  [][]byte        // batch bodies, reused
}

// Submitter returns submitter i, preferring endpoint i mod the count. It
// owns one lean keep-alive connection per http:// endpoint; https://
// endpoints go through net/http.
func (t *Target) Submitter(i int) sut.Submitter {
	s := &submitter{t: t, pref: i % len(t.clients), body: make([]byte, 0, 512), conns: httpclient.NewSet(t.o.Endpoints, t.http)}
	t.subMu.Lock()
	t.subs = append(t.subs, s.conns)
	t.subMu.Unlock()
	return s
}

// BatchLanes is one in-order lane per endpoint: geth (and Cosmos EVM, on
// geth's RPC server) runs a batch's calls in order, so a sender's nonces
// reach its pool in sequence.
func (t *Target) BatchLanes() int { return len(t.o.Endpoints) }

// AppendWire is how a transaction goes in eth_sendRawTransaction: hex
// (sut.Encoder).
func (t *Target) AppendWire(dst, tx []byte) []byte { return hex.AppendEncode(dst, tx) }

// appendSend appends an eth_sendRawTransaction request for tx to b.
func appendSend(b []byte, id uint64, tx sut.Tx) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":"eth_sendRawTransaction","params":["0x`...)
	b = sut.AppendWire(b, tx, (*Target)(nil)) // its encoding needs no target
	return append(b, `"]}`...)
}

// Submit posts eth_sendRawTransaction; the body is built into a reused
// buffer.
func (s *submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	s.id++
	s.body = appendSend(s.body[:0], s.id, tx)
	return s.t.pool.Send(ctx, s.pref, s.post)
}

func (s *submitter) post(ctx context.Context, i int) (sut.Receipt, error) {
	status, body, err := s.conns.Post(ctx, i, "application/json", s.body, s.t.o.Timeout)
	if err != nil {
		return sut.Receipt{}, err
	}
	return classify(status, body), nil
}

// SubmitBatch sends txs in order as JSON-RPC batches of at most batchSize
// calls, all POSTs pipelined in one write; out[k] is tx k's answer.
// Failover is the pool's, as for Submit.
func (s *submitter) SubmitBatch(ctx context.Context, txs []sut.Tx, out []sut.Receipt) {
	if len(txs) == 1 || !s.conns.All() {
		for k := range txs {
			out[k] = s.Submit(ctx, txs[k])
		}
		return
	}
	s.t.pool.SendMany(ctx, s.pref, out, func(ctx context.Context, i int) (int, error) {
		return s.postBatch(ctx, i, txs, out)
	})
}

// postBatch sends txs to endpoint i; n is how many answers were read
// before an error.
func (s *submitter) postBatch(ctx context.Context, i int, txs []sut.Tx, out []sut.Receipt) (n int, err error) {
	s.bufs = jsonrpc.AppendBatches(s.bufs, len(txs), batchSize, func(b []byte, k int) []byte {
		return appendSend(b, s.id+uint64(k)+1, txs[k])
	})
	base := s.id + 1
	s.id += uint64(len(txs))
	answered, err := s.conns.PostAll(ctx, i, "application/json", s.bufs, s.t.o.Timeout, func(j, status int, body []byte) {
		lo, hi := j*batchSize, min(len(txs), (j+1)*batchSize)
		classifyBatch(status, body, base+uint64(lo), out[lo:hi])
	})
	return min(answered*batchSize, len(txs)), err
}

// classifyBatch fills out from a batch's answer, each element by its id
// (base is the first's); an answer that is not an array (the batch refused
// whole) is every payment's answer.
func classifyBatch(status int, body []byte, base uint64, out []sut.Receipt) {
	for k := range out {
		out[k] = sut.Receipt{Status: sut.Unacked, Reason: "no_answer", Detail: "the batch's answer had no element for it"}
	}
	if !jsonrpc.EachAnswer(body, base, len(out), func(k int, v []byte, a jsonrpc.Answer) {
		out[k] = classifyAnswer(status, v, a)
	}) {
		r := classify(status, body)
		if r.Status == sut.Pending {
			// One result for many calls is no answer to any of them.
			r = sut.Receipt{Status: sut.Unacked, Reason: "no_answer", Detail: "the batch was answered with one object: " + clip(string(body), 200)}
		}
		for k := range out {
			out[k] = r
		}
	}
}

// classify turns an eth_sendRawTransaction answer into a receipt.
func classify(status int, body []byte) sut.Receipt {
	a, _ := jsonrpc.ParseAnswer(body)
	return classifyAnswer(status, body, a)
}

// classifyAnswer reads an answer's parts: a result (the transaction's
// hash) is an acceptance, read without allocating; an error is decoded
// and named. A node that already holds the same transaction ("already
// known") has it: that is an acceptance too.
func classifyAnswer(status int, body []byte, a jsonrpc.Answer) sut.Receipt {
	if len(a.Err) > 0 && a.Err[0] == '{' {
		var re rpcError
		if json.Unmarshal(a.Err, &re) == nil {
			r := Reason(re.Message)
			if r == "already_known" {
				return sut.Receipt{Status: sut.Pending, Detail: re.Message}
			}
			return sut.Receipt{Status: sut.Rejected, Reason: r, Detail: re.Message}
		}
	}
	if len(a.Result) > 0 && a.Result[0] == '"' {
		return sut.Receipt{Status: sut.Pending}
	}
	return sut.Unreadable(status, clip(string(body), 200)) // a gateway may have forwarded it
}
