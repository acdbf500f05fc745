package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/ledgersvc"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/ledgerclient"
	"github.com/tpslab/tpslab/internal/targets/suttest"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(time.Now().Format("15:04:05.0"), strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// genesis: 3,000 funded accounts and 20,000 pre-loaded ones (net up
// --state) that payments are drawn to as well.
var genesis = chain.Genesis{Seed: "ledger-it", Accounts: 3000, Balance: 1 << 40, State: 20_000}

// startLedger starts the reference ledger service on a private PostgreSQL.
func startLedger(t *testing.T, o pgnet.Options) *testnet.Net {
	t.Helper()
	o.Kind, o.Home, o.ChainID, o.Genesis, o.Binary, o.Log = "ledger", filepath.Join(t.TempDir(), "ledger"), "ledger-it", genesis, testbin.Path(t), testLog{t}
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	if o.Processes == 0 {
		o.Processes = 1
	}
	if o.Connections == 0 {
		o.Connections = 16
	}
	if o.Batch == 0 {
		o.Batch = 1
	}
	def(&o.SynchronousCommit, "on")
	def(&o.Partition, "none")
	def(&o.Isolation, "serializable")
	n, err := pgnet.Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	return n
}

// rows counts the payment table's rows: the independent count.
func rows(t *testing.T, n *testnet.Net) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgnet.Of(n).DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var c int64
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// paymentRequests reads how many requests posted payments, from the
// service's own metrics.
func paymentRequests(t *testing.T, n *testnet.Net) int64 {
	t.Helper()
	res, err := http.Get(n.RPCEndpoints()[0] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`(?m)^ledger_payment_requests_total (\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no ledger_payment_requests_total in the service's metrics")
	}
	v, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return v
}

func audit(t *testing.T, n *testnet.Net) {
	t.Helper()
	if a, err := all.Registry().Check(context.Background(), n); err != nil || len(a.Problems) > 0 {
		t.Errorf("net check: %v %v", err, a.Problems)
	}
}

func ledgerScenario(t *testing.T, n *testnet.Net, name string, rate float64) scenario.Scenario {
	all.Registry() // the kinds' sections (http.confirm) are registered with them
	sc := scenario.Default()
	sc.Target.NetHome = n.Home
	sc.Load.Rate = rate
	sc.Load.Duration = scenario.Duration(4 * time.Second) // exactness holds at any length
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Workload.Senders = 1000
	sc.Out = filepath.Join(t.TempDir(), name)
	return sc
}

func run(t *testing.T, sc scenario.Scenario) *report.Result {
	t.Helper()
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry()})
	if err != nil {
		t.Fatalf("%s: %v", sc.Out, err)
	}
	measuretest.Identities(t, res.Summary.Counts)
	return res
}

// The generic HTTP target keeps the target contract against the real
// ledger service in each of its confirmation modes.
func TestContractOnTheLedgerService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{})
	keys := ledgerclient.NewClient("ledger-it", genesis, 0, nil)
	for m, mode := range []string{"sync", "poll", "callback", "sync-batched"} {
		sc := ledgerScenario(t, n, mode, 100)
		confirm, batched := strings.CutSuffix(mode, "-batched")
		if err := scenario.Set(&sc, "http.confirm", confirm); err != nil {
			t.Fatal(err)
		}
		if batched { // arrays to /payments/batch, each payment answered in its place
			if err := scenario.Set(&sc, "http.batch_size", "4"); err != nil {
				t.Fatal(err)
			}
		}
		tgt, err := runner.TargetFor(&sc, all.Registry())
		if err != nil {
			t.Fatal(err)
		}
		// Fresh senders per mode, each at sequence 0.
		valid := func(i int) sut.Tx {
			b := keys.Sign(nil, 100*m+i, 2000+i, 5, 0)
			return sut.Tx{ID: keys.ID(b), Bytes: b}
		}
		bad := keys.Sign(nil, 100*m+50, 1, 5, 0)
		bad[len(bad)-1] ^= 1
		suttest.Run(t, suttest.Case{Target: tgt, Valid: valid, Invalid: &sut.Tx{ID: keys.ID(bad), Bytes: bad}, Commits: true})
	}
	if got := rows(t, n); got != 4*9+4 {
		t.Errorf("%d payments recorded, want 4 modes x 9, and the 4 valid of the batched mode's batch", got)
	}
	audit(t, n)
}

// Load in each confirmation mode commits exactly what the payment table
// holds afterwards, and the result states the ledger's settings and what
// was read from inside it.
func TestLedgerCountsMatchThePaymentTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{})
	before := rows(t, n)
	last := ""
	for _, mode := range []string{"sync", "poll", "callback", "sync-batched"} {
		sc := ledgerScenario(t, n, mode, 200)
		confirm, batched := strings.CutSuffix(mode, "-batched")
		if err := scenario.Set(&sc, "http.confirm", confirm); err != nil {
			t.Fatal(err)
		}
		if batched {
			if err := scenario.Set(&sc, "http.batch_size", "50"); err != nil {
				t.Fatal(err)
			}
		}
		sc.Workload.Mode = map[string]scenario.Mode{"sync": "presigned", "poll": "live", "callback": "presigned", "sync-batched": "live"}[mode]
		requests := paymentRequests(t, n)
		res := run(t, sc)
		s := res.Summary
		after := rows(t, n)
		// Batched, the payments travel in arrays: far fewer requests than
		// payments (the service counts them); else one request each.
		if got := paymentRequests(t, n) - requests; batched && got*4 > s.Sent || !batched && got != s.Sent {
			t.Errorf("%s: %d payments sent in %d requests", mode, s.Sent, got)
		}
		t.Logf("%s: %.1f committed tx/s, p99 commit %.0f ms, %d committed, table +%d, %.3f db transactions per payment",
			mode, s.CommittedTPS, s.LatencyMs.Commit.P99, s.Committed, after-before, s.Telemetry["ledger.db_transactions_per_payment"].Mean)
		if s.Committed+s.Unsent < 800 || s.Committed != after-before { // a lane's last gathering may stay unsent
			t.Errorf("%s: result says %d committed, the payment table grew by %d", mode, s.Committed, after-before)
		}
		if s.RejectedTotal+s.FailedTotal+s.Expired+s.UnackedTotal > 0 {
			t.Errorf("%s: %d rejected, %d failed, %d expired, %d unacked", mode, s.RejectedTotal, s.FailedTotal, s.Expired, s.UnackedTotal)
		}
		if _, ok := s.Telemetry["ledger.db_transactions"]; !ok {
			t.Errorf("%s: no ledger telemetry in the summary: %v", mode, s.Telemetry)
		}
		if _, ok := s.Telemetry["postgres.cpu_percent"]; !ok {
			t.Errorf("%s: no database process telemetry in the summary", mode)
		}
		if len(s.SlowestStatements) == 0 {
			t.Errorf("%s: no slowest statements", mode)
		}
		onDisk, err := report.ReadResult(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := onDisk.Network.Settings.(map[string]any); !ok || l["batch"] != float64(1) || l["isolation"] != "serializable" || l["synchronous_commit"] != "on" {
			t.Errorf("%s: network settings %v, want the ledger's", mode, onDisk.Network.Settings)
		}
		// tpslab verify finds each payment's row on its own (issue 55).
		if out, code := verifyRun(t, res.Dir, pgnet.Of(n).DatabaseURL); code != 0 || !strings.HasPrefix(out, "verified: ") {
			t.Errorf("%s: verify: exit %d: %s", mode, code, out)
		} else {
			t.Log(out)
		}
		before = after
		last = res.Dir
	}
	audit(t, n)
	preloadedState(t, n)
	// Another ledger of the same chain (a fresh database holding none of
	// the run's payments), and a ledger of another chain.
	for _, c := range []struct {
		chainID string
		code    int
		want    string
	}{{"ledger-it", 1, "not in the store"}, {"another", 3, `the ledger of chain "another"`}} {
		url := otherLedger(t, n, c.chainID)
		out, code := verifyRun(t, last, url)
		t.Logf("against a ledger of chain %s: exit %d: %s", c.chainID, code, out)
		if code != c.code || !strings.Contains(out, c.want) || strings.Count(out, "\n") > 0 {
			t.Errorf("verify against a ledger of chain %s: exit %d, %q; want exit %d naming %q in one line", c.chainID, code, out, c.code, c.want)
		}
	}
}

func verifyRun(t *testing.T, dir, database string) (string, int) {
	t.Helper()
	out, err := exec.Command(testbin.Path(t), "verify", dir, "--database", database).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return strings.TrimSpace(string(out)), code
}

// otherLedger makes another ledger database of chainID in n's cluster and
// returns its URL.
func otherLedger(t *testing.T, n *testnet.Net, chainID string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgnet.Of(n).DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := "other_" + strings.ReplaceAll(chainID, "-", "_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pgnet.Of(n).DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	other, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if err := ledgersvc.Setup(ctx, other, chainID, "none", chain.Genesis{Seed: "x", Accounts: 1, Balance: 1}); err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// A mix of transfers and batches (multi_send) on the ledger service, with
// serializable transactions and with row locks: each kind's committed
// count equals the payment table's rows of that kind (batches have
// several outputs), and the audit finds every batch's entries adding up.
func TestMixOfTransfersAndBatchesOnTheLedgerService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	for _, iso := range []string{"serializable", "row-locks"} {
		n := startLedger(t, pgnet.Options{Isolation: iso})
		sc := ledgerScenario(t, n, "mix-"+iso, 150)
		sc.Workload.Mix = []scenario.MixEntry{{Kind: "send", Weight: 7}, {Kind: "multi_send", Weight: 3, Outputs: 4}}
		// Oversized payments must be refused as the reference chain refuses
		// them (issue 34): none reaches the table.
		sc.Workload.Invalid = scenario.Invalid{Share: 0.05, Sorts: []string{"oversized"}}
		s := run(t, sc).Summary
		if n := s.InvalidSent["oversized"]; n == 0 || s.InvalidRefused["oversized: tx_too_large"] != n || len(s.InvalidCommitted) > 0 {
			t.Errorf("%s: oversized sent %d, refused %v, committed %v", iso, n, s.InvalidRefused, s.InvalidCommitted)
		}
		conn, err := pgx.Connect(context.Background(), pgnet.Of(n).DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		var sends, batches, outputs int64
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE outputs = 1), count(*) FILTER (WHERE outputs > 1), coalesce(sum(outputs) FILTER (WHERE outputs > 1), 0) FROM payments`).Scan(&sends, &batches, &outputs); err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
		t.Logf("%s: committed by kind %v; table: %d transfers, %d batches of %d outputs", iso, s.CommittedByKind, sends, batches, outputs)
		if s.CommittedByKind["send"] != sends || s.CommittedByKind["multi_send"] != batches || batches < 50 || outputs != 4*batches {
			t.Errorf("%s: committed by kind %v, the table holds %d transfers and %d batches (%d outputs)", iso, s.CommittedByKind, sends, batches, outputs)
		}
		if s.RejectedTotal+s.FailedTotal+s.Expired > 0 {
			t.Errorf("%s: %d rejected (%v), %d failed, %d expired", iso, s.RejectedTotal, s.Rejected, s.FailedTotal, s.Expired)
		}
		audit(t, n)
	}
}

