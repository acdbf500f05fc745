// Package ledger is the kind of tpslab's reference ledger service: payments
// over its REST API (the HTTP kind, with the service's request shape) into
// PostgreSQL with double entry; tpslab starts it on a private database or
// takes its URLs. It reads the service's counters and the database's
// statistics.
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	httpkind "github.com/tpslab/tpslab/internal/kinds/http"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is the ledger service.
type Kind struct{}

// api is the HTTP kind's target and workload with the service's shape.
var api = httpkind.API{Defaults: ledgerAPI, Genesis: serviceGenesis}

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "ledger", MixKinds: []string{"multi_send"}, About: "tpslab's ledger service on a private PostgreSQL (double entry, batch commit), or its URLs", Faults: true, Links: true, State: true}
}

// Validate: the service takes payments over its REST API only, with its
// own settings.
func (Kind) Validate(sc *scenario.Scenario) error {
	if c := httpkind.SettingsOf(sc).Confirm; !slices.Contains([]string{"sync", "poll", "callback"}, c) {
		return fmt.Errorf("http.confirm: %q, expected one of [sync poll callback]", c)
	}
	return kinds.SectionOf[Settings](sc, "ledger").validate()
}

// Target is the HTTP target with the service's request and answers.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	return api.Target(sys, sc)
}

// Workload is the ledger's payments, keys from the service's genesis.
func (Kind) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	return api.Workload(ctx, sys, sc, t)
}

// StartNet starts the ledger service on a private PostgreSQL.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	if err := sc.CheckAccounts(sc.Network.Accounts); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	g := testnet.DefaultGenesis()
	no := kinds.FromScenario(sc, o, "ledger", g.Seed, sc.Network.Accounts, g.Balance)
	if no.Binary == "" {
		no.Binary = o.Binary // the service is tpslab
	}
	return k.Up(ctx, no)
}

// Settings are what a database engineer tunes in the service
// (docs/ledger-service.md): the scenario's `ledger:` section.
type Settings struct {
	Processes         int               `yaml:"processes" json:"processes"`
	DBConnections     int               `yaml:"db_connections" json:"db_connections"` // per process
	Batch             int               `yaml:"batch" json:"batch"`                   // payments per database transaction
	SynchronousCommit string            `yaml:"synchronous_commit" json:"synchronous_commit"`
	Partition         string            `yaml:"partition" json:"partition"`             // none | hash | range
	Isolation         string            `yaml:"isolation" json:"isolation"`             // serializable | row-locks
	MaxQueue          int               `yaml:"max_queue" json:"max_queue,omitempty"`   // payments queued per process before 429 (0: 10000)
	BatchWait         scenario.Duration `yaml:"batch_wait" json:"batch_wait,omitempty"` // longest wait to fill a batch (0: 2ms)
}

// Settings are the defaults, in the section ledger.
func (Kind) Settings() (string, any) {
	return "ledger", &Settings{Processes: 1, DBConnections: 16, Batch: 1, SynchronousCommit: "on", Partition: "none", Isolation: "serializable"}
}

// ServiceSettings are the service's settings as its net.json section
// records them.
func (Kind) ServiceSettings(n *testnet.Net) any { return pgnet.Of(n) }

// Reads: the http section too (its empty fields take the service's API).
func (Kind) Reads() []string { return []string{"http"} }

// Moved: the settings were network.ledger.
func (Kind) Moved() map[string]string { return map[string]string{"network.ledger": "ledger"} }

// Flags set the service's settings, on run and net up alike.
func (Kind) Flags() []kinds.Flag {
	return []kinds.Flag{
		{Name: "processes", Path: "ledger.processes", Help: "ledger: service processes", NetUp: true},
		{Name: "db-connections", Path: "ledger.db_connections", Help: "ledger: database connections per process", NetUp: true},
		{Name: "batch", Path: "ledger.batch", Help: "ledger: payments per database transaction (batch commit)", NetUp: true},
		{Name: "synchronous-commit", Path: "ledger.synchronous_commit", Help: "ledger: PostgreSQL synchronous_commit: on | off | local | remote_write | remote_apply", NetUp: true},
		{Name: "partition", Path: "ledger.partition", Help: "ledger: the payment log's partitioning: none | hash | range", NetUp: true},
		{Name: "isolation", Path: "ledger.isolation", Help: "ledger: serializable (retried on serialization failures) | row-locks", NetUp: true},
		{Name: "batch-wait", Path: "ledger.batch_wait", Help: "ledger: longest wait to fill a batch (0: 2ms)", NetUp: true},
		{Name: "max-queue", Path: "ledger.max_queue", Help: "ledger: payments a process queues for the database before answering 429 (0: 10000)", NetUp: true},
	}
}

