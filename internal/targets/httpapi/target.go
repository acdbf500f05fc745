// Package httpapi is the target for payment systems behind a REST API (a
// bank or card back end, GNU Taler's exchange, tpslab's own ledger
// service): a request template says how a signed payment is posted, rules
// say how the answer reads, and a payment is confirmed by the answer itself
// (synchronous), by polling a status URL, or by a callback tpslab receives.
// See docs/http-target.md.
package httpapi

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/buger/jsonparser"

	"github.com/tpslab/tpslab/internal/sut"
)

// Options describe the API. Templates hold {{placeholders}} (Placeholders).
type Options struct {
	Endpoints []string // base URLs; paths are appended
	ChainID   string   // reported by Probe
	Method    string   // default POST
	Path      string   // the payment request's path, e.g. /payments
	Headers   []string // "Name: value"
	Body      string
	// Accept are the status codes of an accepted payment (empty: 2xx).
	Accept []int
	// StatusField is a JSON field (dotted path) holding the payment's
	// state; its values in Committed and Failed settle it, any other value
	// leaves it pending. Without it an accepted answer is the commit in
	// sync mode and pending otherwise.
	StatusField string
	Committed   []string
	Failed      []string
	// ReasonField and DetailField name why a payment was refused (JSON
	// fields of the answer); without them the reason is http_<status>.
	ReasonField string
	DetailField string
	// IDField holds the system's id for the payment in the answer (and in
	// callbacks); empty: the idempotency key is the id.
	IDField string
	Confirm string // sync | poll | callback
	// PollPath is the status URL's path ({{id}}: the system's id); in sync
	// mode it is used only for payments whose answer was lost.
	PollPath     string
	PollInterval time.Duration
	// GiveUp stops polling a payment after this long (the run expires it).
	GiveUp time.Duration
	// CallbackListen is where tpslab receives callbacks (default
	// 127.0.0.1:0); the body's {{callback_url}} tells the system.
	CallbackListen string
	HealthPath     string // probed for liveness (default /)
	// AccountPath reads a sender's next sequence ({{sender}}) from
	// SequenceField of its answer; empty: every sender starts at 0.
	AccountPath   string
	SequenceField string
	// ThrottleRetries bounds the waits on 429 per payment; MaxRetryAfter
	// caps one wait.
	ThrottleRetries int
	MaxRetryAfter   time.Duration
	Timeout         time.Duration // per request
	Connections     int           // idle connections kept per endpoint
	Decode          Decoder
	// BatchSize > 1 posts payments as JSON arrays of up to this many
	// bodies to BatchPath (default Path); the answer is an array whose
	// element k answers payment k, read as a single answer is, with the
	// element's "code" as its HTTP status (absent: the request's).
	BatchSize int
	BatchPath string
}

// Target posts payments to a REST API.
type Target struct {
	o         Options
	path      Template
	batchPath Template
	body      Template
	headers   []header
	poll      Template
	account   Template
	accept    [600]bool
	field     struct{ status, reason, detail, id, seq []string }
	client    *http.Client
	pool      *sut.Pool
	conf      *confirmer
	callback  string
}

type header struct {
	name  string
	value Template
}

