package cometbft

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

func TestClassifyNodeAnswers(t *testing.T) {
	tg, _ := New(Options{Endpoints: []string{"http://127.0.0.1:1"}, Reason: func(space string, code uint32, log string) string {
		return space + "/" + log
	}})
	for _, c := range []struct {
		status int
		body   string
		want   sut.Receipt
	}{
		{200, `{"result":{"code":0,"log":""}}`, sut.Receipt{Status: sut.Pending}},
		{200, `{"result":{"code":4,"codespace":"tpslab","log":"sequence too low"}}`, sut.Receipt{Status: sut.Rejected, Reason: "tpslab/sequence too low", Detail: "sequence too low"}},
		{200, `{"error":{"code":-32603,"message":"Internal error","data":"mempool is full: number of txs 5000 (max: 5000)"}}`, sut.Receipt{Status: sut.Rejected, Reason: "mempool_full"}},
		{200, `{"error":{"code":-32603,"message":"Internal error","data":"tx already exists in cache"}}`, sut.Receipt{Status: sut.Rejected, Reason: "duplicate"}},
		{200, `{"error":{"code":-32603,"message":"Internal error","data":"Tx too large. Max size is 1048576, but got 2000000"}}`, sut.Receipt{Status: sut.Rejected, Reason: "tx_too_large"}},
		{200, `{"error":{"code":-32601,"message":"Method not found"}}`, sut.Receipt{Status: sut.Rejected, Reason: "rpc_error"}},
		// A gateway may have forwarded what it answers 502, 504 or an
		// unreadable 200 for (issue 23): tracked, not refused.
		{502, `<html>bad gateway</html>`, sut.Receipt{Status: sut.Unacked, Reason: "http_502"}},
		{504, `<html>gateway timeout</html>`, sut.Receipt{Status: sut.Unacked, Reason: "http_504"}},
		// Any 5xx, a 500 after forwarding included (issue 34, case 3).
		{500, `<html>internal server error</html>`, sut.Receipt{Status: sut.Unacked, Reason: "http_500"}},
		{503, `<html>service unavailable</html>`, sut.Receipt{Status: sut.Unacked, Reason: "http_503"}},
		{429, `<html>too many requests</html>`, sut.Receipt{Status: sut.Rejected, Reason: "http_429"}},
		{200, `{"jsonrpc":"2.0"}`, sut.Receipt{Status: sut.Unacked, Reason: "unreadable_answer"}},
		{200, `{"jsonrpc":"2.0","id":7,"result":{"code":0,"data":"","log":"[]","codespace":"","hash":"AB"}}`, sut.Receipt{Status: sut.Pending}},
		{200, ` { "result" : { "log" : "got \"9\"", "codespace" : "tpslab", "code" : 5 } } `, sut.Receipt{Status: sut.Rejected, Reason: `tpslab/got "9"`, Detail: `got "9"`}},
		{200, `{"result":{"code":12,"codespace":"sdk","log":"out of gas"},"id":3}`, sut.Receipt{Status: sut.Rejected, Reason: "sdk/out of gas"}},
		{200, `{"result":"ok"}`, sut.Receipt{Status: sut.Unacked, Reason: "unreadable_answer"}},
		{200, `{"result":{"code":0`, sut.Receipt{Status: sut.Unacked, Reason: "unreadable_answer"}},
	} {
		got := tg.classify(c.status, []byte(c.body))
		if got.Status != c.want.Status || got.Reason != c.want.Reason || c.want.Detail != "" && got.Detail != c.want.Detail {
			t.Errorf("%d %s: %+v, want %+v", c.status, c.body, got, c.want)
		}
	}
}