// A Zipf (s = 1.1) choice of recipients makes hot accounts: at the same
// rate as a uniform load, their transactions conflict, and compare shows
// the serialization retries and their cost.
func TestZipfRecipientsCauseRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{})
	var sets []compare.Set
	for _, dist := range []string{"uniform", "zipf"} {
		// Conflicts need overlapping transactions on the hot accounts: a
		// rate high enough that several are in flight at once even when
		// the machine is idle and each commits in a millisecond or two.
		sc := ledgerScenario(t, n, dist, 1500)
		sc.Load.Duration = scenario.Duration(10 * time.Second)
		sc.Workload.Senders = 2000
		sc.Workload.RecipientChoice = scenario.Choice{Dist: dist, S: 1.1}
		res := run(t, sc)
		onDisk, err := report.ReadResult(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, compare.Set{Name: dist, Runs: []*report.Result{onDisk}})
	}
	rows := compare.Compare(sets[0], sets[1])
	var retries *compare.Row
	for i, r := range rows {
		t.Logf("%-40s %10.3f %10.3f %+8.1f%%", r.Label(), r.Base, r.Value, r.ChangePct)
		if r.Metric == "ledger.retries" {
			retries = &rows[i]
		}
	}
	if retries == nil {
		t.Fatal("compare has no ledger.retries row")
	}
	u, z := sets[0].Runs[0].Summary, sets[1].Runs[0].Summary
	if !(retries.Value > 2*retries.Base && z.Telemetry["ledger.retries"].Mean > 1) {
		t.Errorf("retries: uniform %.2f/s, zipf %.2f/s; want zipf's hot accounts to conflict far more", retries.Base, retries.Value)
	}
	if z.Committed == 0 || u.Committed == 0 {
		t.Errorf("committed: uniform %d, zipf %d", u.Committed, z.Committed)
	}
	audit(t, n)
}

