package cometbft

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/buger/jsonparser"
)

// eventDecoder reads the NewBlock events of a subscription: the height,
// time and transactions of the block and each transaction's code (and,
// when it failed, codespace and log). encoding/json would scan and check
// every event of every transaction result, which tpslab never reads;
// jsonparser skips them without allocating, and the decoder reuses its
// buffers from block to block (this is the confirmer's hot path).
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
	if raw, typ, _, e := jsonparser.Get(msg, "error"); e == nil && typ == jsonparser.Object {
		var re rpcError
		if err := json.Unmarshal(raw, &re); err != nil {
			return nil, nil, fmt.Errorf("NewBlock event: error %s", clip(raw, 200))
		}
		return nil, nil, &re
	}
	value, typ, _, err := jsonparser.Get(msg, "result", "data", "value")
	if err == jsonparser.KeyPathNotFoundError || typ != jsonparser.Object {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: %w", err)
	}
	blockJSON, _, _, err := jsonparser.Get(value, "block")
	if err != nil {
		return nil, nil, nil
	}
	hs, err := jsonparser.GetString(blockJSON, "header", "height")
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: header height: %w", err)
	}
	h, err := strconv.ParseInt(hs, 10, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: height %q", hs)
	}
	ts, err := jsonparser.GetUnsafeString(blockJSON, "header", "time")
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: header time: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: time %q", ts)
	}
	d.blk.Header.Height, d.blk.Header.Time = Int64(h), t
	d.blk.Data.Txs = d.blk.Data.Txs[:0]
	d.txs = d.txs[:0]
	d.offs = d.offs[:0]
	var derr error
	_, err = jsonparser.ArrayEach(blockJSON, func(v []byte, _ jsonparser.ValueType, _ int, _ error) {
		start, need := len(d.txs), base64.StdEncoding.DecodedLen(len(v))
		d.txs = slices.Grow(d.txs, need)[:start+need]
		n, e := base64.StdEncoding.Decode(d.txs[start:], v)
		if e != nil && derr == nil {
			derr = fmt.Errorf("NewBlock event: a transaction is not base64: %w", e)
		}
		d.txs = d.txs[:start+n]
		d.offs = append(d.offs, start, start+n)
	}, "data", "txs")
	if err != nil && err != jsonparser.KeyPathNotFoundError {
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
	_, err = jsonparser.ArrayEach(value, func(v []byte, _ jsonparser.ValueType, _ int, _ error) {
		var r ExecResult
		if c, e := jsonparser.GetInt(v, "code"); e == nil {
			r.Code = uint32(c)
		}
		if r.Code != 0 {
			r.Codespace, _ = jsonparser.GetString(v, "codespace")
			r.Log, _ = jsonparser.GetString(v, "log")
		}
		d.res = append(d.res, r)
	}, "result_finalize_block", "tx_results")
	if err != nil && err != jsonparser.KeyPathNotFoundError {
		return nil, nil, fmt.Errorf("NewBlock event: tx_results: %w", err)
	}
	return &d.blk, d.res, nil
}
