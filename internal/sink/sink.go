// Package sink is a stand-in CometBFT RPC endpoint for measuring tpslab itself.
package sink

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
)

// Sink is a stand-in CometBFT RPC endpoint that accepts every transaction at
// once and never commits one: its chain makes an empty block every second.
// It measures the load generator alone (its ceiling, its pacing) and lets
// tests stall the "node" on purpose. It answers status, block,
// block_results, broadcast_tx_sync/async, num_unconfirmed_txs and the
// ledger's abci_query paths /genesis and /account, as a fresh tpslab ledger
// would.
type Sink struct {
	ChainID  string
	Genesis  chain.Genesis
	Received atomic.Int64
	// StallUntil, when set, holds every broadcast until that time.
	StallUntil atomic.Pointer[time.Time]
	// StallAfter and StallFor stall every broadcast for StallFor once the
	// StallAfter-th one arrives (a node pausing, for tests).
	StallAfter int64
	StallFor   time.Duration
	// CheckTx, when set, is how long each broadcast takes, one at a time
	// (a node whose mempool checks payments serially); ServeHTTP only.
	CheckTx time.Duration
	// Latency, when set, delays every answer, all in parallel (a far
	// node: its answers take long, its capacity is not the limit);
	// ServeHTTP only.
	Latency time.Duration
	checkMu sync.Mutex
	start   time.Time
}

// check spends CheckTx on each of n broadcasts, one request at a time.
func (s *Sink) check(n int) {
	if s.CheckTx <= 0 || n == 0 {
		return
	}
	s.checkMu.Lock()
	time.Sleep(time.Duration(n) * s.CheckTx)
	s.checkMu.Unlock()
}

// NewSink answers as a ledger with genesis g.
func NewSink(chainID string, g chain.Genesis) *Sink {
	return &Sink{ChainID: chainID, Genesis: g, start: time.Now()}
}

// height is the sink chain's latest height: one empty block a second.
func (s *Sink) height() int64 { return 1 + int64(time.Since(s.start)/time.Second) }

func (s *Sink) blockTime(h int64) string {
	return s.start.Add(time.Duration(h-1) * time.Second).UTC().Format(time.RFC3339Nano)
}

type sinkRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Path   string `json:"path"`
		Height string `json:"height"`
	} `json:"params"`
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(s.Latency)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var out []byte
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) { // a JSON-RPC batch
		var reqs []json.RawMessage
		if err := json.Unmarshal(body, &reqs); err != nil {
			http.Error(w, "not JSON-RPC", http.StatusBadRequest)
			return
		}
		out = append(out, '[')
		for k, req := range reqs {
			if k > 0 {
				out = append(out, ',')
			}
			a, ok := s.answer(req)
			if !ok {
				http.Error(w, "not JSON-RPC", http.StatusBadRequest)
				return
			}
			out = append(out, a...)
		}
		out = append(out, ']')
		s.check(bytes.Count(body, []byte(`"broadcast_tx_`)))
	} else {
		a, ok := s.answer(body)
		if !ok {
			http.Error(w, "not JSON-RPC (the sink has no WebSocket)", http.StatusBadRequest)
			return
		}
		out = a
		s.check(bytes.Count(body, []byte(`"broadcast_tx_`)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// answer is the JSON-RPC answer to one request; ok is false when body is
// not one.
func (s *Sink) answer(body []byte) (_ []byte, ok bool) {
	var req sinkRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, false
	}
	var result string
	switch req.Method {
	case "broadcast_tx_sync", "broadcast_tx_async":
		s.received()
		result = `{"code":0,"data":"","log":"","codespace":"","hash":"00"}`
	case "status":
		h := s.height()
		result = `{"node_info":{"protocol_version":{"p2p":"8","block":"11","app":"1"},"id":"0000000000000000000000000000000000000000","listen_addr":"","network":"` + s.ChainID +
			`","version":"sink","channels":"","moniker":"sink","other":{"tx_index":"off","rpc_address":""}},"sync_info":{"latest_block_hash":"","latest_app_hash":"","latest_block_height":"` +
			strconv.FormatInt(h, 10) + `","latest_block_time":"` + s.blockTime(h) + `","earliest_block_hash":"","earliest_app_hash":"","earliest_block_height":"1","earliest_block_time":"` +
			s.blockTime(1) + `","catching_up":false},"validator_info":{"address":"","pub_key":null,"voting_power":"0"}}`
	case "block":
		h, err := strconv.ParseInt(req.Params.Height, 10, 64)
		if err != nil || h < 1 || h > s.height() {
			return fail(req.ID, "height must be between 1 and the latest height"), true
		}
		result = `{"block_id":{},"block":{"header":{"height":"` + req.Params.Height + `","time":"` + s.blockTime(h) + `"},"data":{"txs":[]}}}`
	case "block_results":
		result = `{"height":"` + req.Params.Height + `","txs_results":null}`
	case "num_unconfirmed_txs":
		result = `{"n_txs":"0","total":"0","total_bytes":"0","txs":null}`
	case "abci_query":
		var v any = chain.AccountInfo{}
		if req.Params.Path == "/genesis" {
			v = s.Genesis
		}
		b, _ := json.Marshal(v)
		result = `{"response":{"code":0,"log":"","info":"","index":"0","key":null,"value":"` + base64.StdEncoding.EncodeToString(b) + `","proofOps":null,"height":"1","codespace":""}}`
	default:
		return fail(req.ID, "Method not found: "+req.Method), true
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`), true
}

func fail(id json.RawMessage, msg string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32603,"message":"Internal error","data":` + strconv.Quote(msg) + `}}`)
}