// Batch commit groups payments into database transactions: far fewer
// database transactions per payment than one each.
func TestBatchCommitCutsDatabaseTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	per := map[int]float64{}
	for _, batch := range []int{1, 25} {
		n := startLedger(t, pgnet.Options{Batch: batch, Connections: 2, BatchWait: 10 * time.Millisecond})
		before := rows(t, n)
		res := run(t, ledgerScenario(t, n, "batch-"+strconv.Itoa(batch), 600))
		s := res.Summary
		per[batch] = s.Telemetry["ledger.db_transactions_per_payment"].Mean
		t.Logf("batch %d: %.1f committed tx/s, p50 commit %.1f ms, %.3f database transactions per payment, %.0f WAL flushes/s",
			batch, s.CommittedTPS, s.LatencyMs.Commit.P50, per[batch], s.Telemetry["db.wal_sync"].Mean)
		if got := rows(t, n) - before; got != s.Committed {
			t.Errorf("batch %d: %d committed, table grew by %d", batch, s.Committed, got)
		}
		audit(t, n)
	}
	// Batch 1 commits each payment in a transaction of its own: exactly
	// one a payment, both counted by the service and read at the same
	// instants (retries are counted apart); batch 25 shares them.
	if per[1] != 1 || per[25] <= 0 || per[25] >= 1 {
		t.Errorf("database transactions per payment: batch 1 %.3f, batch 25 %.3f; want exactly 1, and under 1", per[1], per[25])
	}
}

