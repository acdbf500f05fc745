package cometbft

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
)

// Sink is a stand-in CometBFT RPC endpoint that accepts every transaction at
// once and never commits one. It measures the load generator alone (its
// ceiling, its pacing) and lets tests stall the "node" on purpose. It answers
// status, broadcast_tx_sync/async, num_unconfirmed_txs and the ledger's
// abci_query paths /genesis and /account, as a fresh tpslab ledger would.
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
}

// NewSink answers as a ledger with the default genesis.
func NewSink(chainID string, g chain.Genesis) *Sink { return &Sink{ChainID: chainID, Genesis: g} }

type sinkRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Path string `json:"path"`
	} `json:"params"`
}

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req sinkRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not JSON-RPC", http.StatusBadRequest)
		return
	}
	var result string
	switch req.Method {
	case "broadcast_tx_sync", "broadcast_tx_async":
		if n := s.Received.Add(1); s.StallAfter > 0 && n == s.StallAfter {
			until := time.Now().Add(s.StallFor)
			s.StallUntil.Store(&until)
		}
		if until := s.StallUntil.Load(); until != nil {
			time.Sleep(time.Until(*until))
		}
		result = `{"code":0,"data":"","log":"","codespace":"","hash":"00"}`
	case "status":
		result = `{"node_info":{"protocol_version":{"p2p":"8","block":"11","app":"1"},"id":"0000000000000000000000000000000000000000","listen_addr":"","network":"` + s.ChainID +
			`","version":"sink","channels":"","moniker":"sink","other":{"tx_index":"off","rpc_address":""}},"sync_info":{"latest_block_hash":"","latest_app_hash":"","latest_block_height":"1","latest_block_time":"2026-01-01T00:00:00Z","earliest_block_hash":"","earliest_app_hash":"","earliest_block_height":"1","earliest_block_time":"2026-01-01T00:00:00Z","catching_up":false},"validator_info":{"address":"","pub_key":null,"voting_power":"0"}}`
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
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"Method not found","data":"` + strconv.Quote(req.Method)[1:]))
		w.Write([]byte(`}}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`))
}
