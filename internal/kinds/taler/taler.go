// Package taler is the kind of the GNU Taler exchange (v0.9.2): wallets
// that fund reserves, withdraw coins and pay merchants with them; the
// payments measured are the deposits, counted committed when found in the
// exchange's database. tpslab starts an exchange (built once from its
// source) on a private PostgreSQL with its fakebank, or takes an exchange's
// URLs. See docs/taler.md.
package taler

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	talerapi "github.com/tpslab/tpslab/internal/targets/taler"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/talernet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is the Taler exchange.
type Kind struct{}

// Settings are the scenario's `taler:` section.
type Settings struct {
	// Prefix is an installed exchange (bin/taler-exchange-httpd, ...);
	// empty: built once from its source into tpslab's cache.
	Prefix            string `yaml:"prefix" json:"prefix,omitempty"`
	Processes         int    `yaml:"processes" json:"processes"` // taler-exchange-httpd processes tpslab starts
	Currency          string `yaml:"currency" json:"currency"`
	SynchronousCommit string `yaml:"synchronous_commit" json:"synchronous_commit"` // the exchange database's
	// Coins are the coins the wallets withdraw before the load, each a
	// payment lane (one deposit in flight at a time, as a wallet spends
	// a coin); CoinValue is their value and Deposit what each deposit
	// pays (a coin pays CoinValue/Deposit deposits), in the currency.
	Coins     int    `yaml:"coins" json:"coins"`
	CoinValue string `yaml:"coin_value" json:"coin_value"`
	Deposit   string `yaml:"deposit" json:"deposit"`
	Merchants int    `yaml:"merchants" json:"merchants"` // drawn by workload.recipient_choice (zipf: the thesis's skew)
	Reserves  int    `yaml:"reserves" json:"reserves"`   // reserves the coins are withdrawn from, in parallel
	// Denominations are more coin values the exchange offers (net up),
	// comma-separated; a mix's withdrawals (workload.mix kind withdraw)
	// take a coin of each in turn (empty: of coin_value).
	Denominations string `yaml:"denominations" json:"denominations,omitempty"`
	// For an exchange tpslab did not start: its database (to count
	// deposits; without it the exchange's answers are counted) and its
	// bank account's wire gateway and the customers' account that funds
	// reserves.
	DatabaseURL string `yaml:"database_url" json:"database_url,omitempty"`
	BankGateway string `yaml:"bank_gateway" json:"bank_gateway,omitempty"`
	DebitPayto  string `yaml:"debit_payto" json:"debit_payto,omitempty"`
}

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "taler", MixKinds: []string{"deposit", "withdraw"}, About: "the GNU Taler exchange 0.9.2 (built from source, on a private PostgreSQL with its fakebank), or its URLs: coins withdrawn, deposits measured", Faults: true, Links: true}
}

// Settings are the defaults.
func (Kind) Settings() (string, any) {
	return "taler", &Settings{Processes: 1, Currency: "KUDOS", SynchronousCommit: "on", Coins: 500, CoinValue: "10", Deposit: "0.01", Merchants: 100, Reserves: 16}
}

// SettingsOf is the scenario's taler section.
func SettingsOf(sc *scenario.Scenario) *Settings { return kinds.SectionOf[Settings](sc, "taler") }

// Flags set the exchange's settings.
func (Kind) Flags() []kinds.Flag {
	return []kinds.Flag{
		{Name: "taler-prefix", Path: "taler.prefix", Help: "taler: an installed exchange (empty: built once from its source into the cache)", NetUp: true},
		{Name: "exchange-processes", Path: "taler.processes", Help: "taler: taler-exchange-httpd processes", NetUp: true},
		{Name: "taler-synchronous-commit", Path: "taler.synchronous_commit", Help: "taler: the exchange database's synchronous_commit: on | off | local | remote_write | remote_apply", NetUp: true},
		{Name: "coins", Path: "taler.coins", Help: "taler: coins withdrawn before the load, each a lane of deposits"},
		{Name: "denominations", Path: "taler.denominations", Help: "taler: more coin values the exchange offers, comma-separated; a mix's withdrawals take each in turn", NetUp: true},
		{Name: "merchants", Path: "taler.merchants", Help: "taler: merchants paid (drawn by --recipient-dist: zipf is the thesis's skew)"},
		{Name: "taler-db", Path: "taler.database_url", Help: "taler: the exchange's PostgreSQL URL, to count deposits (an exchange tpslab did not start)"},
	}
}

