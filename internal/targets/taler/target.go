package taler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// Target is one exchange (its httpd processes, spread over as a pool):
// deposits are posted to /coins/$COIN/deposit; with the exchange's
// database URL a confirmer finds each in its deposits table, else the
// exchange's 200 answer is final.
type Target struct {
	pool  *sut.Pool
	cl    *http.Client
	dbURL string
	mu    sync.Mutex
	keys  *Keys
	// from are the highest deposit and withdrawal serial ids before the
	// load, plus one (read by the first Probe): the confirmer reads the
	// rows after them.
	from [2]atomic.Int64
	// Checked and BadSigs count the deposit confirmations whose exchange
	// signature was checked, and those that did not verify.
	Checked, BadSigs atomic.Int64
}

// NewTarget is an exchange at urls (base URLs); dbURL, when not empty, is
// its PostgreSQL database, read to confirm deposits.
func NewTarget(urls []string, dbURL string, conns int) *Target {
	tr := &http.Transport{MaxIdleConnsPerHost: max(conns, 2), MaxConnsPerHost: 0, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext}
	t := &Target{cl: &http.Client{Transport: tr, Timeout: 30 * time.Second}, dbURL: dbURL}
	for i := range urls {
		urls[i] = strings.TrimSuffix(urls[i], "/") + "/"
	}
	t.pool = sut.NewPool(urls, t.ProbeEndpoint)
	return t
}

// Client is the target's HTTP client (for the wallet's set-up).
func (t *Target) Client() *http.Client { return t.cl }

// URL is endpoint 0's base URL.
func (t *Target) URL() string { return t.pool.URLs[0] }

// Pool spreads deposits over the exchange's processes.
func (t *Target) Pool() *sut.Pool { return t.pool }

// Keys are the exchange's /keys, read on the first Probe.
func (t *Target) Keys(ctx context.Context) (*Keys, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys != nil {
		return t.keys, nil
	}
	k, err := FetchKeys(ctx, t.cl, t.pool.URLs[0])
	if err != nil {
		return nil, err
	}
	t.keys = k
	return k, nil
}

// Probe reads /keys: the chain id is the exchange's currency.
func (t *Target) Probe(ctx context.Context) (sut.Info, error) {
	k, err := t.Keys(ctx)
	if err != nil {
		return sut.Info{}, err
	}
	if t.dbURL != "" && t.from[0].Load() == 0 {
		d, w, err := highestRows(ctx, t.dbURL)
		if err != nil {
			return sut.Info{}, err
		}
		t.from[1].Store(w + 1)
		t.from[0].Store(d + 1) // +1: 0 means not read yet
	}
	return sut.Info{ChainID: "taler-" + k.Currency, Version: "taler protocol " + k.Version}, nil
}

// ProbeEndpoint asks exchange process i for /config.
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	status, body, err := call(ctx, t.cl, http.MethodGet, t.pool.URLs[i]+"config", nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("/config: HTTP %d: %s", status, snippet(body))
	}
	return nil
}

// Submitter i posts deposits to process i (or the next one up).
func (t *Target) Submitter(i int) sut.Submitter { return &submitter{t: t, pref: i} }

// Confirmer reads the exchange's deposits table, or nil without its URL.
func (t *Target) Confirmer() sut.Confirmer {
	if t.dbURL == "" {
		return nil
	}
	return &confirmer{url: t.dbURL, from: &t.from}
}

// Close closes idle connections.
func (t *Target) Close() error {
	t.cl.CloseIdleConnections()
	return nil
}

type submitter struct {
	t    *Target
	pref int
	url  []byte
}

// Submit posts one deposit.
func (s *submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	if len(tx.Bytes) < depositHead {
		return sut.Receipt{Status: sut.Rejected, Reason: "not_a_deposit"}
	}
	i, _ := s.t.pool.Pick(s.pref)
	withdraw := IsWithdraw(tx.Bytes)
	if withdraw {
		s.url = append(append(s.url[:0], s.t.pool.URLs[i]...), "reserves/"...)
		s.url = crock.AppendEncode(s.url, tx.Bytes[:32])
		s.url = append(s.url, "/withdraw"...)
	} else {
		s.url = append(append(s.url[:0], s.t.pool.URLs[i]...), "coins/"...)
		s.url = crock.AppendEncode(s.url, tx.Bytes[:32])
		s.url = append(s.url, "/deposit"...)
	}
	status, ans, err := call(ctx, s.t.cl, http.MethodPost, string(s.url), tx.Bytes[depositHead:])
	if err != nil {
		if ctx.Err() == nil {
			s.t.pool.TransportError(i)
		}
		var ne net.Error
		if errors.As(err, &ne) && !ne.Timeout() && strings.Contains(err.Error(), "connection refused") {
			s.t.pool.Down(i, err)
			return sut.Receipt{Status: sut.Rejected, Reason: "connection_refused", Detail: err.Error(), Endpoint: i}
		}
		return sut.Receipt{Status: sut.Unacked, Reason: "transport_error", Detail: err.Error(), Endpoint: i}
	}
	var r sut.Receipt
	if withdraw {
		r = s.t.withdrawn(status, ans)
	} else {
		r = s.t.answer(status, ans, tx.Bytes)
	}
	r.Endpoint = i
	s.t.pool.Count(i, r.Status)
	return r
}

// answer reads the exchange's answer to a deposit.
func (t *Target) answer(status int, ans, tx []byte) sut.Receipt {
	if status == http.StatusOK {
		a, err := ParseDepositAnswer(ans)
		if err != nil {
			return sut.Unreadable(status, err.Error())
		}
		t.Checked.Add(1)
		if k := t.keys; k != nil && CheckConfirmation(k, tx, a) != nil {
			t.BadSigs.Add(1)
		}
		if t.dbURL == "" {
			return sut.Receipt{Status: sut.Committed}
		}
		return sut.Receipt{Status: sut.Pending}
	}
	return t.refused(status, ans)
}

// refused reads an exchange's error answer.
func (t *Target) refused(status int, ans []byte) sut.Receipt {
	var e struct {
		Code int    `json:"code"`
		Hint string `json:"hint"`
	}
	if status >= 500 || json.Unmarshal(ans, &e) != nil || e.Code == 0 {
		return sut.Unreadable(status, snippet(ans))
	}
	return sut.Receipt{Status: sut.Rejected, Reason: errorName(e.Code), Detail: strconv.Itoa(e.Code) + ": " + e.Hint}
}

// withdrawn reads the exchange's answer to a withdrawal: 200 with a
// blinded signature, found later in reserves_out (with the database).
func (t *Target) withdrawn(status int, ans []byte) sut.Receipt {
	if status == http.StatusOK {
		if _, err := ParseWithdrawAnswer(ans); err != nil {
			return sut.Unreadable(status, err.Error())
		}
		if t.dbURL == "" {
			return sut.Receipt{Status: sut.Committed}
		}
		return sut.Receipt{Status: sut.Pending}
	}
	return t.refused(status, ans)
}

// errorName names the exchange's error codes (GANA's taler error codes)
// a deposit meets under load; others are taler_ec_N.
func errorName(code int) string {
	switch code {
	case 1012:
		return "insufficient_funds"
	case 1205:
		return "bad_coin_signature"
	case 1009:
		return "denomination_expired"
	case 1005:
		return "unknown_denomination"
	case 1006:
		return "bad_denomination_signature"
	case 1003:
		return "conflicting_denomination"
	}
	return "taler_ec_" + strconv.Itoa(code)
}
