package runner_test

import (
	"context"
	"encoding/json"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure/measuretest"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Log(string(b)); return len(b), nil }

// run runs sc with every kind, logging to the test.
func run(t *testing.T, ctx context.Context, sc scenario.Scenario) (*report.Result, error) {
	t.Helper()
	res, err := runner.Run(ctx, sc, runner.Options{Log: testLog{t}, Kinds: all.Registry(), Binary: testbin.Path(t)})
	if res != nil {
		measuretest.Identities(t, res.Summary.Counts)
	}
	return res, err
}

func startNet(t *testing.T, g chain.Genesis) *testnet.Net { return startLinkedNet(t, g, "") }

// startLinkedNet starts 4 validators whose links follow topology (empty:
// direct).
func startLinkedNet(t *testing.T, g chain.Genesis, topology string) *testnet.Net {
	t.Helper()
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 4, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "count-chain", Genesis: g, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t), Topology: topology})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downFresh(n) })
	return n
}

// blockCount reads blocks [from, to] and counts payments from the given
// senders that committed with code 0 and with another code.
func blockCount(t *testing.T, rpc string, from, to int64, senders map[chain.Address]bool) (ok, failed int64) {
	byKind, failed := blockCountByKind(t, rpc, from, to, senders)
	for _, n := range byKind {
		ok += n
	}
	return ok, failed
}

// blockCountByKind is blockCount with the successes by kind: send, or
// multi_send for the ledger's batches.
func blockCountByKind(t *testing.T, rpc string, from, to int64, senders map[chain.Address]bool) (ok map[string]int64, failed int64) {
	t.Helper()
	c, err := rpchttp.New(rpc, "/websocket")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ok = map[string]int64{}
	for h := from; h <= to; h++ {
		b, err := c.Block(ctx, &h)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		res, err := c.BlockResults(ctx, &h)
		if err != nil {
			t.Fatalf("block results %d: %v", h, err)
		}
		for i, tx := range b.Block.Txs {
			p, err := chain.Decode(tx)
			if err != nil || !senders[chain.AddressOf(p.Sender)] {
				continue
			}
			switch {
			case res.TxsResults[i].Code != 0:
				failed++
			case p.Batch():
				ok["multi_send"]++
			default:
				ok["send"]++
			}
		}
	}
	return ok, failed
}

