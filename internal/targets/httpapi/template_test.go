package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

func TestTemplateFillsEveryPlaceholder(t *testing.T) {
	tpl, err := ParseTemplate("body", `{"c":"{{chain_id}}","s":"{{sender}}","p":"{{sender_pubkey}}","r":"{{ recipient }}","a":{{amount}},"q":{{sequence}},"g":"{{signature}}","k":"{{idempotency_key}}","t":"{{tx}}","h":"{{tx_hex}}","u":"{{callback_url}}"}`, false)
	if err != nil {
		t.Fatal(err)
	}
	f := Fields{ChainID: []byte(`a"b`), Sender: []byte{0xab}, SenderPub: []byte{0x01, 0x02}, Recipient: []byte{0xcd}, Amount: 42, Sequence: 7, Signature: []byte{0xff}}
	v := values{f: &f, tx: []byte{1, 2, 3}, key: []byte{0x0a}, callback: "http://127.0.0.1:9/callback"}
	got := string(tpl.Append(nil, &v))
	want := `{"c":"a\"b","s":"ab","p":"0102","r":"cd","a":42,"q":7,"g":"ff","k":"0a","t":"AQID","h":"010203","u":"http://127.0.0.1:9/callback"}`
	if got != want {
		t.Errorf("filled\n got %s\nwant %s", got, want)
	}
	buf := make([]byte, 0, 512)
	if allocs := testing.AllocsPerRun(100, func() { buf = tpl.Append(buf[:0], &v) }); allocs != 0 {
		t.Errorf("filling into a buffer with room allocates %v times", allocs)
	}
}

func TestTemplateErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		s, want string
		id      bool
	}{
		{`{"a":"{{nope}}"}`, "http.body: unknown placeholder {{nope}}", false},
		{`{"a":"{{sender"}`, "http.body: \"{\\\"a\\\":\\\"{{sender\\\"}\" has an unclosed {{", false},
		{`/payments/{{id}}`, "unknown placeholder {{id}}", false},
	} {
		_, err := ParseTemplate("http.body", c.s, c.id)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.s, err, c.want)
		}
	}
	if _, err := ParseTemplate("http.poll_path", `/payments/{{id}}`, true); err != nil {
		t.Errorf("{{id}} in a poll path: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    string
		want time.Duration
	}{
		{"", time.Second},
		{"3", 3 * time.Second},
		{"0", 0},
		{"-4", time.Second},
		{"junk", time.Second},
		{"600", 30 * time.Second}, // capped
		{now.Add(2 * time.Second).Format(http.TimeFormat), 2 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(c.h, now, 30*time.Second); got != c.want {
			t.Errorf("Retry-After %q: %s, want %s", c.h, got, c.want)
		}
	}
}

func TestAnswersAreClassified(t *testing.T) {
	dec := func([]byte, *Fields) error { return nil }
	mk := func(o Options) *Target {
		o.Endpoints, o.Path, o.Decode = []string{"http://127.0.0.1:1"}, "/p", dec
		tgt, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return tgt
	}
	sync := mk(Options{Confirm: "sync", ReasonField: "error", DetailField: "detail"})
	poll := mk(Options{Confirm: "poll", PollPath: "/p/{{id}}", StatusField: "state.name", Committed: []string{"settled"}, Failed: []string{"declined"}, ReasonField: "why"})
	for _, c := range []struct {
		tgt    *Target
		code   int
		body   string
		status sut.Status
		reason string
	}{
		{sync, 200, `{}`, sut.Committed, ""},
		{sync, 201, `not json`, sut.Committed, ""},
		{sync, 409, `{"error":"sequence_too_low","detail":"sequence too low: got 1, expected 2"}`, sut.Rejected, "sequence_too_low"},
		{sync, 500, `oops`, sut.Rejected, "http_500"},
		{sync, 502, ``, sut.Unacked, "http_502"},
		{sync, 504, ``, sut.Unacked, "http_504"},
		{poll, 202, `{"state":{"name":"queued"}}`, sut.Pending, ""},
		{poll, 200, `{"state":{"name":"settled"}}`, sut.Committed, ""},
		{poll, 200, `{"state":{"name":"declined"},"why":"limit"}`, sut.Failed, "limit"},
		{poll, 200, `{"state":{"name":"declined"}}`, sut.Failed, "failed"},
		{poll, 400, `{"why":"bad_amount"}`, sut.Rejected, "bad_amount"},
	} {
		r := c.tgt.classify(c.code, []byte(c.body))
		if r.Status != c.status || r.Reason != c.reason {
			t.Errorf("%s %d %s: %v %q, want %v %q", c.tgt.o.Confirm, c.code, c.body, r.Status, r.Reason, c.status, c.reason)
		}
	}
}

func TestOptionsErrorsNameTheField(t *testing.T) {
	dec := func([]byte, *Fields) error { return nil }
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Confirm: "poll"}, "http.poll_path: empty"},
		{Options{Confirm: "callback", Body: `{}`}, "no {{callback_url}}"},
		{Options{Confirm: "sync", Accept: []int{429}}, "http.accept[0]: 429"},
		{Options{Confirm: "sync", Headers: []string{"NoColon"}}, "http.headers[0]"},
		{Options{Confirm: "maybe"}, "http.confirm: \"maybe\""},
		{Options{Confirm: "sync", Endpoints: []string{"ftp://x"}}, "target.endpoints[0]"},
		{Options{Confirm: "sync", BatchSize: 10, Headers: []string{"Idempotency-Key: {{idempotency_key}}"}}, "http.headers[0]: \"Idempotency-Key: {{idempotency_key}}\" names one payment's field"},
		{Options{Confirm: "sync", BatchSize: 10, BatchPath: "/batch/{{sender}}"}, "http.batch_path: \"/batch/{{sender}}\" names one payment's field"},
	} {
		if c.o.Endpoints == nil {
			c.o.Endpoints = []string{"http://127.0.0.1:1"}
		}
		c.o.Decode = dec
		_, err := New(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
