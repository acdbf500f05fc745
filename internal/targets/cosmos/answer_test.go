package cosmos

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// A REST answer without a tx_response is read by sut.Unreadable: a gateway's
// 502/504 or an HTML 200 may have been forwarded (unacked, never
// "rejected http_200"); the API's own error is a rejection (issue 23).
func TestRESTAnswersWithoutAResult(t *testing.T) {
	answers := []struct {
		status int
		body   string
	}{
		{200, "<html>upstream busy</html>"},
		{502, "<html>502 Bad Gateway</html>"},
		{504, "<html>504 Gateway Time-out</html>"},
		{400, `{"code":3,"message":"invalid request","details":[]}`},
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[int(n.Add(1)-1)%len(answers)]
		w.WriteHeader(a.status)
		w.Write([]byte(a.body))
	}))
	defer srv.Close()
	tg, err := New(Options{RPC: []string{"http://127.0.0.1:1"}, API: []string{srv.URL}, Via: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	sub := tg.Submitter(0)
	want := []sut.Receipt{{Status: sut.Unacked, Reason: "unreadable_answer"}, {Status: sut.Unacked, Reason: "http_502"},
		{Status: sut.Unacked, Reason: "http_504"}, {Status: sut.Rejected, Reason: "http_400", Detail: "invalid request"}}
	for i, w := range want {
		r := sub.Submit(context.Background(), sut.Tx{Bytes: []byte{1, 2, 3}})
		if r.Status != w.Status || r.Reason != w.Reason || (w.Detail != "" && r.Detail != w.Detail) {
			t.Errorf("answer %d (%d %s): %+v, want %+v", i, answers[i].status, answers[i].body, r, w)
		}
	}
}

// Refusals are named by what they mean: the SDK's errors by name, the fee
// market's and other modules' with their codespace, unknown ones by the
// raw pair (issue 24).
func TestRefusalNames(t *testing.T) {
	for _, c := range []struct {
		space string
		code  uint32
		want  string
	}{
		{"sdk", 13, "insufficient_fee"},
		{"sdk", 11, "out_of_gas"},
		{"feemarket", 1, "feemarket_no_fee_coin"},
		{"undefined", 1, "undefined_internal_error"},
		{"bank", 5, "bank_send_disabled"},
		{"wasm", 7, "wasm_7"},
		{"", 3, "code_3"},
	} {
		if got := Reason(c.space, c.code, ""); got != c.want {
			t.Errorf("%s/%d: %q, want %q", c.space, c.code, got, c.want)
		}
	}
}

// The sequence a simulation's refusal expects is read from the SDK's log,
// so auto gas simulates with the node's sequence after a backlog.
func TestExpectedSequence(t *testing.T) {
	err := errors.New("simulate: account sequence mismatch, expected 8, got 7: incorrect account sequence")
	if v, ok := expectedSequence(err); !ok || v != 8 {
		t.Errorf("expected sequence %d, %v; want 8", v, ok)
	}
	if _, ok := expectedSequence(errors.New("insufficient fee")); ok {
		t.Error("a refusal without a sequence read as one")
	}
}