func (s *Settings) validate() error {
	switch {
	case s.Processes < 1 || s.Processes > 32:
		return fmt.Errorf("taler.processes: %d, expected 1..32", s.Processes)
	case s.Coins < 1 || s.Coins > 100_000:
		return fmt.Errorf("taler.coins: %d, expected 1..100000", s.Coins)
	case s.Merchants < 1 || s.Merchants > 1_000_000:
		return fmt.Errorf("taler.merchants: %d, expected 1..1000000", s.Merchants)
	case s.Reserves < 1 || s.Reserves > s.Coins:
		return fmt.Errorf("taler.reserves: %d, expected 1..taler.coins (%d)", s.Reserves, s.Coins)
	case s.Currency == "" || len(s.Currency) > 11 || strings.Trim(s.Currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
		return fmt.Errorf("taler.currency: %q, expected 1..11 capital letters", s.Currency)
	}
	if s.BankGateway != "" {
		if u, err := url.Parse(s.BankGateway); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("taler.bank_gateway: %q, expected the exchange account's wire gateway URL (http(s)://...)", s.BankGateway)
		}
	}
	if s.DebitPayto != "" && !strings.HasPrefix(s.DebitPayto, "payto://") {
		return fmt.Errorf("taler.debit_payto: %q, expected a payto:// URI of the account that funds the reserves", s.DebitPayto)
	}
	v, err := talerapi.ParseAmount(s.Currency + ":" + s.CoinValue)
	if err != nil || v.Units() == 0 {
		return fmt.Errorf("taler.coin_value: %q, expected a positive decimal (the coins' value in %s)", s.CoinValue, s.Currency)
	}
	d, err := talerapi.ParseAmount(s.Currency + ":" + s.Deposit)
	if err != nil || d.Units() == 0 || d.Units() > v.Units() {
		return fmt.Errorf("taler.deposit: %q, expected a positive decimal up to the coin value %s", s.Deposit, s.CoinValue)
	}
	if _, err := s.denominations(); err != nil {
		return err
	}
	switch s.SynchronousCommit {
	case "on", "off", "local", "remote_write", "remote_apply":
	default:
		return fmt.Errorf("taler.synchronous_commit: %q, expected one of on, off, local, remote_write, remote_apply", s.SynchronousCommit)
	}
	if s.DatabaseURL != "" {
		if u, err := url.Parse(s.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return fmt.Errorf("taler.database_url: %q, expected postgres://...", s.DatabaseURL)
		}
	}
	return nil
}

// denominations are the coin values a mix's withdrawals take (CUR:V),
// coin_value when none are listed.
func (s *Settings) denominations() ([]string, error) {
	if strings.TrimSpace(s.Denominations) == "" {
		return []string{s.Currency + ":" + s.CoinValue}, nil
	}
	var out []string
	for _, v := range strings.Split(s.Denominations, ",") {
		a, err := talerapi.ParseAmount(s.Currency + ":" + strings.TrimSpace(v))
		if err != nil || a.Units() == 0 || a.Value > 1_000_000 {
			return nil, fmt.Errorf("taler.denominations: %q, expected coin values separated by commas, each a positive decimal up to 1000000", s.Denominations)
		}
		out = append(out, a.String())
	}
	return out, nil
}

