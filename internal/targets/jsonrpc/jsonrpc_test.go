package jsonrpc

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A batch's answers are matched to requests by id, whatever their order;
// an answer without an id of the batch takes its place in order.
func TestEachAnswer(t *testing.T) {
	body := []byte(` [ {"jsonrpc":"2.0","id":13,"result":"0xaa"},
		{"jsonrpc":"2.0","id":10,"error":{"code":-32000,"message":"nonce too low: \"x\" [y]"}},
		{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}},
		{"jsonrpc":"2.0","id":11,"result":{"code":0,"log":"}"}} ]`)
	var got []string
	ok := EachAnswer(body, 10, 4, func(k int, v []byte, a Answer) {
		if a.Err != nil {
			got = append(got, fmt.Sprintf("%d error %s", k, a.Err[:ValueEnd(a.Err)]))
		} else {
			got = append(got, fmt.Sprintf("%d result %s", k, a.Result[:ValueEnd(a.Result)]))
		}
	})
	want := []string{
		`3 result "0xaa"`,
		`0 error {"code":-32000,"message":"nonce too low: \"x\" [y]"}`,
		`2 error {"code":-32600,"message":"bad"}`,
		`1 result {"code":0,"log":"}"}`,
	}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("array %v, answers:\n%s\nwant\n%s", ok, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// An element that is no answer object keeps its place; an empty
	// batch answer has no elements.
	got = got[:0]
	EachAnswer([]byte(`[5,{"id":11,"result":"0x"} ,"x"]`), 10, 3, func(k int, v []byte, a Answer) {
		got = append(got, fmt.Sprintf("%d %s", k, v))
	})
	if want := []string{`0 5`, `1 {"id":11,"result":"0x"}`, `2 "x"`}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if !EachAnswer([]byte(` [ ] `), 1, 1, func(int, []byte, Answer) { t.Error("an element in an empty array") }) {
		t.Error("an empty array was not read as one")
	}
	if EachAnswer([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch too large"}}`), 1, 3, func(int, []byte, Answer) {
		t.Error("an object was read as a batch's elements")
	}) {
		t.Error("an object was read as an array")
	}
}

func TestParseAnswer(t *testing.T) {
	for _, c := range []struct {
		in     string
		id     uint64
		hasID  bool
		result string
		ok     bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":"0x01"}`, 7, true, `"0x01"`, true},
		{`{"result" : [1, {"a":"b\\\"}"}] , "id":"x"}`, 0, false, `[1, {"a":"b\\\"}"}]`, true},
		{`{"id":3,"result":`, 3, true, "", false},
		{`not json`, 0, false, "", false},
	} {
		a, ok := ParseAnswer([]byte(c.in))
		res := ""
		if a.Result != nil {
			res = string(a.Result[:ValueEnd(a.Result)])
		}
		if ok != c.ok || a.ID != c.id || a.HasID != c.hasID || res != c.result {
			t.Errorf("%s: id %d (%v) result %q ok %v; want %d (%v) %q %v", c.in, a.ID, a.HasID, res, ok, c.id, c.hasID, c.result, c.ok)
		}
	}
}

// Requests are split into batches of at most size; the buffers are
// reused from call to call, more added when needed.
func TestAppendBatches(t *testing.T) {
	req := func(b []byte, k int) []byte { return fmt.Appendf(b, `{"id":%d}`, k) }
	bufs := AppendBatches(nil, 5, 2, req)
	got := fmt.Sprintf("%s", bufs)
	if want := `[[{"id":0},{"id":1}] [{"id":2},{"id":3}] [{"id":4}]]`; got != want {
		t.Errorf("bodies %s, want %s", got, want)
	}
	first := &bufs[0][0]
	bufs = AppendBatches(bufs, 1, 2, req)
	if len(bufs) != 1 || string(bufs[0]) != `[{"id":0}]` || &bufs[0][0] != first {
		t.Errorf("one request: %s (buffer reused: %v)", bufs, &bufs[0][0] == first)
	}
	if bufs = AppendBatches(bufs, 7, 2, req); len(bufs) != 4 || string(bufs[3]) != `[{"id":6}]` {
		t.Errorf("seven requests: %s", bufs)
	}
}