// A service whose queue is full answers 429 with Retry-After: the target
// waits it out and posts again, and the waits are counted as throttling,
// apart from errors.
func TestThrottlingIsWaitedOutAndCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{Connections: 1, MaxQueue: 2})
	sc := ledgerScenario(t, n, "throttled", 300)
	sc.Load.Connections = 64
	sc.Load.Duration = scenario.Duration(4 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.CommitTimeout = scenario.Duration(30 * time.Second)
	sc.Load.Drain = scenario.Duration(30 * time.Second)
	before := rows(t, n)
	s := run(t, sc).Summary
	t.Logf("throttled %d times; %d committed, %d rejected (%v)", s.Throttled, s.Committed, s.RejectedTotal, s.Rejected)
	if s.Throttled == 0 {
		t.Error("no 429 was counted as throttling")
	}
	if s.Telemetry["ledger.throttled"].Mean == 0 {
		t.Error("the service's own throttled counter stayed at 0")
	}
	if s.Rejected["throttled"] != s.RejectedTotal {
		t.Errorf("rejections other than throttling: %v", s.Rejected)
	}
	if got := rows(t, n) - before; got != s.Committed {
		t.Errorf("%d committed, table grew by %d", s.Committed, got)
	}
	audit(t, n)
}

// net up --kind ledger through the command line: loopback only, status,
// check and down; find-max on it finds a sustainable rate and names the
// database as the limit when hot accounts make it one.
func TestNetUpLedgerAndFindMax(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	bin := testbin.Path(t)
	home := filepath.Join(t.TempDir(), "ledger")
	out, err := exec.Command(bin, "net", "up", "--kind", "ledger", "--accounts", "3000", "--db-connections", "8", "--home", home).CombinedOutput()
	if err != nil {
		t.Fatalf("net up: %v\n%s", err, out)
	}
	defer exec.Command(bin, "net", "down", "--home", home).Run()
	n, err := testnet.Load(home)
	if err != nil || n.Kind != "ledger" || pgnet.Of(n) == nil || pgnet.Of(n).Connections != 8 || len(n.Nodes) != 2 {
		t.Fatalf("net.json: %+v %v", n, err)
	}
	for _, nd := range n.Nodes {
		if !strings.Contains(nd.RPC, "://127.0.0.1:") {
			t.Errorf("%s listens on %s, not loopback", nd.Name, nd.RPC)
		}
	}
	if !strings.Contains(pgnet.Of(n).DatabaseURL, "@127.0.0.1:") {
		t.Errorf("database on %s, not loopback", pgnet.Of(n).DatabaseURL)
	}
	if out, err := exec.Command(bin, "net", "status", "--home", home).CombinedOutput(); err != nil || strings.Count(string(out), " running ") != 2 {
		t.Errorf("net status: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "fm")
	// From 100/s: steps under the knee that meet the objective on any
	// machine, so a confirmation that misses on a busy one (CI: 400/s and
	// 380/s missed on schedule lag, the machine 100% busy) still leaves a
	// rate a step met.
	out, err = exec.Command(bin, "find-max", "--net-home", home, "--start", "100", "--factor", "2", "--tolerance", "0.25", "--max-steps", "6",
		"--step", "8s", "--step-warmup", "2s", "--senders", "2000", "--recipient-dist", "zipf", "--set", "workload.recipient_choice.s=1.1",
		"--slo", "p99_commit<=1s", "--confirm-run", "6s", "--out", dir).CombinedOutput()
	t.Logf("find-max:\n%s", out)
	if err != nil {
		t.Fatalf("find-max: %v", err)
	}
	m := regexp.MustCompile(`sustainable rate: (\d+) tx/s(, held for 6s|, not confirmed) `).FindSubmatch(out)
	if m == nil || string(m[1]) == "0" {
		t.Errorf("no sustainable rate found, or none that says whether its confirmation run held it")
	}
	// The database is named when the steps that missed found it saturated
	// (hot accounts' retries and lock waits); on a machine whose CPU gave
	// out first (CI beside two busy loops: 100% busy at 300/s) the CPU is,
	// with its figures.
	named := strings.Contains(string(out), "- database: the database limits the system")
	if some, every := dbHeldInMissedSteps(t, dir); named && !some || every && !named || !regexp.MustCompile(`(?m)^what limits it:\n  - \S`).Match(out) {
		t.Errorf("find-max's hints name the database: %v; it held in a step that missed: %v, in every one: %v", named, some, every)
	}
	// PostgreSQL restarted by hand (pg_ctl, not tpslab): net check finds
	// the new postmaster, and net down stops it.
	pgBin, err := pgnet.PostgresBin()
	if err != nil {
		t.Fatal(err)
	}
	pg := n.Nodes[0]
	restart := exec.Command(filepath.Join(pgBin, "pg_ctl"), "restart", "-w", "-m", "fast", "-D", filepath.Dir(pg.PIDFile), "-l", pg.Log)
	if os.Geteuid() == 0 {
		restart = exec.Command("runuser", append([]string{"-u", "postgres", "--"}, restart.Args...)...)
	}
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out)
	}
	after, err := testnet.Load(home)
	if err != nil || after.Nodes[0].PID == pg.PID || !after.Nodes[0].Alive() {
		t.Errorf("after pg_ctl restart: postgres pid %d (was %d), alive %v (%v)", after.Nodes[0].PID, pg.PID, after.Nodes[0].Alive(), err)
	}
	if out, err := exec.Command(bin, "net", "check", "--home", home).CombinedOutput(); err != nil {
		t.Errorf("net check after find-max and a restart of PostgreSQL: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "net", "down", "--home", home).CombinedOutput(); err != nil || after.Nodes[0].Alive() || n.Nodes[1].Alive() {
		t.Errorf("net down: %v\n%s", err, out)
	}
}

// The verdict names the database from its own evidence (issue 51): Zipf
// recipients on a small connection pool wait for locks (not "machine
// busy", not the target's answers), and PostgreSQL killed under the
// service is a component that died (not "interrupted", not refusals).
func TestDatabaseLimitsAreNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{Batch: 10, Connections: 4})
	sc := ledgerScenario(t, n, "zipf", 1000)
	sc.Load.Duration, sc.Load.Drain = scenario.Duration(5*time.Second), scenario.Duration(2*time.Second)
	sc.Workload.RecipientChoice = scenario.Choice{Dist: "zipf", S: 1.1}
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry()})
	if res == nil {
		t.Fatal(err)
	}
	j := res.Judge()
	t.Logf("zipf: %s", res.Verdict())
	if j.Limit.Cause != report.CauseDatabase || !strings.Contains(j.Limit.Figures, "waiting for locks") {
		t.Errorf("Zipf recipients on 4 connections: limit %s (%s), want the database's lock waits", j.Limit.Cause, j.Limit.Figures)
	}
	var pg int
	for _, nd := range n.Nodes {
		if nd.Name == "postgres" {
			pg = nd.PID
		}
	}
	if pg == 0 {
		t.Fatal("no postgres process in the network")
	}
	sc = ledgerScenario(t, n, "killed", 300)
	sc.Load.Duration, sc.Load.Drain = scenario.Duration(6*time.Second), scenario.Duration(2*time.Second)
	kill := time.AfterFunc(3*time.Second, func() { syscall.Kill(pg, syscall.SIGKILL) })
	defer kill.Stop()
	res, err = runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry()})
	if res == nil {
		t.Fatal("no result")
	}
	if exitcode.Of(err) != exitcode.TargetFailed {
		t.Errorf("a run whose database died: exit %d (%v), want %d", exitcode.Of(err), err, exitcode.TargetFailed)
	}
	j = res.Judge()
	t.Logf("killed: %s (ended %s)", res.Verdict(), res.EndedBecause)
	if j.Outcome != report.OutcomeDied || !strings.Contains(j.Limit.Figures, "postgres") || strings.HasPrefix(res.EndedBecause, "interrupted") {
		t.Errorf("PostgreSQL killed: outcome %s, limit %q, ended %q; want the database named as died", j.Outcome, j.Limit.Figures, res.EndedBecause)
	}
}

