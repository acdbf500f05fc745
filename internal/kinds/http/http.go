// Package http is the kind of any payment system behind a REST API,
// measured through the generic HTTP target: the scenario's http section describes the
// request and the answers. Payments are the reference ledger's signed
// payments, in whatever form the request template gives them. The ledger
// service's kind is this one with its API's defaults.
package http

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/httpapi"
	"github.com/tpslab/tpslab/internal/targets/ledgerclient"
	"github.com/tpslab/tpslab/internal/workload"
)

// API is the HTTP target and the ledger's payments, for any REST API.
type API struct {
	// Defaults fills what the http section leaves empty (a known API's shape).
	Defaults func(Settings, *scenario.Scenario) Settings
	// Genesis asks the service which ledger it keeps, for endpoints given
	// without workload.genesis_seed; nil: the scenario must say.
	Genesis func(ctx context.Context, endpoint string) (string, chain.Genesis, error)
}

// Settings are a REST payment API (the scenario's `http:` section; the
// ledger kind reads it too): how a payment is posted ({{placeholders}} in
// path, headers and body), how the answer reads, and how a payment is
// confirmed. For kind ledger every empty field takes the
// reference service's value.
type Settings struct {
	Method          string            `yaml:"method" json:"method,omitempty"`
	Path            string            `yaml:"path" json:"path,omitempty"`
	Headers         []string          `yaml:"headers" json:"headers,omitempty"` // "Name: value"
	Body            string            `yaml:"body" json:"body,omitempty"`
	Accept          []int             `yaml:"accept" json:"accept,omitempty"` // status codes of an accepted payment (default 2xx)
	StatusField     string            `yaml:"status_field" json:"status_field,omitempty"`
	Committed       []string          `yaml:"committed" json:"committed,omitempty"`
	Failed          []string          `yaml:"failed" json:"failed,omitempty"`
	ReasonField     string            `yaml:"reason_field" json:"reason_field,omitempty"`
	DetailField     string            `yaml:"detail_field" json:"detail_field,omitempty"`
	IDField         string            `yaml:"id_field" json:"id_field,omitempty"`
	Confirm         string            `yaml:"confirm" json:"confirm"` // sync | poll | callback
	PollPath        string            `yaml:"poll_path" json:"poll_path,omitempty"`
	PollInterval    scenario.Duration `yaml:"poll_interval" json:"poll_interval,omitempty"`
	CallbackListen  string            `yaml:"callback_listen" json:"callback_listen,omitempty"`
	HealthPath      string            `yaml:"health_path" json:"health_path,omitempty"`
	AccountPath     string            `yaml:"account_path" json:"account_path,omitempty"`
	SequenceField   string            `yaml:"sequence_field" json:"sequence_field,omitempty"`
	ThrottleRetries int               `yaml:"throttle_retries" json:"throttle_retries,omitempty"`
	MaxRetryAfter   scenario.Duration `yaml:"max_retry_after" json:"max_retry_after,omitempty"`
	Timeout         scenario.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// BatchSize > 1 posts payments in JSON arrays of up to this many
	// bodies to BatchPath (default: path); docs/http-target.md.
	BatchSize int    `yaml:"batch_size" json:"batch_size,omitempty"`
	BatchPath string `yaml:"batch_path" json:"batch_path,omitempty"`
}

// MaxBatch bounds http.batch_size.
const MaxBatch = 10_000

// Settings are the defaults, in the section http.
func (API) Settings() (string, any) { return "http", &Settings{Confirm: "sync"} }

// Moved: the settings were target.http.
func (API) Moved() map[string]string { return map[string]string{"target.http": "http"} }

// SettingsOf is the scenario's http section.
func SettingsOf(sc *scenario.Scenario) *Settings { return kinds.SectionOf[Settings](sc, "http") }

// ValidateAPI checks what can be checked of an HTTP API's description
// before it is parsed (placeholders are checked when the target is built).
func (h *Settings) validate() error {
	if h.Path == "" {
		return fmt.Errorf("http.path: empty, expected the payment request's path, e.g. /payments")
	}
	if h.Method != "" && !slices.Contains([]string{"POST", "PUT", "PATCH", "GET"}, h.Method) {
		return fmt.Errorf("http.method: %q, expected one of [POST PUT PATCH GET]", h.Method)
	}
	if !slices.Contains([]string{"sync", "poll", "callback"}, h.Confirm) {
		return fmt.Errorf("http.confirm: %q, expected one of [sync poll callback]", h.Confirm)
	}
	if h.Confirm == "poll" && h.PollPath == "" {
		return fmt.Errorf("http.poll_path: empty, expected the status URL's path (e.g. /payments/{{id}}) for confirm poll")
	}
	if h.BatchSize < 0 || h.BatchSize > MaxBatch {
		return fmt.Errorf("http.batch_size: %d, expected 0..%d (0 or 1: each payment in its own request)", h.BatchSize, MaxBatch)
	}
	if h.ThrottleRetries < 0 || h.ThrottleRetries > 1000 {
		return fmt.Errorf("http.throttle_retries: %d, expected 0..1000", h.ThrottleRetries)
	}
	for _, d := range []struct {
		path string
		v    scenario.Duration
	}{{"http.poll_interval", h.PollInterval}, {"http.max_retry_after", h.MaxRetryAfter}, {"http.timeout", h.Timeout}} {
		if d.v < 0 || d.v.D() > time.Hour {
			return fmt.Errorf("%s: %s, expected a duration between 0s and 1h0m0s", d.path, d.v.D())
		}
	}
	return nil
}

