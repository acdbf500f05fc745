package taler_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/measure/measuretest"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/sut"
	talerapi "github.com/tpslab/tpslab/internal/targets/taler"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/talernet"
)

func tpslab(args ...string) (string, error) {
	root := cli.Root(all.Registry())
	root.SetArgs(args)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// prefix is the exchange: $TPSLAB_TALER_PREFIX, or built once into the
// cache from its source archive.
func prefix(t *testing.T) string {
	if p := os.Getenv("TPSLAB_TALER_PREFIX"); p != "" {
		return p
	}
	p, err := talernet.Exchange(os.Stderr)
	if err != nil {
		t.Fatalf("build the exchange: %v", err)
	}
	return p
}

// TestExchangeDeposits starts a real exchange with two httpd processes,
// measures deposits, and checks the count against the exchange's own
// deposits table, the books with net check, and that net down stops all.
func TestExchangeDeposits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the Taler exchange")
	}
	home := filepath.Join(t.TempDir(), "net")
	// tpslab's own program, not this test's, serves the database's link.
	if out, err := exec.Command(testbin.Path(t), "net", "up", "--kind", "taler", "--home", home, "--taler-prefix", prefix(t), "--exchange-processes", "2",
		"--denominations", "1,10", "--topology", "loopback").CombinedOutput(); err != nil {
		t.Fatalf("net up: %v\n%s", err, out)
	}
	n, err := testnet.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Down()
	ex := talernet.Of(n)
	if ex == nil || len(ex.URLs) != 2 || ex.MasterPub == "" || n.Links == nil || ex.ServiceDatabaseURL == "" {
		t.Fatalf("net.json's taler section: %+v, links %+v, expected two exchange URLs, a master key and the database's link", ex, n.Links)
	}
	t.Run("replay", func(t *testing.T) { replayCountsOnce(t, ex) })

	out := filepath.Join(t.TempDir(), "run")
	if log, err := tpslab("run", "--net-home", home, "--rate", "120", "--duration", "5s", "--warmup", "1s", "--drain", "5s",
		"--coins", "60", "--merchants", "20", "--recipient-dist", "zipf", "--out", out); err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	var res struct {
		Summary measure.Counts
		Notes   []string
	}
	measuretest.Result(t, out, &res)
	deposits := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`)
	// The replay test's one deposit is in the table too.
	if res.Summary.Committed != deposits-1 || res.Summary.Committed < 500 {
		t.Errorf("run committed %d, the exchange's deposits table holds %d besides the replay test's: expected equal, about 600", res.Summary.Committed, deposits-1)
	}
	if len(res.Summary.Rejected) != 0 {
		t.Errorf("deposits rejected: %v, expected none", res.Summary.Rejected)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"60 coins withdrawn", "signature checked on"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "0 did not verify") == false {
		t.Errorf("an exchange signature did not verify:\n%s", notes)
	}
	if out, err := tpslab("net", "check", "--home", home); err != nil {
		t.Errorf("net check: %v\n%s", err, out)
	}
	t.Run("closed model", func(t *testing.T) { walletsSpendEveryCoin(t, home, ex) })
	t.Run("withdraw mix", func(t *testing.T) { withdrawAndDeposit(t, home, ex) })
	t.Run("faults", func(t *testing.T) { faultsOnTheExchange(t, home, ex) })
	t.Run("database dies", func(t *testing.T) { databaseDies(t, home, ex) })
	if _, err := tpslab("net", "down", "--home", home); err != nil {
		t.Fatalf("net down: %v", err)
	}
	for _, nd := range n.Nodes {
		if nd.Alive() {
			t.Errorf("net down left %s (pid %d) running", nd.Name, nd.PID)
		}
	}
}

// withdrawAndDeposit runs a mix of deposits and withdrawals (issue 53):
// committed withdrawals equal the rows the exchange added to reserves_out
// for them (the set-up's coins aside), of both denominations, committed
// deposits the deposits' rows, and net check's books balance after.
func withdrawAndDeposit(t *testing.T, home string, ex *talernet.ExchangeNet) {
	d0 := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`)
	w0 := count(t, ex.DatabaseURL, `SELECT coalesce(max(reserve_out_serial_id), 0) FROM exchange.reserves_out`)
	out := filepath.Join(t.TempDir(), "mix")
	const coins = 40
	if log, err := tpslab("run", "--net-home", home, "--rate", "80", "--duration", "5s", "--warmup", "1s", "--drain", "5s",
		"--coins", strconv.Itoa(coins), "--denominations", "1,10", "--set", "workload.mix=[{kind: deposit, weight: 7}, {kind: withdraw, weight: 3}]", "--out", out); err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	var res struct {
		Summary struct {
			measure.Counts
			ByKind map[string]report.KindFigures `json:"by_kind"`
		}
	}
	measuretest.Result(t, out, &res)
	deposits := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`) - d0
	withdrawals := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.reserves_out WHERE reserve_out_serial_id > `+strconv.FormatInt(w0, 10)) - coins
	denoms := count(t, ex.DatabaseURL, `SELECT count(DISTINCT denominations_serial) FROM exchange.reserves_out WHERE reserve_out_serial_id > `+strconv.FormatInt(w0, 10))
	by := res.Summary.CommittedByKind
	t.Logf("committed %v; the tables gained %d deposits, %d withdrawals (of %d denominations); steady window by kind %+v", by, deposits, withdrawals, denoms, res.Summary.ByKind)
	if by["deposit"] != deposits || by["withdraw"] != withdrawals || by["withdraw"] < 50 || by["deposit"] < 200 {
		t.Errorf("committed %v, the tables gained %d deposits and %d withdrawals", by, deposits, withdrawals)
	}
	if denoms < 2 {
		t.Errorf("withdrawals of %d denominations, expected coins of 1 and of 10", denoms)
	}
	if w, ok := res.Summary.ByKind["withdraw"]; !ok || w.CommitMs.Count == 0 {
		t.Errorf("no latency of withdrawals in the steady window: %+v", res.Summary.ByKind)
	}
	if out, err := tpslab("net", "check", "--home", home); err != nil {
		t.Errorf("net check after withdrawals: %v\n%s", err, out)
	}
}

