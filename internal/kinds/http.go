package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/sut/httpapi"
	"github.com/tpslab/tpslab/internal/sut/ledgerclient"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// restAPI is a payment system behind a REST API, measured through the
// generic HTTP target: tpslab's reference ledger service (kind ledger:
// tpslab starts it, or its URLs are given, and the request is the
// service's) or any API target.http describes (kind http). Payments are
// the reference ledger's signed payments, in whatever form the request
// template gives them.
type restAPI struct{ ledger bool }

// StartNet starts the ledger service on a private PostgreSQL.
func (k restAPI) StartNet(ctx context.Context, sc *scenario.Scenario, o runner.NetOptions) (*testnet.Net, error) {
	if !k.ledger {
		return nil, exitcode.BadInputf("target.kind: http: tpslab does not start such a service, expected target.endpoints (--endpoint)")
	}
	if err := sc.CheckAccounts(sc.Network.Accounts); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	g := testnet.DefaultGenesis()
	no := scenarioNet(sc, o, "ledger", g.Seed, sc.Network.Accounts, g.Balance)
	l := sc.Network.Ledger
	no.Ledger = pgnet.Options{Processes: l.Processes, Connections: l.DBConnections, Batch: l.Batch,
		SynchronousCommit: l.SynchronousCommit, Partition: l.Partition, Isolation: l.Isolation, MaxQueue: l.MaxQueue, BatchWait: l.BatchWait.D()}
	return Up(ctx, no)
}

// ledgerAPI is how the reference ledger service takes payments
// (docs/ledger-service.md): the fields of a signed payment as JSON, its id
// as the Idempotency-Key; a callback_url or `Prefer: respond-async` for
// the asynchronous modes.
func ledgerAPI(h scenario.HTTP) scenario.HTTP {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	body := `{"chain_id":"{{chain_id}}","sender_pubkey":"{{sender_pubkey}}","recipient":"{{recipient}}","amount":{{amount}},"sequence":{{sequence}},"signature":"{{signature}}"`
	headers := []string{"Idempotency-Key: {{idempotency_key}}"}
	switch h.Confirm {
	case "callback":
		body += `,"callback_url":"{{callback_url}}"`
	case "poll":
		headers = append(headers, "Prefer: respond-async")
	}
	def(&h.Body, body+"}")
	if h.Headers == nil {
		h.Headers = headers
	}
	def(&h.Method, http.MethodPost)
	def(&h.Path, "/payments")
	def(&h.StatusField, "status")
	def(&h.ReasonField, "error")
	def(&h.DetailField, "detail")
	def(&h.IDField, "id")
	def(&h.PollPath, "/payments/{{id}}")
	def(&h.HealthPath, "/healthz")
	def(&h.AccountPath, "/accounts/{{sender}}")
	def(&h.SequenceField, "sequence")
	if h.Accept == nil {
		h.Accept = []int{200, 202}
	}
	if h.Failed == nil {
		h.Failed = []string{"rejected"}
	}
	return h
}

// decodePayment reads the reference ledger's payment for the templates.
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
func (k restAPI) Target(sys *runner.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	if t.Via != "rpc" || t.Broadcast != "sync" || t.Confirm != "websocket" {
		return nil, exitcode.BadInputf("target.via, target.broadcast and target.confirm are for chains: an HTTP API is confirmed as target.http.confirm says (sync | poll | callback)")
	}
	h := t.HTTP
	if k.ledger {
		h = ledgerAPI(h)
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
		Connections: sc.Load.Connections, Decode: decodePayment})
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload is the reference ledger's payments: keys derived from the
// genesis seed (the service's, or workload.genesis_seed for any API),
// sequences read through the account path.
func (k restAPI) Workload(ctx context.Context, sys *runner.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
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
	case k.ledger:
		var err error
		if chainID, g, err = serviceGenesis(qctx, sys.Endpoints[0]); err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
	default:
		if w.ChainID == "" || w.GenesisSeed == "" || w.Accounts == 0 {
			return nil, exitcode.BadInputf("workload.chain_id, workload.genesis_seed and workload.accounts: expected all three for target kind http (the payments are signed with keys derived from the seed)")
		}
	}
	if w.ChainID != "" {
		chainID = w.ChainID
	}
	if w.GenesisSeed != "" {
		g.Seed = w.GenesisSeed
	}
	if w.Accounts != 0 {
		g.Accounts = w.Accounts
	}
	if err := sc.CheckAccounts(g.Accounts); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	client := ledgerclient.NewClientNonce(chainID, g, w.Padding, func(ctx context.Context, a chain.Address) (uint64, error) {
		return tgt.Sequence(ctx, a[:])
	})
	p, err := workload.NewPayments(ctx, paymentsConfig(sc), client)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}

