// Package jsonrpc reads JSON-RPC answers and the JSON inside them by hand,
// without allocating: the submission and confirmation hot paths of the
// CometBFT and EVM targets read a few fields (an id, a result code, a
// transaction hash) out of large answers. encoding/json and jsonparser
// check every byte of every value they pass (CometBFT's block events carry
// each transaction's events, which tpslab never reads: 130-230 MB/s, most
// of the confirmer's CPU at a thousand payments a second); this walk jumps
// from quote to quote with bytes.IndexByte and measures only the values
// it passes.
package jsonrpc

import (
	"bytes"
	"fmt"
)

// Str is the JSON string (without escapes) at the start of v.
func Str(v []byte, ok bool) (string, bool) {
	if !ok || v[0] != '"' {
		return "", false
	}
	e := StringEnd(v[1:])
	if e < 0 {
		return "", false
	}
	return string(v[1 : 1+e]), true
}

// Lookup follows keys through nested objects to a value; the slice runs
// from the value's start to the end of b (only the values passed on the
// way are measured).
func Lookup(b []byte, keys ...string) ([]byte, bool) {
	for _, k := range keys {
		v, ok := Member(b, k)
		if !ok {
			return nil, false
		}
		b = v
	}
	return b, len(b) > 0
}

// Member is where the value of key in the JSON object obj starts.
func Member(obj []byte, key string) (found []byte, ok bool) {
	EachMember(obj, func(name, v []byte) bool {
		if string(name) == key {
			found, ok = v, true
			return false
		}
		return true
	})
	return found, ok
}

// EachMember calls f with each member's name and where its value starts
// (running to the end of obj) until f returns false; the values f passes
// over are measured, the one it stops at is not. It reports whether obj
// was a well-formed object up to where it stopped.
func EachMember(obj []byte, f func(name, v []byte) bool) bool {
	_, ok := eachMember(obj, func(name, v []byte) (int, bool) { return 0, f(name, v) })
	return ok
}

// eachMember is EachMember that also returns the object's length when
// the walk reached its end (0 when f stopped it or it was malformed). f
// returns the value's length when it measured it (0: not measured), so no
// value is walked twice.
func eachMember(obj []byte, f func(name, v []byte) (n int, more bool)) (end int, ok bool) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, false
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, true
	}
	for {
		i = SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return 0, false
		}
		e := StringEnd(obj[i+1:])
		if e < 0 {
			return 0, false
		}
		name := obj[i+1 : i+1+e]
		i = SkipSpace(obj, i+e+2)
		if i >= len(obj) || obj[i] != ':' {
			return 0, false
		}
		i = SkipSpace(obj, i+1)
		if i >= len(obj) {
			return 0, false
		}
		n, more := f(name, obj[i:])
		if !more {
			return 0, true
		}
		if n <= 0 {
			n = ValueEnd(obj[i:])
		}
		if n <= 0 {
			return 0, false
		}
		i = SkipSpace(obj, i+n)
		if i >= len(obj) {
			return 0, false
		}
		switch obj[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}

// Answer is one JSON-RPC answer's parts: Result and Err are the values,
// exactly (nil when absent).
type Answer struct {
	ID          uint64
	HasID       bool
	Result, Err []byte
}

// ParseAnswer reads an answer's id, result and error in one walk.
func ParseAnswer(b []byte) (a Answer, ok bool) {
	a, _, ok = parseAnswer(b)
	return a, ok
}

// parseAnswer is ParseAnswer that also returns the answer's length.
func parseAnswer(b []byte) (a Answer, end int, ok bool) {
	end, ok = eachMember(b, func(name, v []byte) (n int, more bool) {
		switch string(name) {
		case "id":
			a.ID, n = LeadingUint(v)
			a.HasID = n > 0
			if n == 19 || n < len(v) && !ends(v[n]) {
				n = 0 // not a plain integer, or a long one: the walk measures it
			}
		case "result":
			n = ValueEnd(v)
			a.Result = v[:max(n, 0)]
		case "error":
			n = ValueEnd(v)
			a.Err = v[:max(n, 0)]
		}
		return n, true
	})
	return a, end, ok
}

