package cometbft

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/target"
)

type submitter struct {
	t    *Target
	pref int
	body []byte
	resp bytes.Buffer
	rd   bytes.Reader
	id   uint64
}

// Submitter returns submitter i, which prefers endpoint i mod the endpoint
// count and moves to the next live one when that one is down.
func (t *Target) Submitter(i int) target.Submitter {
	return &submitter{t: t, pref: i % len(t.o.Endpoints), body: make([]byte, 0, 1024)}
}

// broadcastAnswer is a JSON-RPC answer to broadcast_tx_*.
type broadcastAnswer struct {
	Result *struct {
		Code      uint32 `json:"code"`
		Log       string `json:"log"`
		Codespace string `json:"codespace"`
	} `json:"result"`
	Error *rpcError `json:"error"`
}

// Submit posts one transaction. The JSON-RPC body is built into a reused
// buffer: this is the load generator's hot path. A connection that cannot
// be made marks the endpoint down and the same bytes go to the next live
// endpoint (they never reached a node, so nothing is duplicated).
func (s *submitter) Submit(ctx context.Context, tx target.Tx) target.Receipt {
	s.id++
	b := append(s.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, s.id, 10)
	b = append(b, `,"method":"`...)
	b = append(b, s.t.method...)
	b = append(b, `","params":{"tx":"`...)
	b = base64.StdEncoding.AppendEncode(b, tx.Bytes)
	b = append(b, `"}}`...)
	s.body = b
	return s.t.pool.Send(ctx, s.pref, s.post)
}

func (s *submitter) post(ctx context.Context, i int) (target.Receipt, error) {
	c := s.t.clients[i]
	s.rd.Reset(s.body)
	sctx, cancel := context.WithTimeout(ctx, s.t.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, c.URL, &s.rd)
	if err != nil {
		return target.Receipt{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.t.http.Do(req)
	if err != nil {
		return target.Receipt{}, err
	}
	s.resp.Reset()
	_, err = s.resp.ReadFrom(res.Body)
	res.Body.Close()
	if err != nil {
		return target.Receipt{}, err
	}
	return s.t.classify(res.StatusCode, s.resp.Bytes()), nil
}

// classify turns an RPC answer into a receipt; rejections by the
// application are named by the Reason function, CometBFT's own mempool
// errors by name.
func (t *Target) classify(status int, body []byte) target.Receipt {
	var a broadcastAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return target.Receipt{Status: target.Rejected, Reason: "http_" + strconv.Itoa(status), Detail: clip(body, 200)}
	}
	if a.Error != nil {
		d := a.Error.Data
		switch {
		case strings.Contains(d, "mempool is full"):
			return target.Receipt{Status: target.Rejected, Reason: "mempool_full", Detail: d}
		case strings.Contains(d, "already exists in cache"):
			return target.Receipt{Status: target.Rejected, Reason: "duplicate", Detail: d}
		case strings.Contains(d, "Tx too large"):
			return target.Receipt{Status: target.Rejected, Reason: "tx_too_large", Detail: d}
		}
		return target.Receipt{Status: target.Rejected, Reason: "rpc_error", Detail: a.Error.Error()}
	}
	if a.Result == nil {
		return target.Receipt{Status: target.Rejected, Reason: "rpc_error", Detail: clip(body, 200)}
	}
	if a.Result.Code != 0 {
		return target.Receipt{Status: target.Rejected, Reason: t.o.Reason(a.Result.Codespace, a.Result.Code, a.Result.Log), Detail: a.Result.Log}
	}
	return target.Receipt{Status: target.Pending}
}