func path(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// New checks the options and opens the callback listener.
func New(o Options) (*Target, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("target.endpoints: empty, expected the API's base URL (--endpoint)")
	}
	for i, e := range o.Endpoints {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("target.endpoints[%d]: %q, expected a base URL such as http://127.0.0.1:8080", i, e)
		}
		o.Endpoints[i] = strings.TrimSuffix(e, "/")
	}
	if o.Method == "" {
		o.Method = http.MethodPost
	}
	if len(o.Committed) == 0 {
		o.Committed = []string{"committed"}
	}
	if len(o.Failed) == 0 {
		o.Failed = []string{"failed", "rejected"}
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.GiveUp <= 0 {
		o.GiveUp = 5 * time.Minute
	}
	if o.HealthPath == "" {
		o.HealthPath = "/"
	}
	if o.SequenceField == "" {
		o.SequenceField = "sequence"
	}
	if o.ThrottleRetries <= 0 {
		o.ThrottleRetries = 20
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 30 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Decode == nil {
		return nil, errors.New("httpapi: no payment decoder")
	}
	t := &Target{o: o}
	var err error
	if t.path, err = ParseTemplate("http.path", o.Path, false); err != nil {
		return nil, err
	}
	if t.body, err = ParseTemplate("http.body", o.Body, false); err != nil {
		return nil, err
	}
	for i, h := range o.Headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("http.headers[%d]: %q, expected \"Name: value\"", i, h)
		}
		v, err := ParseTemplate(fmt.Sprintf("http.headers[%d]", i), strings.TrimSpace(value), false)
		if err != nil {
			return nil, err
		}
		t.headers = append(t.headers, header{http.CanonicalHeaderKey(strings.TrimSpace(name)), v})
	}
	if err := t.batchable(); err != nil {
		return nil, err
	}
	if t.poll, err = ParseTemplate("http.poll_path", o.PollPath, true); err != nil {
		return nil, err
	}
	if t.account, err = ParseTemplate("http.account_path", o.AccountPath, false); err != nil {
		return nil, err
	}
	switch o.Confirm {
	case "sync":
	case "poll":
		if o.PollPath == "" {
			return nil, errors.New("http.poll_path: empty, expected the status URL's path (e.g. /payments/{{id}}) for confirm poll")
		}
	case "callback":
		if !t.body.Uses(phCallbackURL) && !usesIn(t.headers, phCallbackURL) {
			return nil, errors.New("http.body: no {{callback_url}}, expected the request to tell the system where to call back for confirm callback")
		}
	default:
		return nil, fmt.Errorf("http.confirm: %q, expected one of [sync poll callback]", o.Confirm)
	}
	if len(o.Accept) == 0 {
		for c := 200; c < 300; c++ {
			t.accept[c] = true
		}
	}
	for i, c := range o.Accept {
		if c < 100 || c > 599 || c == http.StatusTooManyRequests {
			return nil, fmt.Errorf("http.accept[%d]: %d, expected an HTTP status 100..599 other than 429 (429 is throttling)", i, c)
		}
		t.accept[c] = true
	}
	t.field.status, t.field.reason, t.field.detail = path(o.StatusField), path(o.ReasonField), path(o.DetailField)
	t.field.id, t.field.seq = path(o.IDField), path(o.SequenceField)
	t.client = &http.Client{Timeout: o.Timeout, Transport: &http.Transport{
		Proxy:               nil, // load goes where it is pointed, never through a proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: max(o.Connections, 2),
		IdleConnTimeout:     90 * time.Second,
	}}
	t.pool = sut.NewPool(o.Endpoints, t.ProbeEndpoint)
	if o.Confirm != "sync" || o.PollPath != "" {
		t.conf = newConfirmer(t)
	}
	if o.Confirm == "callback" {
		if t.callback, err = t.conf.listen(o.CallbackListen); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func usesIn(hs []header, ph placeholder) bool {
	for _, h := range hs {
		if h.value.Uses(ph) {
			return true
		}
	}
	return false
}

// Pool is the endpoint pool (for health and failover).
func (t *Target) Pool() *sut.Pool { return t.pool }

// OnEvent reports endpoints going down and up.
func (t *Target) OnEvent(f func(sut.Event)) { t.pool.OnEvent(f) }

// EndpointStats reads every endpoint's health and counters.
func (t *Target) EndpointStats() []sut.EndpointStat { return t.pool.EndpointStats() }

// CallbackURL is where callbacks are received ("" unless confirm callback).
func (t *Target) CallbackURL() string { return t.callback }

// ProbeEndpoint asks endpoint i's health path; any answer below 500 is life.
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.o.Endpoints[i]+t.o.HealthPath, nil)
	if err != nil {
		return err
	}
	res, err := t.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	res.Body.Close()
	if res.StatusCode >= 500 {
		return fmt.Errorf("%s%s: HTTP %d", t.o.Endpoints[i], t.o.HealthPath, res.StatusCode)
	}
	return nil
}

// Probe asks the endpoints until one answers.
func (t *Target) Probe(ctx context.Context) (sut.Info, error) {
	var last error
	for i := range t.o.Endpoints {
		if last = t.ProbeEndpoint(ctx, i); last == nil {
			return sut.Info{ChainID: t.o.ChainID}, nil
		}
	}
	return sut.Info{}, last
}

// Confirmer is nil in sync mode without a status URL: every answer is final.
func (t *Target) Confirmer() sut.Confirmer {
	if t.conf == nil {
		return nil
	}
	return t.conf
}

