package cometbft

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	result, ok := lookup(msg, "result")
	if !ok {
		if raw, ok := lookup(msg, "error"); ok && raw[0] == '{' {
			raw = raw[:valueEnd(raw)]
			var re rpcError
			if err := json.Unmarshal(raw, &re); err != nil {
				return nil, nil, fmt.Errorf("NewBlock event: error %s", clip(raw, 200))
			}
			return nil, nil, &re
		}
		return nil, nil, nil
	}
	value, ok := lookup(result, "data", "value")
	if !ok || value[0] != '{' {
		return nil, nil, nil
	}
	blockJSON, ok := lookup(value, "block")
	if !ok {
		return nil, nil, nil
	}
	hs, ok := str(lookup(blockJSON, "header", "height"))
	if !ok {
		return nil, nil, fmt.Errorf("NewBlock event: no header height")
	}
	h, err := strconv.ParseInt(hs, 10, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: height %q", hs)
	}
	ts, ok := str(lookup(blockJSON, "header", "time"))
	if !ok {
		return nil, nil, fmt.Errorf("NewBlock event: no header time")
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
	err = nil
	if txsJSON, ok := lookup(blockJSON, "data", "txs"); ok && txsJSON[0] != 'n' { // null: none
		err = eachElement(txsJSON, func(v []byte) {
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
	if resJSON, ok := lookup(value, "result_finalize_block", "tx_results"); ok && resJSON[0] != 'n' {
		err = eachElement(resJSON, func(v []byte) {
			r, _ := readResult(v)
			d.res = append(d.res, r)
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("NewBlock event: tx_results: %w", err)
	}
	return &d.blk, d.res, nil
}

// The arrays of a block event are walked by hand: jsonparser checks every
// byte of every transaction result's events on its way to the next one
// (130-230 MB/s, most of the confirmer's CPU at a thousand payments a
// second); this walk jumps from quote to quote with bytes.IndexByte.

// str is the JSON string (without escapes) at the start of v.
func str(v []byte, ok bool) (string, bool) {
	if !ok || v[0] != '"' {
		return "", false
	}
	e := stringEnd(v[1:])
	if e < 0 {
		return "", false
	}
	return string(v[1 : 1+e]), true
}

// lookup follows keys through nested objects to a value; the slice runs
// from the value's start to the end of b (only the values passed on the
// way are measured).
func lookup(b []byte, keys ...string) ([]byte, bool) {
	for _, k := range keys {
		v, ok := member(b, k)
		if !ok {
			return nil, false
		}
		b = v
	}
	return b, len(b) > 0
}

// member is where the value of key in the JSON object obj starts.
func member(obj []byte, key string) (found []byte, ok bool) {
	eachMember(obj, func(name, v []byte) bool {
		if string(name) == key {
			found, ok = v, true
			return false
		}
		return true
	})
	return found, ok
}

// eachMember calls f with each member's name and where its value starts
// (running to the end of obj) until f returns false; the values f passes
// over are measured, the one it stops at is not. It reports whether obj
// was a well-formed object up to where it stopped.
func eachMember(obj []byte, f func(name, v []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		e := stringEnd(obj[i+1:])
		if e < 0 {
			return false
		}
		name := obj[i+1 : i+1+e]
		i = skipSpace(obj, i+e+2)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return false
		}
		if !f(name, obj[i:]) {
			return true
		}
		n := valueEnd(obj[i:])
		if n <= 0 {
			return false
		}
		i = skipSpace(obj, i+n)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case '}':
			return true
		case ',':
			i++
		default:
			return false
		}
	}
}

// rpcAnswer is one JSON-RPC answer's parts; result and err run from the
// value's start to the end of the answer.
type rpcAnswer struct {
	id          uint64
	hasID       bool
	result, err []byte
}

// parseAnswer reads an answer's id, result and error in one walk.
func parseAnswer(b []byte) (a rpcAnswer, ok bool) {
	ok = eachMember(b, func(name, v []byte) bool {
		switch string(name) {
		case "id":
			var d int
			a.id, d = leadingUint(v)
			a.hasID = d > 0
		case "result":
			a.result = v
		case "error":
			a.err = v
		}
		return true
	})
	return a, ok
}

// leadingUint is the unsigned integer v starts with, and its digits.
func leadingUint(v []byte) (n uint64, digits int) {
	for ; digits < len(v) && digits < 19 && v[digits] >= '0' && v[digits] <= '9'; digits++ {
		n = n*10 + uint64(v[digits]-'0')
	}
	return n, digits
}

// eachElement calls f with each element of the JSON array arr.
func eachElement(arr []byte, f func(v []byte)) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return fmt.Errorf("not an array: %s", clip(arr, 40))
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for i < len(arr) {
		n := valueEnd(arr[i:])
		if n <= 0 {
			return fmt.Errorf("malformed array element at byte %d", i)
		}
		f(arr[i : i+n])
		i = skipSpace(arr, i+n)
		if i >= len(arr) {
			break
		}
		switch arr[i] {
		case ']':
			return nil
		case ',':
			i = skipSpace(arr, i+1)
		default:
			return fmt.Errorf("malformed array at byte %d", i)
		}
	}
	return fmt.Errorf("unterminated array")
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// valueEnd is the length of the JSON value at the start of b, 0 when it is
// malformed.
func valueEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := stringEnd(b[i+1:])
			if j < 0 {
				return 0
			}
			i += j + 1
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // a scalar ends
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\n', '\r', '\t':
			if depth == 0 {
				return i // a scalar ends
			}
		}
	}
	if depth == 0 {
		return len(b)
	}
	return 0
}

// stringEnd is the index of the quote that closes the string b starts in.
func stringEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
		i++
	}
}

// readResult reads a transaction result v (one whole JSON value): its code
// and, when it failed, its codespace and log. CometBFT writes the code
// first, so a success is read from its first bytes without allocating;
// anything else is decoded whole. ok is false when v does not decode.
func readResult(v []byte) (ExecResult, bool) {
	if c, ok := leadingCode(v); ok && c == 0 {
		return ExecResult{}, true
	}
	var r ExecResult // escapes to the heap: only on this path
	err := json.Unmarshal(v, &r)
	return r, err == nil
}

// leadingCode reads a result code written first, as CometBFT writes it:
// {"code":N,...}.
func leadingCode(v []byte) (uint32, bool) {
	const pre = `{"code":`
	if !bytes.HasPrefix(v, []byte(pre)) {
		return 0, false
	}
	c, d := leadingUint(v[len(pre):])
	i := len(pre) + d
	if d == 0 || i >= len(v) || (v[i] != ',' && v[i] != '}') || c > 1<<32-1 {
		return 0, false
	}
	return uint32(c), true
}