// Kind is any REST payment API.
type Kind struct{ API }

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "http", About: "any REST payment API the scenario's http section describes: request template, answer rules, sync, poll or callback confirmation"}
}

// Validate needs the API's base URL and a described request.
func (Kind) Validate(sc *scenario.Scenario) error {
	if t := sc.Target; len(t.Endpoints) == 0 && t.NetHome == "" {
		return fmt.Errorf("target.endpoints: empty, expected the API's base URL for target kind http (--endpoint)")
	}
	return SettingsOf(sc).validate()
}

// decodePayment reads the reference ledger's payment for the templates (a
// batch's fields are its first output's: only {{tx}} carries all of it).
func decodePayment(tx []byte, f *httpapi.Fields) error {
	p, err := chain.Decode(tx)
	if err != nil {
		return err
	}
	a := chain.AddressOf(p.Sender)
	f.ChainID, f.SenderPub, f.Recipient = p.ChainID, p.Sender, append(f.Recipient[:0], p.Recipient[:]...)
	f.Sender = append(f.Sender[:0], a[:]...)
	f.Amount, f.Sequence, f.Signature = p.Amount, p.Sequence, p.Signature
	return nil
}

// Target is the HTTP target on the endpoints.
func (k API) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	if t.Broadcast != "sync" || t.Confirm != "websocket" {
		return nil, exitcode.BadInputf("target.broadcast and target.confirm are for chains: an HTTP API is confirmed as http.confirm says (sync | poll | callback)")
	}
	h := *SettingsOf(sc)
	if k.Defaults != nil {
		h = k.Defaults(h, sc)
	}
	chainID := sc.Workload.ChainID
	if sys.Net != nil && chainID == "" {
		chainID = sys.Net.ChainID
	}
	tgt, err := httpapi.New(httpapi.Options{Endpoints: append([]string(nil), sys.Endpoints...), ChainID: chainID,
		Method: h.Method, Path: h.Path, Headers: h.Headers, Body: h.Body, Accept: h.Accept,
		StatusField: h.StatusField, Committed: h.Committed, Failed: h.Failed, ReasonField: h.ReasonField, DetailField: h.DetailField,
		IDField: h.IDField, Confirm: h.Confirm, PollPath: h.PollPath, PollInterval: h.PollInterval.D(), GiveUp: sc.CommitTimeout.D(),
		CallbackListen: h.CallbackListen, HealthPath: h.HealthPath, AccountPath: h.AccountPath, SequenceField: h.SequenceField,
		ThrottleRetries: h.ThrottleRetries, MaxRetryAfter: h.MaxRetryAfter.D(), Timeout: h.Timeout.D(),
		Connections: sc.Load.MostConnections(), Decode: decodePayment, BatchSize: h.BatchSize, BatchPath: h.BatchPath})
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload is the reference ledger's payments: keys derived from the
// genesis seed (the service's, or workload.genesis_seed for any API),
// sequences read through the account path.
func (k API) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*httpapi.Target)
	w := sc.Workload
	if w.Kind != "payment" {
		return nil, exitcode.BadInputf("workload.kind: %q, expected payment for an HTTP payment API", w.Kind)
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tgt.Probe(qctx); err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %s does not answer: %w", strings.Join(sys.Endpoints, ", "), err))
	}
	var chainID string
	var g chain.Genesis
	switch {
	case sys.Net != nil:
		chainID, g = sys.Net.ChainID, sys.Net.Genesis
	case k.Genesis != nil:
		var err error
		if chainID, g, err = k.Genesis(qctx, sys.Endpoints[0]); err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
	default:
		if w.ChainID == "" || w.GenesisSeed == "" || w.Accounts == 0 {
			return nil, exitcode.BadInputf("workload.chain_id, workload.genesis_seed and workload.accounts: expected all three for target kind http (the payments are signed with keys derived from the seed)")
		}
	}
	chainID, g, err := kinds.LedgerGenesis(sc, chainID, g)
	if err != nil {
		return nil, err
	}
	client := ledgerclient.NewClientNonce(chainID, g, w.Padding, func(ctx context.Context, a chain.Address) (uint64, error) {
		return tgt.Sequence(ctx, a[:])
	})
	p, err := workload.NewPayments(ctx, kinds.PaymentsConfig(sc), client)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}
