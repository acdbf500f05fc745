package cometbft

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/targets/jsonrpc"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/httpclient"
)

type submitter struct {
	t     *Target
	pref  int
	body  []byte
	id    uint64
	conns *httpclient.Set // per http:// endpoint; with every one, batches are pipelined
	bufs  [][]byte        // batch bodies, reused
}

// Submitter returns submitter i, which prefers endpoint i mod the endpoint
// count and moves to the next live one when that one is down. It owns one
// lean keep-alive connection per http:// endpoint (the hot path);
// https:// endpoints go through net/http.
func (t *Target) Submitter(i int) sut.Submitter {
	s := &submitter{t: t, pref: i % len(t.o.Endpoints), body: make([]byte, 0, 1024), conns: httpclient.NewSet(t.o.Endpoints, t.http)}
	t.subMu.Lock()
	t.subs = append(t.subs, s.conns)
	t.subMu.Unlock()
	return s
}

// Submit posts one transaction. The JSON-RPC body is built into a reused
// buffer: this is the load generator's hot path. A connection that cannot
// be made marks the endpoint down and the same bytes go to the next live
// endpoint (they never reached a node, so nothing is duplicated).
func (s *submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	s.id++
	s.body = appendBroadcast(s.body[:0], s.id, s.t.method, tx)
	return s.t.pool.Send(ctx, s.pref, s.post)
}

// AppendWire is how a transaction goes in a broadcast: base64 (sut.Encoder).
func (t *Target) AppendWire(dst, tx []byte) []byte { return base64.StdEncoding.AppendEncode(dst, tx) }

// appendBroadcast appends a JSON-RPC broadcast_tx_* request for tx to b.
func appendBroadcast(b []byte, id uint64, method string, tx sut.Tx) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":{"tx":"`...)
	b = sut.AppendWire(b, tx, (*Target)(nil)) // its encoding needs no target
	return append(b, `"}}`...)
}

func (s *submitter) post(ctx context.Context, i int) (sut.Receipt, error) {
	status, body, err := s.conns.Post(ctx, i, "application/json", s.body, s.t.o.Timeout)
	if err != nil {
		return sut.Receipt{}, err
	}
	return s.t.classify(status, body), nil
}

// classify turns an RPC answer into a receipt; rejections by the
// application are named by the Reason function, CometBFT's own mempool
// errors by name. An accepted payment's answer is read by the hand walk
// (decode.go) without allocating; only rejections are decoded whole.
func (t *Target) classify(status int, body []byte) sut.Receipt {
	a, _ := jsonrpc.ParseAnswer(body)
	return t.classifyAnswer(status, body, a)
}

// unreadable is the answer to a body that carries no usable result (a
// proxy's error page, a result of another shape): sut.Unreadable's rule.
func unreadable(status int, body []byte) sut.Receipt {
	return sut.Unreadable(status, clip(body, 200))
}

func (t *Target) classifyAnswer(status int, body []byte, a jsonrpc.Answer) sut.Receipt {
	if len(a.Err) > 0 && a.Err[0] == '{' {
		var re rpcError
		_ = json.Unmarshal(a.Err, &re)
		d := re.Data
		switch {
		case strings.Contains(d, "mempool is full"):
			return sut.Receipt{Status: sut.Rejected, Reason: "mempool_full", Detail: d}
		case strings.Contains(d, "already exists in cache"):
			return sut.Receipt{Status: sut.Rejected, Reason: "duplicate", Detail: d}
		case strings.Contains(d, "Tx too large"):
			return sut.Receipt{Status: sut.Rejected, Reason: "tx_too_large", Detail: d}
		}
		return sut.Receipt{Status: sut.Rejected, Reason: "rpc_error", Detail: re.Error()}
	}
	if len(a.Result) == 0 || a.Result[0] != '{' {
		return unreadable(status, body)
	}
	if c, ok := leadingCode(a.Result); ok && c == 0 {
		return sut.Receipt{Status: sut.Pending} // accepted: nothing else in it is needed (no gas in CheckTx's answer)
	}
	res, ok := readResult(a.Result)
	if !ok {
		return unreadable(status, body)
	}
	if res.Code != 0 {
		return sut.Receipt{Status: sut.Rejected, Reason: t.o.Reason(res.Codespace, res.Code, res.Log), Detail: res.Log}
	}
	return sut.Receipt{Status: sut.Pending}
}