// offered are the coin values an exchange tpslab starts offers: coin_value
// and the denominations.
func (s *Settings) offered() []string {
	out := []string{s.Currency + ":" + s.CoinValue}
	ds, _ := s.denominations()
	for _, d := range ds {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Validate checks the section.
func (Kind) Validate(sc *scenario.Scenario) error {
	if sc.Workload.Kind != "payment" {
		return fmt.Errorf("workload.kind: %q, expected payment (a Taler payment is a coin's deposit)", sc.Workload.Kind)
	}
	for _, m := range sc.Workload.Mix {
		if m.Kind == "withdraw" && math.IsInf(sc.Load.MaxOffers(), 1) {
			return fmt.Errorf("workload.mix: withdraw with closed-model users that never pause, expected load.pacing (the reserves are funded for every withdrawal before the load)")
		}
	}
	return SettingsOf(sc).validate()
}

// Target is the exchange's httpd processes; the database, when known,
// confirms deposits.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	s := SettingsOf(sc)
	urls, db := append([]string(nil), sys.Endpoints...), s.DatabaseURL
	if n := sys.Net; n != nil && talernet.Of(n) != nil {
		urls, db = append([]string(nil), talernet.Of(n).URLs...), talernet.Of(n).DatabaseURL
	}
	if len(urls) == 0 {
		return nil, exitcode.BadInputf("target.endpoints: none, expected the exchange's base URL (or a network: --net-home)")
	}
	return talerapi.NewTarget(urls, db, max(s.Coins, sc.Load.MostConnections())), nil
}

// bankOf is the bank tpslab funds reserves through.
func bankOf(sys *kinds.System, s *Settings) (talerapi.Bank, string, error) {
	if n := sys.Net; n != nil && talernet.Of(n) != nil {
		ex := talernet.Of(n)
		return talerapi.Bank{Gateway: ex.Gateway, Debit: ex.Debit}, ex.BankHost, nil
	}
	if s.BankGateway == "" || s.DebitPayto == "" {
		return talerapi.Bank{}, "", exitcode.BadInputf("taler.bank_gateway and taler.debit_payto: expected both for an exchange tpslab did not start (reserves are funded through its bank's wire gateway)")
	}
	u, err := url.Parse(s.BankGateway)
	if err != nil || u.Host == "" {
		return talerapi.Bank{}, "", exitcode.BadInputf("taler.bank_gateway: %q, expected the exchange account's wire gateway URL", s.BankGateway)
	}
	return talerapi.Bank{Gateway: s.BankGateway, Debit: s.DebitPayto}, u.Host, nil
}

// Workload withdraws the coins (the wallets' set-up, measured and noted)
// and pays merchants with them.
func (Kind) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*talerapi.Target)
	s := SettingsOf(sc)
	bank, host, err := bankOf(sys, s)
	if err != nil {
		return nil, err
	}
	kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	keys, err := tgt.Keys(kctx)
	cancel()
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	value, _ := talerapi.ParseAmount(keys.Currency + ":" + s.CoinValue)
	deposit, _ := talerapi.ParseAmount(keys.Currency + ":" + s.Deposit)
	denom, ok := keys.Withdrawable(value, time.Now())
	if !ok {
		return nil, exitcode.BadInputf("taler.coin_value: %s, expected a value the exchange offers now (%s)", value, keys.Values(time.Now()))
	}
	coins, st, err := talerapi.WithdrawCoins(ctx, tgt, bank, denom, s.Coins, s.Reserves)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	sys.Tell(st.String())
	seed := []byte(fmt.Sprintf("%d %d", sc.Seed, time.Now().UnixNano()))
	codec := &talerapi.Codec{Coins: coins, Amount: deposit, Seed: seed}
	if err := withdrawals(ctx, sys, sc, tgt, bank, keys, codec); err != nil {
		return nil, err
	}
	for i := 0; i < s.Merchants; i++ {
		codec.Merchants = append(codec.Merchants, talerapi.NewMerchant(seed, i, host))
	}
	cfg := kinds.PaymentsConfig(sc)
	cfg.Senders, cfg.Offset, cfg.Window = len(coins), 0, 1
	cfg.Wallets = true // a closed-model user spends its coins in turn
	p, err := workload.NewPayments(ctx, cfg, codec)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	if sys.Net == nil && s.DatabaseURL == "" && sys.Warn != nil {
		sys.Warn("taler: no taler.database_url: a deposit counts as committed on the exchange's 200 answer, not found in its deposits table (a replayed deposit is answered 200 too)")
	}
	if sys.AtEnd != nil {
		sys.AtEnd(func() []string {
			var per []string
			for _, st := range tgt.Pool().EndpointStats() {
				per = append(per, fmt.Sprint(st.Accepted))
			}
			return []string{fmt.Sprintf("taler: the exchange's signature checked on %d deposit confirmations, %d did not verify", tgt.Checked.Load(), tgt.BadSigs.Load()),
				fmt.Sprintf("taler: requests taken per exchange process (deposits, and withdrawals where the mix has them): %s; each taler-exchange-httpd serves one request at a time (one thread, one database connection), so more processes (taler.processes) scale it until the database or the cores limit (docs/taler.md)", strings.Join(per, ", "))}
		})
	}
	return p, nil
}

// StartNet starts an exchange for a run.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	no := kinds.FromScenario(sc, o, "taler", "", 0, 0)
	return k.Up(ctx, no)
}

// NetDefaults: the exchange's settings are checked; validators and chain
// settings do not apply.
func (Kind) NetDefaults(o *kinds.NetOptions, changed func(string) bool) error {
	for _, f := range []string{"validators", "rpc-nodes", "client-links"} {
		if changed(f) {
			return exitcode.BadInputf("--%s: not for a Taler exchange (it has no validators or peers; its one emulated link, --topology, is between its processes and PostgreSQL)", f)
		}
	}
	return exitcode.Wrap(exitcode.BadInput, SettingsOf(o.Scenario).validate())
}