// serviceGenesis asks a ledger service which ledger it keeps.
func serviceGenesis(ctx context.Context, endpoint string) (string, chain.Genesis, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/genesis", nil)
	if err != nil {
		return "", chain.Genesis{}, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", chain.Genesis{}, err
	}
	defer res.Body.Close()
	var v struct {
		ChainID string        `json:"chain_id"`
		Genesis chain.Genesis `json:"genesis"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&v) != nil {
		return "", chain.Genesis{}, fmt.Errorf("%s/genesis: HTTP %d, expected the ledger service's genesis (is it tpslab's ledger service?)", endpoint, res.StatusCode)
	}
	return v.ChainID, v.Genesis, nil
}

// ledgerMetrics are the ledger service's own counters (its /metrics).
var ledgerMetrics = []telemetry.PromMetric{
	{Family: "ledger_payments_committed_total", Metric: telemetry.Metric{Name: "ledger.committed", Unit: "1/s", Rate: true, Better: "higher", Help: "payments the services committed to the database"}},
	{Family: "ledger_db_transactions_total", Metric: telemetry.Metric{Name: "ledger.db_transactions", Unit: "1/s", Rate: true, PerPayment: true, Help: "database transactions that committed payments (a batch is one)"}},
	{Family: "ledger_serialization_retries_total", Metric: telemetry.Metric{Name: "ledger.retries", Unit: "1/s", Rate: true, PerPayment: true, Better: "lower", Help: "database transactions retried after a serialization failure or deadlock"}},
	{Family: "ledger_throttled_total", Metric: telemetry.Metric{Name: "ledger.throttled", Unit: "1/s", Rate: true, Better: "lower", Help: "payments the services answered 429 (queue full)"}},
	{Family: "ledger_db_connections_in_use", Metric: telemetry.Metric{Name: "ledger.connections_in_use", Unit: "1", Help: "database connections the services hold in a transaction"}},
	{Family: "ledger_queue_payments", Metric: telemetry.Metric{Name: "ledger.queue", Unit: "1", Better: "lower", Help: "payments waiting in the services for a database connection"}},
}

// Telemetry reads the ledger service's counters and, for a local ledger,
// its PostgreSQL's statistics.
func (k restAPI) Telemetry(ctx context.Context, sys *runner.System) ([]telemetry.Source, error) {
	if !k.ledger {
		return nil, nil
	}
	var urls []string
	if n := sys.Net; n != nil {
		for _, nd := range n.Nodes {
			if nd.Metrics != "" {
				urls = append(urls, nd.Metrics)
			}
		}
	} else {
		for _, e := range sys.Endpoints {
			urls = append(urls, strings.TrimSuffix(e, "/")+"/metrics")
		}
	}
	srcs := []telemetry.Source{telemetry.NewPrometheus(urls, ledgerMetrics)}
	if n := sys.Net; n != nil && n.Ledger != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		pg, err := telemetry.NewPostgres(cctx, n.Ledger.DatabaseURL)
		if err != nil {
			return srcs, fmt.Errorf("the ledger's database statistics: %w", err)
		}
		srcs = append(srcs, pg)
	}
	return srcs, nil
}
