package cometbft

import (
	"context"
	"github.com/tpslab/tpslab/internal/targets/jsonrpc"
	"regexp"
	"strconv"

	"github.com/tpslab/tpslab/internal/sut"
)

// defaultBatch is CometBFT's default rpc.max_request_batch_size: the most
// requests one JSON-RPC batch may carry. A node configured lower says so,
// and the batch size follows it.
const defaultBatch = 10

var batchLimit = regexp.MustCompile(`batch request exceeds maximum \((\d+)\)`)

// BatchLanes is one in-order lane per endpoint: each lane's submitter
// sends its payments as JSON-RPC batches on one keep-alive connection.
func (t *Target) BatchLanes() int { return len(t.o.Endpoints) }

// SubmitBatch sends txs in order as JSON-RPC batches of broadcast_tx_*
// (at most the node's batch size each), all POSTs pipelined in one write;
// out[k] is tx k's answer. Failover is the pool's, as for Submit: a
// connection that cannot be made moves the whole batch to the next live
// endpoint.
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
// before an error. A node that allows smaller batches than were sent
// refuses the batch whole (nothing reached its mempool): the batch size
// follows the node's limit and the batch is sent again once.
func (s *submitter) postBatch(ctx context.Context, i int, txs []sut.Tx, out []sut.Receipt) (n int, err error) {
	for again := 0; ; again++ {
		size := int(s.t.batch.Load())
		s.bufs = jsonrpc.AppendBatches(s.bufs, len(txs), size, func(b []byte, k int) []byte {
			return appendBroadcast(b, s.id+uint64(k)+1, s.t.method, txs[k])
		})
		base := s.id + 1
		s.id += uint64(len(txs))
		limited := 0
		answered, err := s.conns.PostAll(ctx, i, "application/json", s.bufs, s.t.o.Timeout, func(j, status int, body []byte) {
			lo, hi := j*size, min(len(txs), (j+1)*size)
			if !s.t.classifyBatch(status, body, base+uint64(lo), out[lo:hi]) {
				if m := batchLimit.FindSubmatch(body); m != nil {
					limited, _ = strconv.Atoi(string(m[1]))
				}
			}
		})
		if limited > 0 && limited < size && again == 0 {
			s.t.batch.Store(int32(limited))
			continue
		}
		return min(answered*size, len(txs)), err
	}
}

// classifyBatch fills out from a batch's answer, each element by its id
// (base is the first's); an answer that is not an array (the batch refused
// whole) is every payment's answer, and ok is false.
func (t *Target) classifyBatch(status int, body []byte, base uint64, out []sut.Receipt) (ok bool) {
	for k := range out {
		out[k] = sut.Receipt{Status: sut.Unacked, Reason: "no_answer", Detail: "the batch's answer had no element for it"}
	}
	if !jsonrpc.EachAnswer(body, base, len(out), func(k int, v []byte, a jsonrpc.Answer) {
		out[k] = t.classifyAnswer(status, v, a)
	}) {
		r := t.classify(status, body)
		for k := range out {
			out[k] = r
		}
		return false
	}
	return true
}
