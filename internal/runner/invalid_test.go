package runner_test

import (
	"context"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Three tenths of the payments deliberately invalid, of every sort: each is
// refused by the ledger with the reason its sort deserves, none counts as
// committed, and the payments' own figures still equal the blocks exactly
// (the invalid ones take no sequence of their lanes).
func TestInvalidShareCountedApart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	g := chain.Genesis{Seed: "invalid", Accounts: 1000, Balance: 1_000_000_000}
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 1, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "invalid-chain", Genesis: g, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downFresh(n) })
	senders := map[chain.Address]bool{}
	for _, k := range chain.DeriveKeys(g.Seed, 200) {
		senders[chain.AddressOf(k[32:])] = true
	}
	scenarioFor := func(name string, share float64) scenario.Scenario {
		sc := scenario.Default()
		sc.Target.NetHome = n.Home
		sc.Load.Rate, sc.Load.Duration, sc.Load.Warmup = 300, scenario.Duration(6*time.Second), scenario.Duration(time.Second)
		sc.Workload.Senders, sc.Workload.Window = 200, 4
		sc.Workload.Invalid.Share = share
		sc.Out = filepath.Join(t.TempDir(), name)
		return sc
	}
	// A first run uses sequences, so that stale ones exist.
	if _, err := run(t, context.Background(), scenarioFor("plain", 0)); err != nil {
		t.Fatal(err)
	}
	sc := scenarioFor("invalid", 0.3)
	res, err := run(t, context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("verdict: %s; invalid sent %v refused %v", res.Verdict(), s.InvalidSent, s.InvalidRefused)
	sent := measure.Sum(s.InvalidSent)
	if share := float64(sent) / float64(s.Offered); share < 0.26 || share > 0.34 {
		t.Errorf("%d invalid of %d offered (%.3f), want about 0.3", sent, s.Offered, share)
	}
	want := map[string]string{"bad_signature": "bad_signature", "wrong_chain_id": "wrong_chain", "stale_sequence": "sequence_too_low", "insufficient_funds": "insufficient_funds", "oversized": "tx_too_large"}
	for sort, reason := range want {
		if s.InvalidSent[sort] == 0 || s.InvalidRefused[sort+": "+reason] != s.InvalidSent[sort] {
			t.Errorf("%s: sent %d, refused as %s %d (all refusals %v)", sort, s.InvalidSent[sort], reason, s.InvalidRefused[sort+": "+reason], s.InvalidRefused)
		}
	}
	if len(s.InvalidCommitted) > 0 || len(s.InvalidAccepted) > 0 || strings.HasPrefix(res.Verdict(), "FINDING") {
		t.Errorf("invalid payments taken: accepted %v, committed %v; verdict %q", s.InvalidAccepted, s.InvalidCommitted, res.Verdict())
	}
	// Judged on the valid payments: all committed is kept up (issue 51:
	// "fell behind: committed 213 of 300 offered", or "machine busy").
	if o := res.Outcome(); o != report.OutcomeKeptUp || !strings.HasPrefix(res.Verdict(), "kept up") {
		t.Errorf("outcome %s: %s", o, res.Verdict())
	}
	if s.RejectedTotal != 0 || s.Shortfall != nil {
		t.Errorf("valid payments refused %v, shortfall %+v: the invalid ones disturbed the lanes or the judging", s.Rejected, s.Shortfall)
	}
	ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if ok != s.Committed || failed != 0 || s.Committed < 1000 {
		t.Errorf("result %d committed; blocks hold %d ok and %d failed of ours", s.Committed, ok, failed)
	}
}

// A system that takes whatever it is sent (the sink accepts every
// transaction, and verifies nothing) is caught: the verdict leads with the
// invalid payments it accepted and never refused.
func TestInvalidPaymentTakenLeadsTheSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	sk := sink.NewSink("tpslab", testnet.DefaultGenesis())
	srv := httptest.NewServer(sk)
	defer srv.Close()
	sc := scenario.Default()
	sc.Target.Kind = "builtin"
	sc.Target.Endpoints = []string{srv.URL}
	sc.Load.Rate, sc.Load.Duration, sc.Load.Warmup = 200, scenario.Duration(3*time.Second), scenario.Duration(time.Second)
	sc.Load.Drain = scenario.Duration(time.Second)
	sc.CommitTimeout = scenario.Duration(2 * time.Second)
	sc.Workload.Senders = 100
	sc.Workload.Invalid = scenario.Invalid{Share: 0.2, Sorts: []string{"bad_signature"}}
	sc.Out = filepath.Join(t.TempDir(), "run")
	res, _ := run(t, context.Background(), sc)
	if res == nil {
		t.Fatal("no result")
	}
	s := res.Summary
	v := res.Verdict()
	t.Logf("verdict: %s", v)
	n := s.InvalidSent["bad_signature"]
	if n == 0 || s.InvalidAccepted["bad_signature"] != n || s.InvalidRefused["bad_signature: expired"] != n {
		t.Fatalf("sent %d bad signatures; accepted %v, refused %v", n, s.InvalidAccepted, s.InvalidRefused)
	}
	if !strings.HasPrefix(v, "FINDING: ") || !strings.Contains(v, "bad_signature accepted, never refused") {
		t.Errorf("the verdict does not lead with the finding: %q", v)
	}
}