// A refused connection moves the same bytes to the next endpoint and marks
// the first down; a connection that breaks after the request left leaves
// the payment's fate unknown (unacked), and is never retried elsewhere.
func TestSubmitFailsOver(t *testing.T) {
	var got atomic.Int32
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"code":0}}`))
	}))
	defer live.Close()
	breaks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
	}))
	defer breaks.Close()
	dead := "http://127.0.0.1:1"
	tg, _ := New(Options{Endpoints: []string{dead, live.URL, breaks.URL}, Connections: 1})
	r := tg.Submitter(0).Submit(context.Background(), sut.Tx{Bytes: []byte("x")})
	if r.Status != sut.Pending || r.Endpoint != 1 || int(got.Load()) != 1 {
		t.Fatalf("failover: %+v after %d deliveries", r, int(got.Load()))
	}
	st := tg.EndpointStats()
	if st[0].Up || st[0].Failovers != 1 || st[1].Accepted != 1 {
		t.Errorf("stats %+v", st)
	}
	r = tg.Submitter(2).Submit(context.Background(), sut.Tx{Bytes: []byte("y")})
	if r.Status != sut.Unacked || r.Endpoint != 2 || int(got.Load()) != 1 {
		t.Fatalf("broken exchange: %+v, deliveries %d", r, int(got.Load()))
	}
	if st := tg.EndpointStats(); st[2].Up || st[2].Unacked != 1 {
		t.Errorf("broken endpoint: %+v", st[2])
	}
}

// A batch goes as JSON-RPC batches, each payment answered by its id; a node
// that allows fewer per batch refuses the batch whole, as CometBFT does,
// and the submitter sends it again in batches of the node's size.
func TestSubmitBatch(t *testing.T) {
	var posts, elements atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		var reqs []struct {
			ID     int64 `json:"id"`
			Params struct {
				Tx []byte `json:"tx"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&reqs); err != nil {
			t.Errorf("not a batch: %v", err)
		}
		if len(reqs) > 3 {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":-1,"error":{"code":-32600,"message":"Invalid Request","data":"batch request exceeds maximum (3) "}}`)
			return
		}
		elements.Add(int32(len(reqs)))
		var out []string
		for k := len(reqs) - 1; k >= 0; k-- { // answered out of order: ids match them
			code := 0
			if string(reqs[k].Params.Tx) == "tx-4" {
				code = 4
			}
			out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"code":%d,"log":"l","codespace":"s"}}`, reqs[k].ID, code))
		}
		fmt.Fprintf(w, "[%s]", strings.Join(out, ","))
	}))
	defer srv.Close()
	tg, _ := New(Options{Endpoints: []string{srv.URL}})
	defer tg.Close()
	if tg.BatchLanes() != 1 {
		t.Fatalf("lanes %d", tg.BatchLanes())
	}
	bs := tg.Submitter(0).(sut.BatchSubmitter)
	txs := make([]sut.Tx, 8)
	for k := range txs {
		txs[k] = sut.Tx{Bytes: []byte(fmt.Sprintf("tx-%d", k))}
	}
	out := make([]sut.Receipt, len(txs))
	bs.SubmitBatch(context.Background(), txs, out)
	for k, r := range out {
		want := sut.Pending
		if k == 4 {
			want = sut.Rejected
		}
		if r.Status != want || k == 4 && r.Reason != "s_4" {
			t.Errorf("tx %d: %+v, want %v", k, r, want)
		}
	}
	// One refused POST of 8 (it reached no mempool), then 3 of at most 3.
	if posts.Load() != 4 || elements.Load() != 8 || tg.batch.Load() != 3 {
		t.Errorf("%d posts, %d elements, batch size %d", posts.Load(), elements.Load(), tg.batch.Load())
	}
}

// BenchmarkClassifyBatch reads a node's answer to a batch of ten accepted
// payments (the lane's hot path): it should not allocate.
func BenchmarkClassifyBatch(b *testing.B) {
	tg, _ := New(Options{Endpoints: []string{"http://127.0.0.1:1"}})
	var body []byte
	body = append(body, '[')
	for k := 0; k < 10; k++ {
		if k > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"jsonrpc":"2.0","id":%d,"result":{"code":0,"data":"","log":"","codespace":"","hash":"%064X"}}`, 101+k, k)
	}
	body = append(body, ']')
	out := make([]sut.Receipt, 10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		tg.classifyBatch(200, body, 101, out)
	}
	if out[9].Status != sut.Pending {
		b.Fatalf("answer 9: %+v", out[9])
	}
}
