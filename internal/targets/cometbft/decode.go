package cometbft

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/tpslab/tpslab/internal/targets/jsonrpc"
	"slices"
	"strconv"
	"time"
)

// eventDecoder reads the NewBlock events of a subscription: the height,
// time and transactions of the block and each transaction's code (and,
// when it failed, codespace and log). encoding/json would scan and check
// every event of every transaction result, which tpslab never reads; the
// walk below skips them without allocating (a failed result alone is
// decoded whole), and the decoder reuses its buffers from block to block
// (this is the confirmer's hot path).
type eventDecoder struct {
	blk  RawBlock
	res  []ExecResult
	txs  []byte // backing bytes of blk.Data.Txs
	offs []int
}

// decode reads msg; block is nil for a message without a block (the
// subscription's confirmation). The block and results are valid until the
// next call.
func (d *eventDecoder) decode(msg []byte) (block *RawBlock, results []ExecResult, err error) {
	result, ok := jsonrpc.Lookup(msg, "result")
	if !ok {
		if raw, ok := jsonrpc.Lookup(msg, "error"); ok && raw[0] == '{' {
			raw = raw[:jsonrpc.ValueEnd(raw)]
			var re rpcError
			if err := json.Unmarshal(raw, &re); err != nil {
				return nil, nil, fmt.Errorf("NewBlock event: error %s", clip(raw, 200))
			}
			return nil, nil, &re
		}
		return nil, nil, nil
	}
	value, ok := jsonrpc.Lookup(result, "data", "value")
	if !ok || value[0] != '{' {
		return nil, nil, nil
	}
	blockJSON, ok := jsonrpc.Lookup(value, "block")
	if !ok {
		return nil, nil, nil
	}
	hs, ok := jsonrpc.Str(jsonrpc.Lookup(blockJSON, "header", "height"))
	if !ok {
		return nil, nil, fmt.Errorf("NewBlock event: no header height")
	}
	h, err := strconv.ParseInt(hs, 10, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: height %q", hs)
	}
	ts, ok := jsonrpc.Str(jsonrpc.Lookup(blockJSON, "header", "time"))
	if !ok {
		return nil, nil, fmt.Errorf("NewBlock event: no header time")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: time %q", ts)
	}
	d.blk.Header.Height, d.blk.Header.Time = Int64(h), t
	d.blk.Header.DataHash, _ = jsonrpc.Str(jsonrpc.Lookup(blockJSON, "header", "data_hash"))
	d.blk.Data.Txs = d.blk.Data.Txs[:0]
	d.txs = d.txs[:0]
	d.offs = d.offs[:0]
	var derr error
	err = nil
	if txsJSON, ok := jsonrpc.Lookup(blockJSON, "data", "txs"); ok && txsJSON[0] != 'n' { // null: none
		err = jsonrpc.EachElement(txsJSON, func(v []byte) {
			if len(v) < 2 || v[0] != '"' {
				derr = fmt.Errorf("NewBlock event: a transaction is not a string: %s", clip(v, 40))
				return
			}
			v = v[1 : len(v)-1]
			start, need := len(d.txs), base64.StdEncoding.DecodedLen(len(v))
			d.txs = slices.Grow(d.txs, need)[:start+need]
			n, e := base64.StdEncoding.Decode(d.txs[start:], v)
			if e != nil && derr == nil {
				derr = fmt.Errorf("NewBlock event: a transaction is not base64: %w", e)
			}
			d.txs = d.txs[:start+n]
			d.offs = append(d.offs, start, start+n)
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: txs: %w", err)
	}
	if derr != nil {
		return nil, nil, derr
	}
	// Slices into d.txs are taken only once it stopped growing.
	for i := 0; i < len(d.offs); i += 2 {
		d.blk.Data.Txs = append(d.blk.Data.Txs, d.txs[d.offs[i]:d.offs[i+1]:d.offs[i+1]])
	}
	d.res = d.res[:0]
	if resJSON, ok := jsonrpc.Lookup(value, "result_finalize_block", "tx_results"); ok && resJSON[0] != 'n' {
		err = jsonrpc.EachElement(resJSON, func(v []byte) {
			r, _ := readResult(v)
			d.res = append(d.res, r)
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: tx_results: %w", err)
	}
	return &d.blk, d.res, nil
}

// readResult reads a transaction result v (one whole JSON value): its code
// and, when it failed, its codespace and log. CometBFT writes the code
// first, so a success is read from its first bytes without allocating;
// anything else is decoded whole. ok is false when v does not decode.
func readResult(v []byte) (ExecResult, bool) {
	if c, ok := leadingCode(v); ok && c == 0 {
		return ExecResult{GasUsed: Int64(gasUsed(v))}, true
	}
	var r ExecResult // escapes to the heap: only on this path
	err := json.Unmarshal(v, &r)
	return r, err == nil
}

// gasUsed reads "gas_used":"N" from a result without decoding it; CometBFT
// writes it before the events, so the search stops early. 0 when absent.
func gasUsed(v []byte) uint64 {
	const key = `"gas_used":"`
	i := bytes.Index(v, []byte(key))
	if i < 0 {
		return 0
	}
	n, _ := jsonrpc.LeadingUint(v[i+len(key):])
	return n
}

// leadingCode reads a result code written first, as CometBFT writes it:
// {"code":N,...}.
func leadingCode(v []byte) (uint32, bool) {
	const pre = `{"code":`
	if !bytes.HasPrefix(v, []byte(pre)) {
		return 0, false
	}
	c, d := jsonrpc.LeadingUint(v[len(pre):])
	i := len(pre) + d
	if d == 0 || i >= len(v) || (v[i] != ',' && v[i] != '}') || c > 1<<32-1 {
		return 0, false
	}
	return uint32(c), true
}

// completeProposal reads a CompleteProposal event's height; ok is false for
// any other message. The event is small and rare (one a round), so it is
// decoded with encoding/json once recognised.
func completeProposal(msg []byte) (int64, bool) {
	if !bytes.Contains(msg[:min(len(msg), 256)], []byte("tendermint/event/CompleteProposal")) {
		return 0, false
	}
	var ev struct {
		Result struct {
			Data struct {
				Value struct {
					Height Int64 `json:"height"`
				} `json:"value"`
			} `json:"data"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &ev); err != nil || ev.Result.Data.Value.Height <= 0 {
		return 0, false
	}
	return int64(ev.Result.Data.Value.Height), true
}