// A PostgreSQL that dies under the ledger service (an immediate shutdown,
// as a crash) ends the run target_failed naming the database, exit 3
// (issue 52: it exited 0); the payment table, read after a restart, holds
// every payment counted committed, and at most those still unresolved.
func TestDeadDatabaseEndsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{})
	before := rows(t, n)
	sc := ledgerScenario(t, n, "dies", 200)
	sc.Load.Duration = scenario.Duration(10 * time.Second)
	sc.Load.Drain = scenario.Duration(2 * time.Second)
	var pg testnet.Node
	for _, nd := range n.Nodes {
		if nd.Role == "database" {
			pg = nd
		}
	}
	go func() { // once the load has run 2 s by the run's own clock
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(sc.Out, "series.jsonl")); err == nil && bytes.Count(b, []byte("\n")) >= 2 {
				break
			}
		}
		_ = syscall.Kill(pg.PID, syscall.SIGQUIT)
	}()
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry()})
	if exitcode.Of(err) != exitcode.TargetFailed {
		t.Fatalf("run: exit %d (%v), expected 3", exitcode.Of(err), err)
	}
	measuretest.Identities(t, res.Summary.Counts)
	if !strings.HasPrefix(res.EndedBecause, "target_failed: the database (postgres) stopped") {
		t.Errorf("ended_because %q, expected target_failed naming the database", res.EndedBecause)
	}
	if j := res.Judge(); j.Outcome != report.OutcomeDied {
		t.Errorf("outcome %s, expected %s", j.Outcome, report.OutcomeDied)
	}
	if _, err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	got := rows(t, n) - before
	if open := s.InFlightEnd + s.Expired + s.UnackedTotal; got < s.Committed || got > s.Committed+open || s.Committed < 200 {
		t.Errorf("run committed %d (%d unresolved; rejected %v, failed %v, unacked %v), the payment table gained %d", s.Committed, open, s.Rejected, s.Failed, s.Unacked, got)
	}
}