func count(t *testing.T, url, q string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var c int64
	if err := conn.QueryRow(context.Background(), q).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// replayCountsOnce: the exchange answers a replayed deposit 200 as it did
// the first, and its table holds it once: the confirmer, which reads the
// table, settles it once.
func replayCountsOnce(t *testing.T, ex *talernet.ExchangeNet) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt := talerapi.NewTarget(append([]string(nil), ex.URLs...), ex.DatabaseURL, 2)
	keys, err := tgt.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	value, _ := talerapi.ParseAmount(ex.Currency + ":" + strings.TrimPrefix(ex.Coins[0], ex.Currency+":"))
	d, ok := keys.Withdrawable(value, time.Now())
	if !ok {
		t.Fatalf("no denomination of %s: %s", value, keys.Values(time.Now()))
	}
	coins, _, err := talerapi.WithdrawCoins(ctx, tgt, talerapi.Bank{Gateway: ex.Gateway, Debit: ex.Debit}, d, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	amount, _ := talerapi.ParseAmount(ex.Currency + ":0.5")
	codec := &talerapi.Codec{Coins: coins, Merchants: []*talerapi.Merchant{talerapi.NewMerchant([]byte("t"), 0, ex.BankHost)}, Amount: amount, Seed: []byte("replay")}
	tx := codec.Sign(nil, 0, 0, 0, 0)
	ev := &resolved{first: make(chan struct{})}
	// The probe fixes where the confirmer reads from: the tables' ends
	// now, before the deposit, however late its goroutine starts.
	if _, err := tgt.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tgt.Confirmer().Run(cctx, 0, ev) }()
	sub := tgt.Submitter(0)
	for i := 0; i < 2; i++ {
		if r := sub.Submit(ctx, sut.Tx{ID: codec.ID(tx), Bytes: tx}); r.Status != sut.Pending {
			t.Fatalf("deposit %d: %+v, expected accepted (200)", i, r)
		}
	}
	select { // the confirmer's first settlement, however slow its polls
	case <-ev.first:
	case <-ctx.Done():
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`); n != 1 {
		t.Errorf("deposits table: %d rows after a deposit and its replay, expected 1", n)
	}
	if len(ev.ids) != 1 || ev.ids[0] != codec.ID(tx) {
		t.Errorf("confirmer settled %d deposits, expected the one", len(ev.ids))
	}
	if tgt.Checked.Load() != 2 || tgt.BadSigs.Load() != 0 {
		t.Errorf("exchange signatures: %d checked, %d bad; expected 2 and 0", tgt.Checked.Load(), tgt.BadSigs.Load())
	}
}

// resolved keeps what a confirmer settled; first closes at the first.
type resolved struct {
	mu    sync.Mutex
	ids   []sut.TxID
	first chan struct{}
}

func (r *resolved) Block(*sut.Block)       { panic("no blocks") }
func (r *resolved) Final(int64, time.Time) {}
func (r *resolved) Reorg(int64, time.Time) {}
func (r *resolved) Resolved(id sut.TxID, ok bool, _ string, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids = append(r.ids, id); len(r.ids) == 1 && r.first != nil {
		close(r.first)
	}
}

// databaseDies kills the exchange's PostgreSQL (an immediate shutdown, as
// a crash) while a run loads it, and brings it back with one net start
// during the drain (issue 52, cases 4 and 10): the run ends target_failed
// naming the database, exits 3, and counts every deposit the table holds,
// those read after the restart included; net check then passes.
func databaseDies(t *testing.T, home string, ex *talernet.ExchangeNet) {
	n, err := testnet.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	var pg testnet.Node
	for _, nd := range n.Nodes {
		if nd.Role == "database" {
			pg = nd
		}
	}
	before := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`)
	out := filepath.Join(t.TempDir(), "run")
	type ran struct {
		log string
		err error
	}
	done := make(chan ran, 1)
	go func() {
		log, err := tpslab("run", "--net-home", home, "--rate", "100", "--duration", "12s", "--warmup", "0s", "--drain", "10s",
			"--coins", "60", "--merchants", "20", "--out", out)
		done <- ran{log, err}
	}()
	// Kill it 2 s into the load, when series.jsonl has two seconds.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(out, "series.jsonl")); bytes.Count(b, []byte("\n")) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not start its load in 2 minutes")
		}
	}
	if err := syscall.Kill(pg.PID, syscall.SIGQUIT); err != nil { // PostgreSQL's immediate shutdown
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); pg.Alive() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // until PostgreSQL has exited
	}
	if log, err := tpslab("net", "start", "--home", home); err != nil {
		t.Fatalf("net start: %v\n%s", err, log)
	}
	r := <-done
	if exitcode.Of(r.err) != exitcode.TargetFailed {
		t.Errorf("run: exit %d (%v), expected 3\n%s", exitcode.Of(r.err), r.err, r.log)
	}
	var res struct {
		Summary      measure.Counts
		EndedBecause string `json:"ended_because"`
	}
	measuretest.Result(t, out, &res)
	if !strings.HasPrefix(res.EndedBecause, "target_failed: the exchange's database stopped answering") {
		t.Errorf("ended_because %q, expected target_failed naming the exchange's database", res.EndedBecause)
	}
	deposits := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`) - before
	if res.Summary.Committed != deposits || deposits == 0 {
		t.Errorf("run committed %d, the deposits table gained %d: expected equal and more than none", res.Summary.Committed, deposits)
	}
	if log, err := tpslab("net", "check", "--home", home); err != nil {
		t.Errorf("net check after one net start: %v\n%s", err, log)
	}
}

// walletsSpendEveryCoin: closed-model users are wallets paying from their
// coins in turn (issue 52, case 9). 4 users and 40 coins of 5 deposits
// each: with one coin per user they stopped at 20 deposits and met only
// insufficient_funds; now more coins than users are spent and nothing is
// refused while coins remain.
func walletsSpendEveryCoin(t *testing.T, home string, ex *talernet.ExchangeNet) {
	before := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`)
	out := filepath.Join(t.TempDir(), "run")
	if log, err := tpslab("run", "--net-home", home, "--model", "closed", "--users", "4", "--mode", "live", "--duration", "3s", "--warmup", "0s",
		"--drain", "5s", "--coins", "40", "--set", "taler.deposit=2", "--out", out); err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	var res struct{ Summary measure.Counts }
	measuretest.Result(t, out, &res)
	s := res.Summary
	deposits := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`) - before
	coins := count(t, ex.DatabaseURL, `SELECT count(DISTINCT coin_pub) FROM (SELECT coin_pub FROM exchange.deposits
		ORDER BY deposit_serial_id DESC LIMIT `+strconv.FormatInt(deposits, 10)+`) d`)
	t.Logf("closed model, 4 users: %d committed, %d coins spent, rejected %v", s.Committed, coins, s.Rejected)
	if s.Committed != deposits || s.Committed <= 20 || coins <= 4 {
		t.Errorf("4 users committed %d deposits from %d coins (the table gained %d): expected more than 20 from more than 4 coins, all in the table", s.Committed, coins, deposits)
	}
	if s.Committed < 200 && len(s.Rejected) > 0 {
		t.Errorf("refusals %v while coins remained (%d of 200 deposits made)", s.Rejected, s.Committed)
	}
}

// faultsOnTheExchange delays the exchange↔PostgreSQL link by 50 ms for
// 3 s, kills one of the two taler-exchange-httpd processes (restarted 3 s
// later), and pauses PostgreSQL for 5 s (issue 53), the delay first so
// that the rate before it is not a backlog's: the run completes, each
// fault's effect is measured, committed equals the deposits the table
// gained, and the books balance (net check).
func faultsOnTheExchange(t *testing.T, home string, ex *talernet.ExchangeNet) {
	before := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`)
	out := filepath.Join(t.TempDir(), "run")
	log, err := tpslab("run", "--net-home", home, "--rate", "100", "--duration", "18s", "--warmup", "1s", "--drain", "10s",
		"--coins", "60", "--merchants", "20", "--fault", "3s:delay:postgres:50ms:3s", "--fault", "7s:crash:exchange1:3s",
		"--fault", "11s:pause:postgres:5s", "--out", out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	var res struct {
		Summary      report.Summary
		EndedBecause string `json:"ended_because"`
	}
	measuretest.Result(t, out, &res)
	s := res.Summary
	deposits := count(t, ex.DatabaseURL, `SELECT count(*) FROM exchange.deposits`) - before
	for _, f := range s.Faults {
		t.Logf("%s: %.0f tx/s before, %.0f during, %.0f after, recovery %.1f s", f.Fault, f.BeforeTPS, f.DuringTPS, f.AfterTPS, f.RecoveryS)
	}
	if res.EndedBecause != "completed" || len(s.Faults) != 3 || s.NetCheck == nil || !s.NetCheck.OK {
		t.Fatalf("ended %q, %d faults measured, net check %+v; expected completed, 3, ok\n%s", res.EndedBecause, len(s.Faults), s.NetCheck, log)
	}
	// Equal is the point; the floor only says the load reached the table
	// (1,600 on a quiet machine, 1,142 beside two busy loops).
	if s.Committed != deposits || deposits < 100 {
		t.Errorf("run committed %d, the deposits table gained %d: expected equal, and at least a second's offers", s.Committed, deposits)
	}
	// CI, beside the other lane: 44 during against 86 before.
	if s.Faults[2].DuringTPS >= s.Faults[2].BeforeTPS*3/4 {
		t.Errorf("PostgreSQL paused 5 s, yet %.0f tx/s committed during it (%.0f before)", s.Faults[2].DuringTPS, s.Faults[2].BeforeTPS)
	}
	// Each deposit is a few statements, each a round trip over the link:
	// 50 ms more per round trip slows the exchange's processes (75.8 tx/s
	// before, 27.8 during, in one run).
	if d := s.Faults[0]; d.Error != "" || d.DuringTPS >= d.BeforeTPS*3/4 {
		t.Errorf("a 50 ms delay on the database's link: %+v", d)
	}
}