// validate checks the service's settings.
func (l *Settings) validate() error {
	switch {
	case l.Processes < 1 || l.Processes > 64:
		return fmt.Errorf("ledger.processes: %d, expected 1..64", l.Processes)
	case l.DBConnections < 1 || l.DBConnections > 500:
		return fmt.Errorf("ledger.db_connections: %d, expected 1..500 per process", l.DBConnections)
	case l.Processes*l.DBConnections > 900:
		return fmt.Errorf("ledger.db_connections: %d x %d processes, expected at most 900 database connections", l.DBConnections, l.Processes)
	case l.Batch < 1 || l.Batch > 10_000:
		return fmt.Errorf("ledger.batch: %d, expected 1..10000 payments per database transaction", l.Batch)
	case l.BatchWait < 0 || l.BatchWait.D() > time.Second:
		return fmt.Errorf("ledger.batch_wait: %s, expected 0..1s (0: 2ms)", l.BatchWait.D())
	case l.MaxQueue < 0 || l.MaxQueue > 1_000_000:
		return fmt.Errorf("ledger.max_queue: %d, expected 0..1000000 payments (0: 10000)", l.MaxQueue)
	}
	for _, c := range []struct {
		path, v string
		allowed []string
	}{
		{"ledger.synchronous_commit", l.SynchronousCommit, []string{"on", "off", "local", "remote_write", "remote_apply"}},
		{"ledger.partition", l.Partition, []string{"none", "hash", "range"}},
		{"ledger.isolation", l.Isolation, []string{"serializable", "row-locks"}},
	} {
		if !slices.Contains(c.allowed, c.v) {
			return fmt.Errorf("%s: %q, expected one of %v", c.path, c.v, c.allowed)
		}
	}
	return nil
}

// NetDefaults: every `net up` option applies; the service's own settings
// are checked.
func (Kind) NetDefaults(o *kinds.NetOptions, _ func(string) bool) error {
	if o.RPCNodes > 0 || o.ClientLinks {
		return exitcode.BadInputf("--rpc-nodes and --client-links: not for a ledger network, whose one emulated link (--topology) is between its services and PostgreSQL")
	}
	return exitcode.Wrap(exitcode.BadInput, kinds.SectionOf[Settings](o.Scenario, "ledger").validate())
}

// Up starts the service's processes on a private PostgreSQL.
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	if o.ChainID == "" {
		o.ChainID = "tpslab"
	}
	l := kinds.SectionOf[Settings](o.Scenario, "ledger")
	lo := pgnet.Options{Processes: l.Processes, Connections: l.DBConnections, Batch: l.Batch, SynchronousCommit: l.SynchronousCommit,
		Partition: l.Partition, Isolation: l.Isolation, MaxQueue: l.MaxQueue, BatchWait: l.BatchWait.D(), DatabaseLink: o.Topology}
	lo.Kind = o.Kind
	lo.Home, lo.ChainID, lo.Genesis, lo.Binary, lo.Bind, lo.Reset, lo.Owner, lo.Log = o.Home, o.ChainID,
		chain.Genesis{Seed: o.Seed, Accounts: o.Accounts, Balance: o.Balance, State: o.State}, o.Binary, o.Bind, o.Reset, o.Owner, o.Log
	if err := lo.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	fmt.Fprintf(o.Log, "starting the ledger service in %s: %d process(es), %d database connections each, batch %d, synchronous_commit %s, partition %s, isolation %s\n",
		o.Home, lo.Processes, lo.Connections, lo.Batch, lo.SynchronousCommit, lo.Partition, lo.Isolation)
	return pgnet.Up(ctx, lo)
}

// Status: the database's payment count as HEIGHT, its open connections as
// PEERS.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	return pgnet.Status(ctx, n)
}

// Check audits the double entry in the database.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit {
	lines, problems := pgnet.Check(ctx, n)
	return kinds.Audit{Lines: lines, Problems: problems, OK: "ok: supply conserved, every payment recorded once with a matching debit and credit, sequences gap-free"}
}

// ledgerAPI is how the reference ledger service takes payments
// (docs/ledger-service.md): the fields of a signed payment as JSON, its id
// as the Idempotency-Key; a callback_url or `Prefer: respond-async` for
// the asynchronous modes; with http.batch_size, arrays to /payments/batch
// (no Idempotency-Key: the service checks none in a batch).
func ledgerAPI(h httpkind.Settings, sc *scenario.Scenario) httpkind.Settings {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	body := `{"chain_id":"{{chain_id}}","sender_pubkey":"{{sender_pubkey}}","recipient":"{{recipient}}","amount":{{amount}},"sequence":{{sequence}},"signature":"{{signature}}"`
	for _, m := range sc.Workload.Mix {
		if m.Kind == "multi_send" { // a batch's outputs travel only in its signed bytes
			body = `{"tx":"{{tx}}"`
		}
	}
	headers := []string{"Idempotency-Key: {{idempotency_key}}"}
	if h.BatchSize > 1 {
		headers = nil // one request's header cannot name each payment's id
	}
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
	def(&h.BatchPath, "/payments/batch")
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
func (Kind) Telemetry(ctx context.Context, sys *kinds.System) ([]telemetry.Source, error) {
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
	if n := sys.Net; n != nil && pgnet.Of(n) != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		pg, err := telemetry.NewPostgres(cctx, pgnet.Of(n).DatabaseURL)
		if err != nil {
			return srcs, fmt.Errorf("the ledger's database statistics: %w", err)
		}
		srcs = append(srcs, pg)
	}
	return srcs, nil
}

// Capacities: the services' database connections (processes × the pool
// of each), against those they held in a transaction and the payments
// waiting for one.
func (Kind) Capacities(_ context.Context, sys *kinds.System, sc *scenario.Scenario) []report.Capacity {
	procs, conns := 0, 0
	if sys.Net != nil {
		if o := pgnet.Of(sys.Net); o != nil {
			procs, conns = o.Processes, o.Connections
		}
	}
	if procs == 0 {
		return nil // endpoints tpslab did not start: their pool is not known
	}
	return []report.Capacity{{Name: "db_connections", Class: report.CauseDatabase, Capacity: float64(procs * conns), Unit: "connections",
		From: fmt.Sprintf("%d process(es) × --db-connections %d", procs, conns), Use: ".connections_in_use", Saturation: ".queue",
		About: "the services' database connections", Relax: "ledger.db_connections"}}
}