// A scheduled crash of PostgreSQL (SIGKILL of its whole process group)
// during a load, restarted on its data 3 s later (issue 53): the run goes on
// (the fault's, not a death), the fault's dip and recovery are measured,
// every payment counted committed is in the payment table and the table
// holds no more than those and the ones left unresolved; the audit passes.
func TestDatabaseCrashFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the ledger service")
	}
	n := startLedger(t, pgnet.Options{})
	before := rows(t, n)
	sc := ledgerScenario(t, n, "crash", 200)
	// 12 s: the service's pool takes a second or so after the restart to
	// reconnect (rejecting meanwhile), and a 3 s window after the fault
	// then showed 61 of 136 tx/s (CI, twice).
	sc.Load.Duration = scenario.Duration(12 * time.Second)
	f, err := scenario.ParseFault("3s:crash:postgres:3s")
	if err != nil {
		t.Fatal(err)
	}
	sc.Faults = []scenario.Fault{f}
	start := time.Now()
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry()})
	if err != nil && exitcode.Of(err) != exitcode.ThresholdsFailed {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run took %s", time.Since(start).Round(time.Second))
	measuretest.Identities(t, res.Summary.Counts)
	s := res.Summary
	if res.EndedBecause != "completed" || len(s.Faults) != 1 {
		t.Fatalf("ended %q with %d faults measured, expected completed and the crash", res.EndedBecause, len(s.Faults))
	}
	fa := s.Faults[0]
	t.Logf("crash of postgres: %.0f tx/s before, %.0f during, %.0f after, recovery %.1f s; %d committed, %d unresolved, rejected %v",
		fa.BeforeTPS, fa.DuringTPS, fa.AfterTPS, fa.RecoveryS, s.Committed, s.InFlightEnd+s.Expired+s.UnackedTotal, s.Rejected)
	// Commits count when their answers are read: on a busy machine the
	// answers to payments committed before the kill are read inside the
	// crash (CI: 132 tx/s before, 67 during). Fewer during than before or
	// after, and the service's refusals while its database was gone.
	if fa.DuringTPS >= fa.BeforeTPS || fa.DuringTPS >= fa.AfterTPS || s.Rejected["database_error"]+s.UnackedTotal == 0 {
		t.Errorf("the crash did not show: %.0f tx/s before, %.0f during, %.0f after; rejected %v, unacked %v", fa.BeforeTPS, fa.DuringTPS, fa.AfterTPS, s.Rejected, s.Unacked)
	}
	got := rows(t, n) - before
	if open := s.InFlightEnd + s.Expired + s.UnackedTotal; got < s.Committed || got > s.Committed+open {
		t.Errorf("run committed %d (%d unresolved), the payment table gained %d", s.Committed, open, got)
	}
	if j := res.Judge(); j.Outcome == report.OutcomeDied {
		t.Errorf("a scheduled crash judged a death: %s", j.Limit.Figures)
	}
	n, err = testnet.Load(n.Home) // the restarted database's pid
	if err != nil {
		t.Fatal(err)
	}
	audit(t, n)
}