// Close stops the callback listener.
func (t *Target) Close() error {
	if t.conf != nil {
		t.conf.close()
	}
	t.client.CloseIdleConnections()
	return nil
}

// Sequence reads the next sequence of the account with address addr, from
// the first endpoint that answers; without an account path it is 0.
func (t *Target) Sequence(ctx context.Context, addr []byte) (uint64, error) {
	if len(t.account) == 0 {
		return 0, nil
	}
	v := values{f: &Fields{Sender: addr}}
	var last error
	for i, e := range t.o.Endpoints {
		if _, ok := t.pool.Pick(i); !ok && i > 0 {
			continue
		}
		u := string(t.account.Append([]byte(e), &v))
		body, code, err := t.get(ctx, u)
		if err != nil {
			last = err
			continue
		}
		if code != http.StatusOK {
			return 0, fmt.Errorf("GET %s: HTTP %d: %s", u, code, clip(body))
		}
		s, err := jsonparser.GetUnsafeString(body, t.field.seq...)
		if err != nil {
			return 0, fmt.Errorf("GET %s: no %s in %s", u, t.o.SequenceField, clip(body))
		}
		return strconv.ParseUint(s, 10, 64)
	}
	return 0, last
}

func (t *Target) get(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	res, err := t.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return b, res.StatusCode, err
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// state reads an answer's status field: committed, failed or pending.
func (t *Target) state(body []byte) (sut.Status, bool) {
	if len(t.field.status) == 0 {
		return sut.Pending, false
	}
	v, err := jsonparser.GetUnsafeString(body, t.field.status...)
	if err != nil {
		return sut.Pending, false
	}
	for _, c := range t.o.Committed {
		if v == c {
			return sut.Committed, true
		}
	}
	for _, f := range t.o.Failed {
		if v == f {
			return sut.Failed, true
		}
	}
	return sut.Pending, true
}

// why names a refusal: the reason field, else http_<status>; the detail
// field, else the body.
func (t *Target) why(code int, body []byte) (reason, detail string) {
	reason = "http_" + strconv.Itoa(code)
	if len(t.field.reason) > 0 {
		if v, err := jsonparser.GetString(body, t.field.reason...); err == nil && v != "" {
			reason = v
		}
	}
	detail = clip(body)
	if len(t.field.detail) > 0 {
		if v, err := jsonparser.GetString(body, t.field.detail...); err == nil && v != "" {
			detail = v
		}
	}
	return reason, detail
}

// classify reads an answer other than 429.
func (t *Target) classify(code int, body []byte) sut.Receipt {
	if code > 0 && code < len(t.accept) && t.accept[code] {
		st, known := t.state(body)
		switch {
		case st == sut.Failed:
			r, d := t.why(code, body)
			if r == "http_"+strconv.Itoa(code) {
				r = "failed"
			}
			return sut.Receipt{Status: sut.Failed, Reason: r, Detail: d}
		case st == sut.Committed || (!known && t.o.Confirm == "sync"):
			return sut.Receipt{Status: sut.Committed}
		}
		return sut.Receipt{Status: sut.Pending}
	}
	r, d := t.why(code, body)
	if code == http.StatusBadGateway || code == http.StatusGatewayTimeout {
		// A gateway lost the answer: the system may hold the payment
		// (sut.Unreadable's rule, with the API's own reason).
		return sut.Receipt{Status: sut.Unacked, Reason: r, Detail: d}
	}
	return sut.Receipt{Status: sut.Rejected, Reason: r, Detail: d}
}

// retryAfter reads Retry-After (seconds or an HTTP date), 1 s when absent.
func retryAfter(h string, now time.Time, cap time.Duration) time.Duration {
	d := time.Second
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if at, err := http.ParseTime(h); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), cap)
}

type submitter struct {
	t    *Target
	pref int
	f    Fields
	v    values
	url  []byte
	body []byte
	hbuf []byte
	resp bytes.Buffer
	rd   bytes.Reader
	// after is the Retry-After of the last 429, negative when the last
	// answer was not a 429.
	after time.Duration
	// a batch's payments sent (ids), their places in it (at), answers (res)
	ids []sut.TxID
	at  []int
	res []sut.Receipt
}

// Submitter returns submitter i, preferring endpoint i mod the count.
func (t *Target) Submitter(i int) sut.Submitter {
	s := &submitter{t: t, pref: i % len(t.o.Endpoints), url: make([]byte, 0, 256), body: make([]byte, 0, 1024)}
	s.v = values{f: &s.f, callback: t.callback}
	return s
}