// The committed count and TPS must equal an independent count of our
// payments read back from the blocks, exactly.
func TestCommittedCountMatchesBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	n, off := sharedNet(t)
	senders := sendersFrom(sharedGenesis, off, 300)
	for _, mode := range []string{"live", "presigned"} { // the second run resumes the chain's sequences
		sc := scenario.Default()
		sc.Target.NetHome = n.Home
		sc.Load.Rate = 300
		sc.Load.Duration = scenario.Duration(4 * time.Second) // exactness holds at any length
		sc.Load.Warmup = scenario.Duration(time.Second)
		sc.Workload.Mode = scenario.Mode(mode)
		sc.Workload.Senders = 300
		sc.Workload.SendersOffset = off
		sc.Workload.Window = 4
		sc.Out = filepath.Join(t.TempDir(), "run-"+mode)
		res, err := run(t, context.Background(), sc)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		s := res.Summary
		if s.Committed < 1000 {
			t.Fatalf("%s: only %d committed", mode, s.Committed)
		}
		ok, failed := blockCount(t, n.Nodes[1].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
		if ok != s.Committed || failed != s.FailedTotal {
			t.Errorf("%s: result says %d committed, %d failed; blocks %d..%d hold %d and %d", mode, s.Committed, s.FailedTotal, res.Chain.FirstHeight, res.Chain.LastHeight, ok, failed)
		}
		steadyOK, _ := blockCount(t, n.Nodes[2].RPC, res.Chain.SteadyFirstHeight, res.Chain.SteadyLastHeight, senders)
		if steadyOK != s.Steady.Committed {
			t.Errorf("%s: steady window committed %d, blocks %d..%d hold %d", mode, s.Steady.Committed, res.Chain.SteadyFirstHeight, res.Chain.SteadyLastHeight, steadyOK)
		}
		// committed_tps: what the window's blocks after its first committed,
		// over the observed time from its first block to its last (plus
		// block-less time at its ends beyond one block interval, which a
		// healthy chain keeps small).
		firstOK, _ := blockCount(t, n.Nodes[3].RPC, res.Chain.SteadyFirstHeight, res.Chain.SteadyFirstHeight, senders)
		span := s.Steady.BlockWindowS + s.Steady.StallS
		if want := float64(steadyOK-firstOK) / span; s.CommittedTPS != want || s.Steady.BlockWindowS <= 0 {
			t.Errorf("%s: committed_tps %g, want (%d-%d)/%g = %g", mode, s.CommittedTPS, steadyOK, firstOK, span, want)
		}
		// Latency by stage: each block's proposal is seen before it commits.
		if l := s.LatencyMs; l.Proposed.Count == 0 || l.Proposed.P50 > l.Commit.P50 || l.Proposed.P50 < l.Ack.P50 {
			t.Errorf("%s: stages ack p50 %.1f, proposed p50 %.1f (%d), commit p50 %.1f", mode, l.Ack.P50, l.Proposed.P50, l.Proposed.Count, l.Commit.P50)
		}
		// A sixteenth of the payments (by hash) are timed into a second
		// node's mempool, before their block is proposed.
		if l := s.LatencyMs; l.Gossiped.Count < s.Steady.Committed/40 || l.Gossiped.Count > s.Steady.Committed/8 || l.Gossiped.P50 > l.Proposed.P50 {
			t.Errorf("%s: gossiped p50 %.1f (%d of %d steady), proposed p50 %.1f", mode, l.Gossiped.P50, l.Gossiped.Count, s.Steady.Committed, l.Proposed.P50)
		}
		if s.Steady.StallS > 1 || len(s.Stalls) > 0 || s.Halted != "" {
			t.Errorf("%s: a healthy chain shows stalls: stall_s %g, stalls %v, halted %q", mode, s.Steady.StallS, s.Stalls, s.Halted)
		}
		if s.Offered != s.Sent+s.Unsent || s.Sent != s.Accepted+s.RejectedTotal {
			t.Errorf("%s: offered %d != sent %d + unsent %d, or sent != accepted %d + rejected %d", mode, s.Offered, s.Sent, s.Unsent, s.Accepted, s.RejectedTotal)
		}
		if s.Sent != s.Accepted+s.RejectedTotal+s.UnackedTotal {
			t.Errorf("%s: sent %d != accepted %d + rejected %d + unacked %d", mode, s.Sent, s.Accepted, s.RejectedTotal, s.UnackedTotal)
		}
		if s.Accepted+s.UnackedTotal != s.Committed+s.FailedTotal+s.Expired+s.InFlightEnd {
			t.Errorf("%s: accepted %d + unacked %d != committed %d + failed %d + expired %d", mode, s.Accepted, s.UnackedTotal, s.Committed, s.FailedTotal, s.Expired)
		}
		checkResultFile(t, sc.Out)
	}
	if r := n.Check(context.Background()); len(r.Problems) > 0 {
		t.Fatalf("net check after load: %v", r.Problems)
	} else if a := r.Audits["node0"]; a.Accounts != sharedGenesis.Accounts+sharedGenesis.State {
		t.Errorf("node0 holds %d accounts, want the %d funded and %d pre-loaded", a.Accounts, sharedGenesis.Accounts, sharedGenesis.State)
	}
	// Payments went to the pre-loaded state too (recipients are drawn
	// across every account), and one of its accounts answers its balance.
	toState, got := stateRecipients(t, n.Nodes[0].RPC, 1, lastHeight(t, n.Nodes[0].RPC), sharedGenesis)
	if toState == 0 || got.Balance <= sharedGenesis.Balance {
		t.Errorf("%d payments to pre-loaded accounts; one of them holds %d (genesis %d)", toState, got.Balance, sharedGenesis.Balance)
	}
}