// The database across an emulated link (net up --kind ledger --topology
// loopback): a 50 ms delay on the service↔PostgreSQL link during a load
// raises commit latency while it lasts, and every payment counted
// committed is in the table, no more and no fewer (issue 53).
func TestDelayOnTheDatabaseLink(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, the ledger service and its link")
	}
	n := startLedger(t, pgnet.Options{DatabaseLink: "loopback"})
	if n.Links == nil || len(n.Links.Links) != 1 || n.Links.Links[0].Name != "service-postgres" {
		t.Fatalf("links %+v, expected the one between the services and PostgreSQL", n.Links)
	}
	before := rows(t, n)
	sc := ledgerScenario(t, n, "delay", 100)
	sc.Load.Duration = scenario.Duration(8 * time.Second)
	f, err := scenario.ParseFault("4s:delay:postgres:50ms:3s")
	if err != nil {
		t.Fatal(err)
	}
	sc.Faults = []scenario.Fault{f}
	res := run(t, sc)
	s := res.Summary
	if got := rows(t, n) - before; got != s.Committed || s.Committed < 500 {
		t.Errorf("run committed %d, the payment table gained %d", s.Committed, got)
	}
	if len(s.Links) != 1 || s.Links[0].ProbeError != "" || s.Links[0].MeasuredRTTMs <= 0 {
		t.Errorf("the database link's probe: %+v", s.Links)
	}
	onDisk, err := report.ReadResult(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	at, commit := func(x report.Second) float64 { return x.T }, func(x report.Second) measure.Percentiles { return x.CommitMs }
	pre, during := measuretest.MeanP50(onDisk.Series, at, commit, 1, 4), measuretest.MeanP50(onDisk.Series, at, commit, 5, 7)
	t.Logf("commit p50 %.1f ms before the delay, %.1f ms during it", pre, during)
	if during < pre+40 {
		t.Errorf("a 50 ms delay on the database link moved commit p50 from %.1f to %.1f ms only", pre, during)
	}
}

