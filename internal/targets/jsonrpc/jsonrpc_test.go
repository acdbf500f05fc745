package jsonrpc

import (
	"encoding/json"
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
			got = append(got, fmt.Sprintf("%d error %s", k, a.Err))
		} else {
			got = append(got, fmt.Sprintf("%d result %s", k, a.Result))
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
			res = string(a.Result)
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

// EachAnswer reads what encoding/json reads: for any body that is a valid
// JSON array of objects with distinct member names, each answer's result
// and error are exactly the raw values encoding/json finds, and each
// element is passed whole.
func FuzzEachAnswer(f *testing.F) {
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"result":{"code":0,"log":"a\"}","hash":"AB"}},{"id":2,"error":{"code":-1,"message":"x\\"}}]`))
	f.Add([]byte(` [ {"id" : 12.5 , "result" : [1, {"a":"]"}] } ]`))
	f.Add([]byte(`[{"id":12345678901234567890,"result":null},{"result":"\\\\"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var want []map[string]json.RawMessage
		if json.Unmarshal(body, &want) != nil || !distinctNames(body, len(want)) {
			return
		}
		n := 0
		ok := EachAnswer(body, 0, len(want), func(k int, v []byte, a Answer) {
			if n >= len(want) {
				t.Fatalf("more answers than elements")
			}
			w := want[n]
			if r, has := w["result"]; has != (a.Result != nil) || has && string(r) != string(a.Result) {
				t.Fatalf("answer %d: result %q, want %q (present %v)", n, a.Result, r, has)
			}
			if e, has := w["error"]; has != (a.Err != nil) || has && string(e) != string(a.Err) {
				t.Fatalf("answer %d: error %q, want %q (present %v)", n, a.Err, e, has)
			}
			var whole map[string]json.RawMessage
			if json.Unmarshal(v, &whole) != nil || len(whole) != len(w) {
				t.Fatalf("answer %d: element %q is not the whole object", n, v)
			}
			n++
		})
		if !ok || n != len(want) {
			t.Fatalf("ok %v, %d answers of %d", ok, n, len(want))
		}
	})
}

// distinctNames: no element of the array repeats a member name (encoding/json
// keeps the last, EachAnswer the last too, but a null element or a repeated
// name makes the comparison ambiguous) and every element is an object.
func distinctNames(body []byte, n int) bool {
	var elems []json.RawMessage
	if json.Unmarshal(body, &elems) != nil || len(elems) != n {
		return false
	}
	for _, e := range elems {
		d := json.NewDecoder(strings.NewReader(string(e)))
		if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
			return false
		}
		seen := map[string]bool{}
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return false
			}
			name := tok.(string)
			if seen[name] {
				return false
			}
			seen[name] = true
			var skip json.RawMessage
			if d.Decode(&skip) != nil {
				return false
			}
		}
	}
	return true
}
