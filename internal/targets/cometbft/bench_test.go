package cometbft

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// BenchmarkEncodeBroadcast is the request encoder on the hot path: it must
// not allocate. A live payment's bytes are encoded as it goes; a presigned
// one's were encoded ahead (Tx.Wire).
func BenchmarkEncodeBroadcast(b *testing.B) {
	live := sut.Tx{Bytes: make([]byte, 140)}
	presigned := live
	presigned.Wire = (&Target{}).AppendWire(nil, live.Bytes)
	for _, c := range []struct {
		name string
		tx   sut.Tx
	}{{"live", live}, {"presigned", presigned}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf = appendBroadcast(buf[:0], uint64(i), "broadcast_tx_sync", c.tx)
			}
		})
	}
}

// A presigned payment's body is the body its bytes make when encoded as
// it goes.
func TestEncodedAheadIsTheSameBody(t *testing.T) {
	live := sut.Tx{Bytes: []byte("a payment's signed bytes \x00\xff")}
	presigned := live
	presigned.Wire = (&Target{}).AppendWire(nil, live.Bytes)
	if a, b := appendBroadcast(nil, 7, "broadcast_tx_sync", live), appendBroadcast(nil, 7, "broadcast_tx_sync", presigned); string(a) != string(b) {
		t.Fatalf("encoded ahead %s, as it goes %s", b, a)
	}
}

// newBlockJSON is a NewBlock event as CometBFT 0.38 sends it, with n
// transactions whose results carry events (which tpslab skips).
func newBlockJSON(n int) []byte {
	var txs, res []string
	for i := 0; i < n; i++ {
		txs = append(txs, `"`+base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("k%07d=v%0130d", i, i)))+`"`)
		res = append(res, `{"code":0,"data":null,"log":"","info":"","gas_wanted":"0","gas_used":"`+fmt.Sprint(1000+i)+`","events":[{"type":"app","attributes":[{"key":"creator","value":"Cosmoshi Netowoko","index":true},{"key":"key","value":"k`+fmt.Sprint(i)+`","index":true},{"key":"index_key","value":"index is working","index":true},{"key":"noindex_key","value":"index is working","index":false}]}],"codespace":""}`)
	}
	return []byte(`{"jsonrpc":"2.0","id":1,"result":{"query":"tm.event='NewBlock'","data":{"type":"tendermint/event/NewBlock","value":{"block":{"header":{"version":{"block":"11"},"chain_id":"c","height":"42","time":"2026-11-22T10:00:00.123456789Z","last_block_id":{"hash":"","parts":{"total":0,"hash":""}},"proposer_address":"AB"},"data":{"txs":[` +
		strings.Join(txs, ",") + `]},"evidence":{"evidence":[]},"last_commit":{"height":"41","round":0,"signatures":[]}},"block_id":{"hash":"","parts":{"total":1,"hash":""}},"result_finalize_block":{"events":[],"tx_results":[` +
		strings.Join(res, ",") + `],"validator_updates":[],"app_hash":""}}},"events":{}}}`)
}

// newBlockEvent is the event read with encoding/json into lean structs:
// the reference the decoder is checked and measured against.
type newBlockEvent struct {
	Error  *rpcError `json:"error"`
	Result struct {
		Data struct {
			Value struct {
				Block  *RawBlock `json:"block"`
				Result struct {
					TxResults []ExecResult `json:"tx_results"`
				} `json:"result_finalize_block"`
			} `json:"value"`
		} `json:"data"`
	} `json:"result"`
}

// The decoder reads what encoding/json reads, codes and failures included.
func TestDecodeNewBlock(t *testing.T) {
	msg := newBlockJSON(50)
	msg = []byte(strings.Replace(string(msg), `{"code":0,"data":null,"log":"","info":""`, `{"code":5,"data":null,"log":"insufficient \"funds\" \\","info":""`, 1))
	msg = []byte(strings.Replace(string(msg), `"codespace":""}`, `"codespace":"bank"}`, 1))
	var indented bytes.Buffer
	if err := json.Indent(&indented, msg, "", "  "); err != nil {
		t.Fatal(err)
	}
	var d eventDecoder
	// Compact as CometBFT writes it, and indented: whitespace anywhere.
	for round, msg := range [][]byte{msg, msg, indented.Bytes()} { // buffers reused
		var want newBlockEvent
		if err := json.Unmarshal(msg, &want); err != nil {
			t.Fatal(err)
		}
		b, res, err := d.decode(msg)
		if err != nil {
			t.Fatal(round, err)
		}
		wb := want.Result.Data.Value.Block
		if b.Header.Height != wb.Header.Height || !b.Header.Time.Equal(wb.Header.Time) || len(b.Data.Txs) != len(wb.Data.Txs) {
			t.Fatalf("header %+v / %d txs, want %+v / %d", b.Header, len(b.Data.Txs), wb.Header, len(wb.Data.Txs))
		}
		for i := range b.Data.Txs {
			if string(b.Data.Txs[i]) != string(wb.Data.Txs[i]) {
				t.Fatalf("tx %d: %q, want %q", i, b.Data.Txs[i], wb.Data.Txs[i])
			}
		}
		wr := want.Result.Data.Value.Result.TxResults
		if len(res) != len(wr) || res[0] != (ExecResult{Code: 5, Codespace: "bank", Log: `insufficient "funds" \`, GasUsed: 1000}) || res[0] != wr[0] || res[1] != (ExecResult{GasUsed: 1001}) || res[1] != wr[1] {
			t.Fatalf("round %d: results %+v, want %+v", round, res[:2], wr[:2])
		}
	}
	if b, _, err := d.decode([]byte(`{"jsonrpc":"2.0","id":1,"result":{"query":"q","data":{"type":"t","value":{"block":{"header":{"height":"3","time":"2026-11-22T10:00:00Z"},"data":{"txs":null}},"result_finalize_block":{"tx_results":null}}}}}`)); err != nil || b == nil || b.Header.Height != 3 || len(b.Data.Txs) != 0 {
		t.Errorf("an empty block: %+v %v", b, err)
	}
	if b, _, err := d.decode([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); b != nil || err != nil {
		t.Errorf("the subscription's confirmation: %v %v", b, err)
	}
	if _, _, err := d.decode([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Server error","data":"subscription was cancelled"}}`)); err == nil || !strings.Contains(err.Error(), "subscription was cancelled") {
		t.Errorf("an error event: %v", err)
	}
}

// BenchmarkDecodeNewBlock is the block decoder's cost per transaction: a
// NewBlock event of 1000 transactions with events on every result.
func BenchmarkDecodeNewBlock(b *testing.B) {
	msg := newBlockJSON(1000)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	var d eventDecoder
	for i := 0; i < b.N; i++ {
		blk, _, err := d.decode(msg)
		if err != nil || len(blk.Data.Txs) != 1000 {
			b.Fatal("txs lost", err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/tx")
}

// BenchmarkDecodeNewBlockEncodingJSON is the same with encoding/json, for
// the ratio.
func BenchmarkDecodeNewBlockEncodingJSON(b *testing.B) {
	msg := newBlockJSON(1000)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var e newBlockEvent
		if err := json.Unmarshal(msg, &e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/tx")
}