// Up builds the exchange when needed and starts it.
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	s := SettingsOf(o.Scenario)
	if err := s.validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	prefix := s.Prefix
	if prefix == "" {
		var err error
		if prefix, err = talernet.Exchange(o.Log); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(o.Log, "starting the Taler exchange %s in %s: %d httpd process(es), currency %s, coins of %s\n",
		talernet.Version, o.Home, s.Processes, s.Currency, s.CoinValue)
	return talernet.Up(ctx, talernet.Options{Kind: o.Kind, Home: o.Home, Prefix: prefix, Processes: s.Processes, Currency: s.Currency,
		DatabaseLink: o.Topology, Binary: o.Tpslab, Coins: s.offered(), SynchronousCommit: s.SynchronousCommit, Bind: o.Bind, Reset: o.Reset, Owner: o.Owner, Log: o.Log})
}

// Status: deposits in the database as HEIGHT.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	return talernet.Status(ctx, n)
}

// Check audits the exchange's books.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit {
	lines, problems := talernet.Check(ctx, n)
	return kinds.Audit{Lines: lines, Problems: problems, OK: "ok: every reserve's credits equal its balance and withdrawals, every coin's deposits and remainder its value"}
}

// ServiceSettings: the exchange's section.
func (Kind) ServiceSettings(n *testnet.Net) any { return talernet.Of(n) }

// Telemetry reads the exchange database's statistics (slow statements,
// serialization failures, locks).
func (Kind) Telemetry(ctx context.Context, sys *kinds.System) ([]telemetry.Source, error) {
	db := ""
	if n := sys.Net; n != nil && talernet.Of(n) != nil {
		db = talernet.Of(n).DatabaseURL
	}
	if db == "" {
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pg, err := telemetry.NewPostgres(cctx, db)
	if err != nil {
		return nil, fmt.Errorf("the exchange's database statistics: %w", err)
	}
	return []telemetry.Source{pg}, nil
}

// withdrawals prepare a mix's withdrawals (workload.mix kind withdraw):
// taler.reserves reserves, each funded for every withdrawal the load can
// make (the money is the fakebank's; a skewed sender choice may send all
// of them to one reserve), credited before the load, and the
// denominations the withdrawals take in turn.
func withdrawals(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, tgt *talerapi.Target, bank talerapi.Bank, keys *talerapi.Keys, codec *talerapi.Codec) error {
	var share, sum float64
	for _, m := range sc.Workload.Mix {
		sum += m.Weight
		if m.Kind == "withdraw" {
			share = m.Weight
		}
	}
	if share == 0 {
		return nil
	}
	offers := sc.Load.MaxOffers()
	if math.IsInf(offers, 1) {
		return exitcode.BadInputf("workload.mix: withdraw with closed-model users that never pause, expected load.pacing (the reserves are funded for every withdrawal before the load)")
	}
	n := uint64(math.Ceil(offers*share/sum*1.2)) + 20
	if n > 1_000_000 {
		return exitcode.BadInputf("workload.mix: withdraw %.0f%% of up to %.0f payments, expected at most 1000000 withdrawals in a run", 100*share/sum, offers)
	}
	s := SettingsOf(sc)
	values, _ := s.denominations()
	most := uint64(0)
	for _, v := range values {
		a, _ := talerapi.ParseAmount(v)
		d, ok := keys.Withdrawable(a, time.Now())
		if !ok {
			return exitcode.BadInputf("taler.denominations: %s, expected values the exchange offers now (%s)", a, keys.Values(time.Now()))
		}
		codec.Denoms = append(codec.Denoms, d)
		most = max(most, d.Value.Units()+d.FeeWithdraw.Units())
	}
	amount := talerapi.FromUnits(keys.Currency, n*most)
	start := time.Now()
	for r := 0; r < s.Reserves; r++ {
		codec.Reserves = append(codec.Reserves, talerapi.NewReserve())
		if err := bank.Fund(ctx, tgt.Client(), codec.Reserves[r], amount); err != nil {
			return exitcode.Wrap(exitcode.TargetFailed, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for r, rs := range codec.Reserves {
		if err := talerapi.WaitReserve(wctx, tgt.Client(), tgt.Pool().URLs[r%len(tgt.Pool().URLs)], rs, amount); err != nil {
			return exitcode.Wrap(exitcode.TargetFailed, err)
		}
	}
	msg := fmt.Sprintf("taler: %d reserves for the mix's withdrawals, each funded with %s (%d withdrawals of the largest coin) and credited in %.1f s; coins of %s in turn",
		s.Reserves, amount, n, time.Since(start).Seconds(), strings.Join(values, ", "))
	sys.Tell(msg)
	return nil
}