// preloadedState: the accounts table holds the funded accounts and the
// pre-loaded state, payments went to the state's rows too (recipients
// drawn across all), and the service answers one of them's balance.
func preloadedState(t *testing.T, n *testnet.Net) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgnet.Of(n).DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var accounts int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM accounts`).Scan(&accounts); err != nil {
		t.Fatal(err)
	}
	state := map[chain.Address]bool{}
	for i := uint64(0); i < genesis.State; i++ {
		state[chain.StateAddress(genesis.Seed, i)] = true
	}
	rs, err := conn.Query(ctx, `SELECT recipient FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	var toState int64
	var one chain.Address
	for rs.Next() {
		var r []byte
		if err := rs.Scan(&r); err != nil {
			t.Fatal(err)
		}
		if a := chain.Address(r); state[a] {
			toState, one = toState+1, a
		}
	}
	rs.Close()
	if accounts != int64(genesis.Accounts+genesis.State) || toState == 0 {
		t.Fatalf("accounts %d (want %d funded and %d pre-loaded); %d payments to pre-loaded accounts", accounts, genesis.Accounts, genesis.State, toState)
	}
	res, err := http.Get(n.RPCEndpoints()[0] + "/accounts/" + one.String())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ai chain.AccountInfo
	if err := json.NewDecoder(res.Body).Decode(&ai); err != nil || res.StatusCode != http.StatusOK || ai.Balance <= genesis.Balance {
		t.Errorf("a pre-loaded account's balance: HTTP %d, %+v, %v (genesis %d)", res.StatusCode, ai, err, genesis.Balance)
	}
}

// dbHeldInMissedSteps says whether some, and every, step of the find-max
// search in dir that missed its objective found the database saturated,
// by its own judgement.
func dbHeldInMissedSteps(t *testing.T, dir string) (some, every bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "find-max.json"))
	var doc struct {
		Outcome struct {
			Steps []struct {
				Dir string `json:"dir"`
				OK  bool   `json:"ok"`
			} `json:"steps"`
		} `json:"outcome"`
	}
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("find-max.json: %v", err)
	}
	every = true
	for _, st := range doc.Outcome.Steps {
		if st.OK {
			continue
		}
		r, err := report.ReadResult(st.Dir)
		if err != nil {
			t.Fatal(err)
		}
		held := false
		for _, e := range r.Judge().Considered {
			held = held || e.Cause == report.CauseDatabase && e.Holds
		}
		some, every = some || held, every && held
	}
	return some, every
}