// checkResultFile reads result.json as a script would, by its public keys.
func checkResultFile(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var v any = m
		for _, p := range path {
			mm, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = mm[p]
		}
		return v
	}
	for _, p := range [][]string{{"schema_version"}, {"ended_because"}, {"summary", "offered"}, {"summary", "sent"},
		{"summary", "accepted"}, {"summary", "rejected_total"}, {"summary", "committed"}, {"summary", "expired"},
		{"summary", "committed_tps"}, {"summary", "latency_ms", "ack", "p50"}, {"summary", "latency_ms", "commit", "p999"},
		{"summary", "latency_ms", "commit", "max"}, {"chain", "first_height"}, {"chain", "last_height"}, {"environment", "cores"}} {
		if get(p...) == nil {
			t.Errorf("result.json lacks %v", p)
		}
	}
	if get("ended_because") != "completed" || get("status") != "complete" {
		t.Errorf("ended_because %v status %v", get("ended_because"), get("status"))
	}
	if s, _ := get("scenario", "workload", "genesis_seed").(string); s != "" {
		t.Error("the genesis seed (which derives the keys) was written into the result")
	}
}

// A node that stalls for 1 s must show in the latency percentiles: latency
// counts from the intended send time, not from when the generator got to it.
func TestCoordinatedOmission(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	sink := sink.NewSink("tpslab", testnet.DefaultGenesis())
	sink.StallAfter, sink.StallFor = 600, time.Second // at about t = 3 s
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sink}
	go srv.Serve(l)
	defer srv.Close()
	sc := scenario.Default()
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = []string{"http://" + l.Addr().String()}
	sc.Workload.Kind = "raw"
	sc.Load.Rate = 200
	sc.Load.Duration = scenario.Duration(6 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Load.Drain = scenario.Duration(0)
	sc.Load.Connections = 4
	sc.Out = filepath.Join(t.TempDir(), "run")
	res, err := run(t, context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	ack := res.Summary.LatencyMs.Ack
	if ack.Max < 950 || ack.P99 < 800 {
		t.Errorf("ack latency p99 %.0f ms, max %.0f ms: the 1 s stall is hidden", ack.P99, ack.Max)
	}
	if lag := res.Summary.LatencyMs.ScheduleLag; lag.Max < 900 {
		t.Errorf("schedule lag max %.0f ms, want the stall to show", lag.Max)
	}
	if res.Summary.ConnWaits == 0 {
		t.Error("no connection waits recorded during the stall")
	}
	// Gathering is the default: one lane for the one endpoint (a lane
	// that only waits, as in the stall, gets no other), and the warning
	// names the lane's batch, not connections that were never used.
	if g := res.Summary.Generator; g.Lanes != 1 || !strings.Contains(g.Warning, "lane's previous batch") {
		t.Errorf("generator lanes %d, warning %q: want 1 lane and the lane's wait named", g.Lanes, g.Warning)
	}
}

// A far node (40 ms an answer) at 500 payments/s needs about 20
// connections one payment at a time: 4 grow to carry the rate and the
// summary says from where; held at 4 by load.max_connections, the same
// load waits for them and the warning names the setting.
func TestConnectionsGrowForAFarNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	sk := sink.NewSink("tpslab", testnet.DefaultGenesis())
	sk.Latency = 40 * time.Millisecond
	srv := httptest.NewServer(sk)
	defer srv.Close()
	for _, most := range []int{0, 4} {
		sc := scenario.Default()
		sc.Target.Kind = "cometbft"
		sc.Target.Endpoints = []string{srv.URL}
		sc.Workload.Kind = "raw"
		sc.Load.Rate = 500
		sc.Load.Duration = scenario.Duration(4 * time.Second)
		sc.Load.Warmup = scenario.Duration(time.Second)
		sc.Load.Drain = scenario.Duration(0)
		sc.Load.SendInterval = "0"
		sc.Load.Connections, sc.Load.MaxConnections = 4, most
		sc.Out = filepath.Join(t.TempDir(), "run")
		res, err := run(t, context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		s, g := res.Summary, res.Summary.Generator
		t.Logf("max_connections %d: connections %d (from %d), sent %d of %d; %s", most, g.Workers, g.ConnectionsStart, s.Sent, s.Offered, g.Warning)
		if most == 0 && (g.ConnectionsStart != 4 || g.Workers < 20 || g.Workers > 32 || s.Sent < s.Offered*9/10) {
			t.Errorf("grown: connections %d from %d, sent %d of %d: want 4 grown to 20..32 (8 × 4), sending at least 90%%", g.Workers, g.ConnectionsStart, s.Sent, s.Offered)
		}
		if most == 4 && (g.Workers != 4 || g.ConnectionsStart != 0 || s.Sent > s.Offered/2 || !strings.Contains(g.Warning, "load.max_connections")) {
			t.Errorf("held at 4: connections %d (from %d), sent %d of %d, warning %q: want 4, at most half sent, and the setting named", g.Workers, g.ConnectionsStart, s.Sent, s.Offered, g.Warning)
		}
	}
}

// A run against tpslab sink measures tpslab's own sending: its headline
// says so with the sent rate and ack latency, it does not wait a drain for
// commits that cannot come, polls the sink's blocks without a word about
// a subscription, and warns of no block count (issue 70).
func TestSinkRunSaysWhatItMeasures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	srv := httptest.NewServer(sink.NewSink("tpslab", testnet.DefaultGenesis()))
	defer srv.Close()
	sc := scenario.Default()
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = []string{srv.URL}
	sc.Workload.Kind = "raw"
	sc.Load.Rate = 200
	sc.Load.Duration = scenario.Duration(3 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Load.Drain = scenario.Duration(time.Minute)
	sc.Out = filepath.Join(t.TempDir(), "run")
	res, err := run(t, context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	j := res.Judge()
	if j.Outcome != report.OutcomeSink || !strings.HasPrefix(res.Verdict(), "tpslab sink (it commits nothing") || strings.Contains(res.Verdict(), "in flight") {
		t.Errorf("outcome %q, headline %q: want the sink's", j.Outcome, res.Verdict())
	}
	for _, n := range res.Notes {
		if strings.Contains(n, "subscription") {
			t.Errorf("note: %q", n)
		}
	}
	for _, w := range res.Summary.Warnings {
		if strings.Contains(w, "block(s)") {
			t.Errorf("warning: %q", w)
		}
	}
	drain := 0
	for _, sec := range res.Series {
		if sec.Phase == "drain" {
			drain++
		}
	}
	if drain > 1 || res.Summary.Committed != 0 || res.Summary.Sent == 0 {
		t.Errorf("%d drain seconds (of a 1 min drain), committed %d, sent %d: want no drain, nothing committed, some sent", drain, res.Summary.Committed, res.Summary.Sent)
	}
}

// stateRecipients counts the successful payments in blocks from..to whose
// recipient is one of g's pre-loaded accounts (chain.StateAddress), and
// reads the last such recipient's account by the /account query.
func stateRecipients(t *testing.T, rpc string, from, to int64, g chain.Genesis) (n int64, last chain.AccountInfo) {
	t.Helper()
	state := map[chain.Address]bool{}
	for i := uint64(0); i < g.State; i++ {
		state[chain.StateAddress(g.Seed, i)] = true
	}
	c, err := rpchttp.New(rpc, "/websocket")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var to0 chain.Address
	for h := from; h <= to; h++ {
		b, err := c.Block(ctx, &h)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		res, err := c.BlockResults(ctx, &h)
		if err != nil {
			t.Fatalf("block results %d: %v", h, err)
		}
		for i, tx := range b.Block.Txs {
			if p, err := chain.Decode(tx); err == nil && !p.Batch() && state[p.Recipient] && res.TxsResults[i].Code == 0 {
				n, to0 = n+1, p.Recipient
			}
		}
	}
	if n == 0 {
		return 0, last
	}
	r, err := c.ABCIQuery(ctx, "/account", to0[:])
	if err != nil || json.Unmarshal(r.Response.Value, &last) != nil {
		t.Fatalf("/account of a pre-loaded account: %v", err)
	}
	return n, last
}

// lastHeight is the node's latest height.
func lastHeight(t *testing.T, rpc string) int64 {
	t.Helper()
	c, err := rpchttp.New(rpc, "/websocket")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.SyncInfo.LatestBlockHeight
}