// ends: c may follow a member's value.
func ends(c byte) bool {
	return c == ',' || c == '}' || c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// LeadingUint is the unsigned integer v starts with, and its digits.
func LeadingUint(v []byte) (n uint64, digits int) {
	for ; digits < len(v) && digits < 19 && v[digits] >= '0' && v[digits] <= '9'; digits++ {
		n = n*10 + uint64(v[digits]-'0')
	}
	return n, digits
}

// EachElement calls f with each element of the JSON array arr.
func EachElement(arr []byte, f func(v []byte)) error {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return fmt.Errorf("not an array: %q", arr[:min(len(arr), 40)])
	}
	i = SkipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for i < len(arr) {
		n := ValueEnd(arr[i:])
		if n <= 0 {
			return fmt.Errorf("malformed array element at byte %d", i)
		}
		f(arr[i : i+n])
		i = SkipSpace(arr, i+n)
		if i >= len(arr) {
			break
		}
		switch arr[i] {
		case ']':
			return nil
		case ',':
			i = SkipSpace(arr, i+1)
		default:
			return fmt.Errorf("malformed array at byte %d", i)
		}
	}
	return fmt.Errorf("unterminated array")
}

// SkipSpace is the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// ValueEnd is the length of the JSON value at the start of b, 0 when it is
// malformed.
func ValueEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := StringEnd(b[i+1:])
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

// StringEnd is the index of the quote that closes the string b starts in.
func StringEnd(b []byte) int {
	// Most strings in an answer are short (names, "", "2.0"): a plain
	// loop ends them before IndexByte's setup would pay (answer parsing
	// was a fifth of the generator's CPU at 400k payments/s).
	n := min(len(b), 16)
	for i := 0; i < n; i++ {
		if b[i] == '"' && !escaped(b, i) {
			return i
		}
	}
	for i := n; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		if !escaped(b, i) {
			return i
		}
		i++
	}
}

// escaped: the quote at b[i] follows an odd run of backslashes.
func escaped(b []byte, i int) bool {
	k := i
	for k > 0 && b[k-1] == '\\' {
		k--
	}
	return (i-k)%2 == 1
}

// EachAnswer calls f with each element of a batch's answer body and the
// index k of the request it answers: by its id (base is the first
// request's, n the batch's size), in order when an id does not match. It
// reports whether body was an array; a server that refuses a batch whole
// answers with one object.
func EachAnswer(body []byte, base uint64, n int, f func(k int, v []byte, a Answer)) bool {
	if i := SkipSpace(body, 0); i >= len(body) || body[i] != '[' {
		return false
	}
	// Each answer is walked once: its members' walk finds its end.
	i := SkipSpace(body, SkipSpace(body, 0)+1)
	for pos := 0; i < len(body) && body[i] != ']'; pos++ {
		a, end, ok := parseAnswer(body[i:])
		if !ok || end == 0 {
			end = ValueEnd(body[i:]) // not an answer object: skipped whole
			if end <= 0 {
				break
			}
		}
		k := pos
		if a.HasID && a.ID >= base && a.ID < base+uint64(n) {
			k = int(a.ID - base)
		}
		if k < n {
			f(k, body[i:i+end], a)
		}
		i = SkipSpace(body, i+end)
		if i >= len(body) || body[i] != ',' {
			break
		}
		i = SkipSpace(body, i+1)
	}
	return true
}

// AppendBatches writes n requests as JSON-RPC batch bodies of at most
// size requests each, request(b, k) appending request k to b, into bufs
// (their buffers reused, more added as needed), and returns the bodies.
// The returned slice is the bufs to pass next time.
func AppendBatches(bufs [][]byte, n, size int, request func(b []byte, k int) []byte) [][]byte {
	groups := (n + size - 1) / size
	bufs = bufs[:cap(bufs)]
	for len(bufs) < groups {
		bufs = append(bufs, nil)
	}
	for g := range groups {
		b := append(bufs[g][:0], '[')
		for k := g * size; k < min(n, (g+1)*size); k++ {
			if k > g*size {
				b = append(b, ',')
			}
			b = request(b, k)
		}
		bufs[g] = append(b, ']')
	}
	return bufs[:groups]
}