// Submit posts the payment; a 429 is waited out (Retry-After) and the
// payment posted again, up to ThrottleRetries times.
func (s *submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	if err := s.t.o.Decode(tx.Bytes, &s.f); err != nil {
		return sut.Receipt{Status: sut.Rejected, Reason: "malformed", Detail: err.Error()}
	}
	s.v.tx, s.v.key = tx.Bytes, tx.ID[:]
	var r sut.Receipt
	throttled, why := s.waitOut(ctx, func() {
		r = s.t.pool.Send(ctx, s.pref, func(ctx context.Context, i int) (sut.Receipt, error) { return s.post(ctx, i, tx.ID) })
	})
	if why != "" {
		return sut.Receipt{Status: sut.Rejected, Reason: "throttled", Endpoint: r.Endpoint, Throttled: throttled, Detail: why}
	}
	r.Throttled = throttled
	return r
}

// waitOut calls send until its answer is not a 429, waiting each one out
// (Retry-After), up to ThrottleRetries times; why says why it gave up ("":
// it did not).
func (s *submitter) waitOut(ctx context.Context, send func()) (throttled int, why string) {
	for {
		s.after = -1
		send()
		if s.after < 0 {
			return throttled, ""
		}
		throttled++
		if throttled > s.t.o.ThrottleRetries {
			return throttled, fmt.Sprintf("HTTP 429 %d times in a row", throttled)
		}
		select {
		case <-ctx.Done():
			return throttled, "the run ended while waiting out a 429"
		case <-time.After(s.after):
		}
	}
}

// post sends the payment to endpoint i.
func (s *submitter) post(ctx context.Context, i int, id sut.TxID) (sut.Receipt, error) {
	t := s.t
	s.url = t.path.Append(append(s.url[:0], t.o.Endpoints[i]...), &s.v)
	s.body = t.body.Append(s.body[:0], &s.v)
	code, err := s.do(ctx)
	if err != nil {
		return sut.Receipt{}, err
	}
	switch code {
	case http.StatusTooManyRequests:
		return sut.Receipt{Status: sut.Rejected, Reason: "throttled"}, nil
	case badRequest:
		return sut.Receipt{Status: sut.Rejected, Reason: "bad_request", Detail: s.resp.String()}, nil
	}
	return s.read(code, s.resp.Bytes(), id, i), nil
}

// badRequest is do's code for a request that could not be made.
const badRequest = -1

// do sends s.body to s.url with the headers filled from s.v (a batch's
// name no payment's field: batchable), and reads the answer into s.resp;
// a 429 sets s.after.
func (s *submitter) do(ctx context.Context) (int, error) {
	t := s.t
	s.rd.Reset(s.body)
	req, err := http.NewRequestWithContext(ctx, t.o.Method, string(s.url), &s.rd)
	if err != nil { // a template filled into no valid request: not sent
		s.resp.Reset()
		s.resp.WriteString(err.Error())
		return badRequest, nil
	}
	req.ContentLength = int64(len(s.body))
	if len(s.body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range t.headers {
		s.hbuf = h.value.Append(s.hbuf[:0], &s.v)
		req.Header[h.name] = []string{string(s.hbuf)}
	}
	res, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	s.resp.Reset()
	_, err = s.resp.ReadFrom(io.LimitReader(res.Body, 64<<20))
	res.Body.Close()
	if err != nil {
		return 0, err
	}
	if res.StatusCode == http.StatusTooManyRequests {
		s.after = retryAfter(res.Header.Get("Retry-After"), time.Now(), t.o.MaxRetryAfter)
	}
	return res.StatusCode, nil
}

// read classifies one payment's answer and, when it is pending, hands it
// to the confirmer with the system's id for it.
func (s *submitter) read(code int, body []byte, id sut.TxID, i int) sut.Receipt {
	t := s.t
	r := t.classify(code, body)
	if r.Status == sut.Pending && t.conf != nil {
		remote := ""
		if len(t.field.id) > 0 {
			remote, _ = jsonparser.GetString(body, t.field.id...)
		}
		t.conf.register(id, remote, i)
	}
	return r
}

// keyHex is the idempotency key as the system sees it.
func keyHex(id sut.TxID) string { return hex.EncodeToString(id[:]) }
