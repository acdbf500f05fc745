package cosmos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/tpslab/tpslab/internal/kinds/all"
	cosmoskind "github.com/tpslab/tpslab/internal/kinds/cosmos"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/targets/suttest"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
	"github.com/tpslab/tpslab/internal/workload"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Log(string(b)); return len(b), nil }

func startChain(t *testing.T, validators int, more ...func(*sdknet.Options)) *testnet.Net {
	t.Helper()
	bin, err := sdknet.Tpsd(testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	o := sdknet.Options{Kind: "cosmos", Binary: bin, Validators: validators, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "cosmos-it", WalletSeed: "it", Wallets: 1000, Balance: 1_000_000_000, Settings: testnet.DefaultSettings(), Log: testLog{t}}
	for _, f := range more {
		f(&o)
	}
	n, err := sdknet.Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	return n
}

// blockCount reads blocks [from, to] and counts the transactions sent by
// the given addresses that executed with code 0 (from block_results), and
// the others.
func blockCount(t *testing.T, rpc string, from, to int64, senders map[string]bool) (ok, failed int64) {
	t.Helper()
	cl := &cometbft.Client{URL: rpc, HTTP: http.DefaultClient}
	for h := from; h <= to; h++ {
		b, err := cl.Block(context.Background(), h)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		res, err := cl.BlockResults(context.Background(), h)
		if err != nil {
			t.Fatalf("block_results %d: %v", h, err)
		}
		for i, tx := range b.Data.Txs {
			s, err := cosmos.Sender(tx)
			if err != nil || !senders[s] {
				continue
			}
			if res[i].Code == 0 {
				ok++
			} else {
				failed++
			}
		}
	}
	return ok, failed
}

func senders(n *testnet.Net, count int) map[string]bool {
	m := map[string]bool{}
	for _, w := range cosmos.DeriveWallets(sdknet.Of(n).WalletSeed, count, sdknet.Of(n).Prefix) {
		m[w.Address] = true
	}
	return m
}

func bankScenario(t *testing.T, home, via, mode string) scenario.Scenario {
	all.Registry() // the kinds' sections (cosmos.via) are registered with them
	sc := scenario.Default()
	sc.Target.NetHome = home
	if err := scenario.Set(&sc, "cosmos.via", via); err != nil {
		t.Fatal(err)
	}
	sc.Load.Rate = 150
	sc.Load.Duration = scenario.Duration(4 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Workload.Mode = scenario.Mode(mode)
	sc.Workload.Senders = 300
	sc.Workload.Window = 4
	sc.Out = filepath.Join(t.TempDir(), "run-"+via+"-"+mode)
	return sc
}

func run(t *testing.T, sc scenario.Scenario) (*report.Result, error) {
	t.Helper()
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: testLog{t}, Kinds: all.Registry()})
	if res != nil {
		measuretest.Identities(t, res.Summary.Counts)
	}
	return res, err
}

// Bank sends through every broadcast path, on one validator and on four
// across the global topology's links with an RPC node taking the load
// (through tpslab's own emulated link, for the RPC path): the
// committed count equals an independent count of our code-0 transactions
// in the blocks the result names, and the denom's supply is conserved.
func TestBankSendsThroughEveryPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Cosmos SDK chains")
	}
	for _, validators := range []int{1, 4} {
		// One validator: the package's shared chain; four: a chain of its
		// own, on emulated links between regions, and a full node.
		var n *testnet.Net
		off := 0
		if validators == 1 {
			n, off = sharedChain(t)
		} else {
			n = startChain(t, validators, func(o *sdknet.Options) {
				o.Topology, o.RPCNodes, o.ClientLinks, o.Links = "global", 1, true, testbin.Path(t)
				o.Settings.MempoolLog = true // the gossiped stage
			})
			// 6 between validators, 4 from the RPC node, 5 from tpslab.
			if n.Links == nil || len(n.Links.Links) != 15 || n.Nodes[4].Role != "rpc" || n.RPCEndpoints()[0] != n.Nodes[4].ClientRPC {
				t.Fatalf("4 validators and an RPC node on global, client links: links %+v, nodes %+v", n.Links, n.Nodes)
			}
		}
		ours := sendersFrom(n, off, 300)
		var gossiped, proposed int64
		for _, c := range []struct{ via, mode string }{{"rpc", "live"}, {"rest", "live"}, {"grpc", "presigned"}} {
			sc := bankScenario(t, n.Home, c.via, c.mode)
			sc.Workload.SendersOffset = off
			res, err := run(t, sc)
			if err != nil {
				t.Fatalf("%d validators, %s %s: %v", validators, c.via, c.mode, err)
			}
			s := res.Summary
			ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, ours)
			t.Logf("%d validators via %s (%s): %.1f committed tx/s, p99 commit %.0f ms, %d committed, blocks hold %d", validators, c.via, c.mode, s.CommittedTPS, s.LatencyMs.Commit.P99, s.Committed, ok)
			// Across regions on a busy CI machine the live paths have
			// committed 355 to 600 of 600 in 4 s (the rest in flight at the
			// end or unsent): the floor is a third there, two thirds on one
			// validator; the exact count is the point.
			floor := int64(400)
			if validators > 1 {
				floor = 200
			}
			cn := s.Counts
			t.Logf("%d validators via %s: offered %d, sent %d, unsent %d, rejected %v, expired %d, in flight at the end %d",
				validators, c.via, cn.Offered, cn.Sent, cn.Unsent, cn.Rejected, cn.Expired, cn.InFlightEnd)
			if s.Committed < floor || ok != s.Committed || failed != s.FailedTotal {
				t.Errorf("%d validators via %s: result %d committed / %d failed, blocks %d..%d hold %d / %d",
					validators, c.via, s.Committed, s.FailedTotal, res.Chain.FirstHeight, res.Chain.LastHeight, ok, failed)
			}
			// A steady window no block closed in (CI: four validators across
			// regions on a starved machine committed all 573 after it) has
			// no heights: it counts none.
			var steady int64
			if res.Chain.SteadyFirstHeight > 0 {
				steady, _ = blockCount(t, n.Nodes[0].RPC, res.Chain.SteadyFirstHeight, res.Chain.SteadyLastHeight, ours)
			}
			if steady != s.Steady.Committed {
				t.Errorf("steady window: result %d, blocks %d", s.Steady.Committed, steady)
			}
			// A steady window without a commit (CI: a 4 s window across
			// regions on a starved machine) times no stage: the paths'
			// counts are summed below.
			proposed += s.LatencyMs.Proposed.Count
			if l := s.LatencyMs; l.Proposed.Count > 0 && l.Proposed.P50 > l.Commit.P50 {
				t.Errorf("%d validators via %s: proposed p50 %.1f (%d), commit p50 %.1f", validators, c.via, l.Proposed.P50, l.Proposed.Count, l.Commit.P50)
			}
			// Four nodes' logs say when the RPC node's gossip reached a
			// validator (issue 53); one node has no one to gossip to. One
			// payment in 16 is timed, over the steady window, which a busy
			// machine shrinks (CI: 7.7 committed tx/s, none timed): the
			// three paths' counts are summed below.
			gossiped += s.LatencyMs.Gossiped.Count
			if l := s.LatencyMs; l.Gossiped.Count > 0 && l.Gossiped.P50 > l.Commit.P50 {
				t.Errorf("%d validators via %s: gossiped p50 %.1f (%d), commit p50 %.1f", validators, c.via, l.Gossiped.P50, l.Gossiped.Count, l.Commit.P50)
			}
			if res.Network.Kind != "cosmos" {
				t.Errorf("network kind %q", res.Network.Kind)
			}
			checkPublicFields(t, sc.Out)
		}
		if _, problems := sdknet.Check(context.Background(), n); len(problems) > 0 {
			t.Errorf("%d validators: net check: %v", validators, problems)
		}
		if proposed == 0 {
			t.Errorf("%d validators: no payment's proposal timed on any path", validators)
		}
		if validators == 4 && gossiped == 0 {
			t.Errorf("4 validators: no payment's gossip timed on any path")
		}
		if validators == 4 {
			faultsAcrossRegions(t, n, ours)
		}
	}
}

// diedOnRestart is the last words of node's death after its restart in
// res's events ("" when it did not die so).
func diedOnRestart(res *report.Result, node string) string {
	if res == nil {
		return ""
	}
	restarted := false
	for _, e := range res.Events {
		switch {
		case e.Target == node && e.Kind == "node_up":
			restarted = true
		case e.Target == node && e.Kind == "node_down" && restarted:
			if _, words, ok := strings.Cut(e.Detail, "it ended with: "); ok && strings.HasPrefix(words, "panic: ") {
				return words
			}
		}
	}
	return ""
}

// faultsAcrossRegions crashes node1 of four tpsd validators (SIGKILL) for
// 3 s, then cuts node0 and node1 from node2, node3 and the RPC node for 4
// s, during one load across the global topology (issue 53): the chain
// halts in the partition (neither side has two thirds) and resumes when it
// heals, the restarted validator catches up on its own state, committed
// equals the blocks' count of our payments, and the audit after the
// faults passes.
func faultsAcrossRegions(t *testing.T, n *testnet.Net, ours map[string]bool) {
	sc := bankScenario(t, n.Home, "rpc", "live")
	// 80 tx/s for 28 s: at 150 for 24 s a CI machine running the other
	// lane beside it made a block every 5 s and the chain took 17 s to
	// resume after the heal (10 s alone: its rounds grew in the cut).
	sc.Load.Duration = scenario.Duration(28 * time.Second)
	sc.Load.Rate = 80
	for _, spec := range []string{"3s:crash:node1:3s", "10s:partition:node0+node1:4s"} {
		f, err := scenario.ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		sc.Faults = append(sc.Faults, f)
	}
	sc.Out = filepath.Join(t.TempDir(), "faults")
	res, err := run(t, sc)
	if words := diedOnRestart(res, "node1"); err != nil && words != "" && strings.Contains(err.Error(), "node1: not running") {
		// tpsd's own failing, not tpslab's: a validator killed as it
		// committed can restart into "panic: version does not exist"
		// (SDK 0.53, IAVL 1.2; 1 in some 20 crashes here). tpslab must
		// then say so, and its counts must still be exact.
		t.Logf("node1 did not survive its restart (%s): the chain's, named as it should be; the counts are checked", words)
		if ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, ours); ok != res.Summary.Committed || failed != res.Summary.FailedTotal {
			t.Errorf("result %d committed / %d failed, blocks hold %d / %d", res.Summary.Committed, res.Summary.FailedTotal, ok, failed)
		}
		return
	}
	if err != nil {
		t.Fatalf("a crash and a partition: %v", err)
	}
	s := res.Summary
	ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, ours)
	if len(s.Faults) != 2 {
		t.Fatalf("%d faults measured, expected the crash and the partition", len(s.Faults))
	}
	for _, fa := range s.Faults {
		cu := -1.0
		if fa.CaughtUpS != nil {
			cu = *fa.CaughtUpS
		}
		t.Logf("%s: %.0f tx/s before, %.0f during, %.0f after, longest gap %.1f s, recovery %.1f s, caught up %.1f s",
			fa.Fault, fa.BeforeTPS, fa.DuringTPS, fa.AfterTPS, fa.LongestGapS, fa.RecoveryS, cu)
	}
	t.Logf("%d committed, blocks hold %d", s.Committed, ok)
	if ok != s.Committed || failed != s.FailedTotal || s.Committed < 480 {
		t.Errorf("result %d committed / %d failed, blocks %d..%d hold %d / %d", s.Committed, s.FailedTotal, res.Chain.FirstHeight, res.Chain.LastHeight, ok, failed)
	}
	// During the crash the three may commit nothing: when the crashed one
	// is the round's proposer they wait timeout_propose for it.
	crash, cut := s.Faults[0], s.Faults[1]
	if crash.CaughtUpS == nil || *crash.CaughtUpS < 0 {
		t.Errorf("node1 did not catch up after its restart: %+v", crash)
	}
	// Resumed: a block after the heal and payments committed after it (the
	// rate back to 90% of before over 3 blocks may take longer than the 14
	// s left across regions on a busy machine).
	// The halt is the gap: a block agreed on as the cut came may commit in
	// it, and on a slow chain (CI: a block every 5 s) it is as much as the
	// rate before (18 tx/s during and before, a 6.8 s gap).
	if cut.LongestGapS < 3.5 {
		t.Errorf("the chain went on through a 2-of-4 partition: %+v", cut)
	}
	// Resumed: within the load, or, when the validators' escalated rounds
	// outlast it (CI: a 14 s gap, nothing after it in the load), in blocks
	// after it.
	if cut.AfterTPS <= 0 || cut.FirstBlockS == nil || *cut.FirstBlockS < 0 {
		// net.json as the run left it: node1 restarted under a new pid.
		now, err := testnet.Load(n.Home)
		if err != nil {
			t.Fatal(err)
		}
		if err := now.WaitForBlocks(context.Background(), res.Chain.LastHeight+2, 3*time.Minute); err != nil {
			t.Errorf("the chain did not resume after the partition healed: %v (%+v)", err, cut)
		}
	}
	if s.NetCheck == nil || !s.NetCheck.OK {
		t.Errorf("the audit after the faults failed: %+v", s.NetCheck)
	}
	// Health (issue 56): node1's restart, its lag and the commits without
	// its signature; every node within a block after the load.
	h := s.Health
	if h == nil || len(h.Nodes) < 4 {
		t.Fatalf("no health of the nodes: %+v", h)
	}
	t.Log(h.Line())
	// Behind, missed signatures or both: when node1 proposed the height it
	// died at, the others waited out the round, and it came back to the
	// same height (a run here: 1 block behind, "in step", 2 missed).
	if n1 := h.Nodes[1]; n1.Name != "node1" || n1.Restarts != 1 || n1.BehindMax < 1 && n1.Missed < 1 {
		t.Errorf("node1 crashed and restarted: %+v, want 1 restart, and behind or missed signatures", n1)
	}
	if h.Nodes[2].Restarts != 0 || h.CaughtUpS < 0 {
		t.Errorf("health: %+v", h)
	}
}

// checkPublicFields reads result.json as a script would: the same public
// keys for every kind.
func checkPublicFields(t *testing.T, dir string) {
	t.Helper()
	r, err := report.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, path := range [][]string{{"summary", "committed"}, {"summary", "committed_tps"}, {"chain", "first_height"}, {"chain", "last_height"},
		{"summary", "latency_ms", "commit", "p99"}, {"summary", "accepted"}, {"summary", "rejected_total"}} {
		var v any = m
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		if v == nil {
			t.Errorf("result.json lacks %v", path)
		}
	}
	if strings.Contains(string(b), `"wallet_seed":"it"`) {
		t.Error("the wallet seed was written to the result")
	}
	// Provenance (issue 55): the node program by path, SHA-256 and its
	// version output, the genesis and each node's settings by hash.
	hex := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if p := r.Network.Provenance; p == nil || len(p.Programs) == 0 || !hex.MatchString(p.Programs[0].SHA256) ||
		p.Programs[0].Version == "" || !strings.HasSuffix(p.Programs[0].Path, "tpsd") || !hex.MatchString(p.GenesisSHA256) ||
		!hex.MatchString(p.Configs["node0/config/app.toml"]) {
		t.Errorf("provenance: %+v", p)
	}
	if e := r.Environment; e.Machine == nil || e.Machine.Kernel == "" || e.Machine.MemoryBytes <= 0 {
		t.Errorf("machine: %+v", e.Machine)
	}
}

// Both kinds of sequence mismatch, forced on a real chain, are recovered:
// a dropped transaction (the chain expects a lower sequence) is resubmitted
// from its original bytes, and a sequence used elsewhere (the chain expects
// a higher one) gets the payment re-signed.
func TestSequenceMismatchRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	n := startChain(t, 1)
	ctx := context.Background()
	tgt, err := cosmos.New(cosmos.Options{RPC: n.RPCEndpoints(), Connections: 1})
	if err != nil {
		t.Fatal(err)
	}
	codec := cosmos.NewCodec(n.ChainID, sdknet.Of(n).Denom, nil, 200_000, "", cosmos.DeriveWallets(sdknet.Of(n).WalletSeed, 10, sdknet.Of(n).Prefix), tgt.ABCIQuery)
	p, err := workload.NewPayments(ctx, workload.PaymentsConfig{Senders: 2, Window: 10, Amount: workload.Amount{Min: 1, Max: 1},
		SenderChoice: workload.Choice{Dist: "uniform"}, RecipientChoice: workload.Choice{Dist: "uniform"}}, codec)
	if err != nil {
		t.Fatal(err)
	}
	b := p.NewBuilder(1)
	sub := tgt.Submitter(0)
	copyTx := func(x sut.Tx) sut.Tx { x.Bytes = append([]byte(nil), x.Bytes...); return x }
	waitSeq := func(s int, want uint64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if got, err := codec.Nonce(ctx, s); err == nil && got >= want {
				return
			}
		}
		t.Fatalf("sender %d never reached sequence %d", s, want)
	}

	// Lower: payment 0 "was accepted" but never reached the chain (as if a
	// node dropped it); payment 1 is refused, the chain expecting 0.
	x0, _ := b.Next(ctx, 0, 0)
	tx0 := copyTx(x0.Tx)
	b.Answer(ctx, 0, tx0, false, x0.Nonce, sut.Receipt{Status: sut.Pending}, true)
	x1, _ := b.Next(ctx, 0, 0)
	tx1 := copyTx(x1.Tx)
	r := sub.Submit(ctx, tx1)
	if r.Status != sut.Rejected || r.Reason != "sequence_mismatch" {
		t.Fatalf("a gap was not refused as a mismatch: %+v", r)
	}
	rc := b.Answer(ctx, 0, tx1, false, x1.Nonce, r, true)
	if rc.Class != "chain_lower" || rc.Resigned || len(rc.Resubmit) != 1 || rc.Resubmit[0].ID != tx0.ID || rc.Tx.ID != tx1.ID {
		t.Fatalf("recovery %+v", rc)
	}
	for _, tx := range append(rc.Resubmit, rc.Tx) {
		if r := sub.Submit(ctx, tx); r.Status != sut.Pending {
			t.Fatalf("resubmission refused: %+v", r)
		}
	}
	waitSeq(0, x1.Nonce+1)

	// Higher: sender 1's sequence is used by another client after tpslab
	// read it.
	stale, _ := b.Next(ctx, 1, 0)
	staleTx := copyTx(stale.Tx)
	other := codec.Sign(nil, 1, 3, 7, stale.Nonce)
	if r := sub.Submit(ctx, sut.Tx{ID: codec.ID(other), Bytes: other}); r.Status != sut.Pending {
		t.Fatalf("the other client's payment: %+v", r)
	}
	waitSeq(1, stale.Nonce+1)
	r = sub.Submit(ctx, staleTx)
	rc = b.Answer(ctx, 1, staleTx, false, stale.Nonce, r, true)
	if r.Reason != "sequence_mismatch" || rc.Class != "chain_higher" || !rc.Resigned || rc.Nonce != stale.Nonce+1 {
		t.Fatalf("answer %+v, recovery %+v", r, rc)
	}
	if r := sub.Submit(ctx, rc.Tx); r.Status != sut.Pending {
		t.Fatalf("re-signed payment refused: %+v", r)
	}
	waitSeq(1, stale.Nonce+2)
}

// swallower forwards RPC requests to a node, but answers every k-th
// broadcast itself with success, without forwarding it: a node that
// accepted a transaction and lost it.
type swallower struct {
	proxy *httputil.ReverseProxy
	k     int64
	n     atomic.Int64
	lost  atomic.Int64
}

func (s *swallower) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if bytes.Contains(body, []byte(`"broadcast_tx_sync"`)) && s.n.Add(1)%s.k == 0 {
		s.lost.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"code":0,"log":"","codespace":""}}`))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.proxy.ServeHTTP(w, r)
}

// In a real run, transactions lost after acceptance are recovered (the
// next payment of the sender finds the gap) and counted by class, and the
// committed count still equals the blocks'.
func TestLostTransactionsRecoveredInARun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	n, off := sharedChain(t)
	u, _ := url.Parse(n.Nodes[0].RPC)
	sw := &swallower{proxy: httputil.NewSingleHostReverseProxy(u), k: 40}
	srv := httptest.NewServer(sw)
	defer srv.Close()
	sc := bankScenario(t, "", "rpc", "live")
	sc.Target.Kind = "cosmos"
	sc.Target.Endpoints = []string{srv.URL}
	sc.Workload.WalletSeed = "it"
	sc.Workload.Senders = 100
	sc.Workload.SendersOffset = off
	sc.Load.Rate = 200
	sc.Load.Duration = scenario.Duration(8 * time.Second)
	res, err := run(t, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("%d lost by the proxy; mismatches %v, resubmitted %d, re-signed %d, expired %d", sw.lost.Load(), s.Mismatches, s.Resubmitted, s.Resigned, s.Expired)
	if sw.lost.Load() == 0 || s.Mismatches["chain_lower"] == 0 || s.Resubmitted == 0 {
		t.Fatalf("lost %d, mismatches %v, resubmitted %d: nothing recovered", sw.lost.Load(), s.Mismatches, s.Resubmitted)
	}
	ok, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, sendersFrom(n, off, 100))
	if ok != s.Committed {
		t.Errorf("committed %d, blocks hold %d", s.Committed, ok)
	}
	if s.Committed+s.Expired+s.InFlightEnd+s.FailedTotal != s.Accepted+s.UnackedTotal {
		t.Errorf("accepted %d + unacked %d != committed %d + failed %d + expired %d + in flight at the end %d", s.Accepted, s.UnackedTotal, s.Committed, s.FailedTotal, s.Expired, s.InFlightEnd)
	}
}

// Senders a network did not fund are funded from a funder key by MultiSend
// fan-out before the load; with reuse_wallets a second run skips it.
func TestFundingFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	n := startChain(t, 1)
	sc := bankScenario(t, n.Home, "rpc", "live")
	sc.Workload.WalletSeed = "fresh"
	sc.Workload.Senders = 2000
	sc.Workload.FunderKey = sdknet.Of(n).FunderKey
	var log bytes.Buffer
	res, err := runner.Run(context.Background(), sc, runner.Options{Log: &log, Kinds: all.Registry()})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "funded 2000 wallets") || res.Summary.Committed < 400 {
		t.Fatalf("committed %d\n%s", res.Summary.Committed, log.String())
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), sdknet.Of(n).FunderKey) {
		t.Error("the funder key's path was written to the result")
	}
	sc.Out = filepath.Join(t.TempDir(), "again")
	sc.Workload.ReuseWallets = true
	log.Reset()
	if _, err := runner.Run(context.Background(), sc, runner.Options{Log: &log, Kinds: all.Registry()}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "funding") {
		t.Errorf("reuse_wallets funded again:\n%s", log.String())
	}
	// 3000 senders with reuse_wallets: the first 2000 hold their funds, so
	// funding resumes after them and pays only the last 1000.
	funder, err := cosmos.ReadKeyFile(sdknet.Of(n).FunderKey, sdknet.Of(n).Prefix)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cometbft.Client{URL: n.Nodes[0].RPC, HTTP: http.DefaultClient}
	before, err := cosmos.Balance(context.Background(), cl.ABCIQuery, funder.Address, sdknet.Of(n).Denom)
	if err != nil {
		t.Fatal(err)
	}
	sc.Out = filepath.Join(t.TempDir(), "more")
	sc.Workload.Senders = 3000
	log.Reset()
	res, err = runner.Run(context.Background(), sc, runner.Options{Log: &log, Kinds: all.Registry()})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	after, _ := cosmos.Balance(context.Background(), cl.ABCIQuery, funder.Address, sdknet.Of(n).Denom)
	paid := before - after
	if want := 1000 * sc.Workload.FundAmount; paid < want || paid >= 2*want {
		t.Errorf("the funder paid %d, want the last 1000 wallets' %d and fees (the first 2000 were funded)", paid, want)
	}
	note := false
	for _, n := range res.Notes {
		note = note || strings.HasPrefix(n, "funding: 3000 wallets")
	}
	if !note || !strings.Contains(log.String(), "funding: 3000 of 3000 wallets (100%)") {
		t.Errorf("no funding note or progress: notes %q\n%s", res.Notes, log.String())
	}
}

// The Cosmos target keeps the contract on a real SDK node, through each
// submission path; a send from an unfunded wallet is refused by name.
func TestContractAgainstAnSDKNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	n := startChain(t, 1)
	for _, via := range []string{"rpc", "rest", "grpc"} {
		tgt, err := cosmos.New(cosmos.Options{RPC: n.RPCEndpoints(), API: []string{n.Nodes[0].API}, GRPC: []string{n.Nodes[0].GRPC}, Via: via, Connections: 2})
		if err != nil {
			t.Fatal(err)
		}
		wallets := cosmos.DeriveWallets(sdknet.Of(n).WalletSeed, 30, sdknet.Of(n).Prefix)
		codec := cosmos.NewCodec(n.ChainID, sdknet.Of(n).Denom, nil, 200_000, "contract", wallets, tgt.ABCIQuery)
		seqs := make([]uint64, 30)
		for i := range seqs {
			if seqs[i], err = codec.Nonce(context.Background(), i); err != nil {
				t.Fatal(err)
			}
		}
		valid := func(i int) sut.Tx {
			b := codec.Sign(nil, i, i+10, 1, seqs[i])
			seqs[i]++
			return sut.Tx{ID: codec.ID(b), Bytes: b}
		}
		bad := codec.Sign(nil, 19, 18, 1, seqs[19]+5) // a gap: refused as sequence_mismatch
		invalid := sut.Tx{ID: codec.ID(bad), Bytes: bad}
		t.Run(via, func(t *testing.T) {
			suttest.Run(t, suttest.Case{Target: tgt, Valid: valid, Invalid: &invalid, Commits: true})
		})
	}
}

// Two clients sending from the same accounts at once (no load lock between
// them: they are given by endpoint) use each other's sequences: each sees
// the chain expect higher sequences than its own, re-signs, and counts it;
// together they commit exactly what the blocks hold.
func TestTwoClientsShareSenders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	n := startChain(t, 1)
	results := make(chan *report.Result, 2)
	errs := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		sc := bankScenario(t, "", "rpc", "live")
		sc.Target.Kind = "cosmos"
		sc.Target.Endpoints = n.RPCEndpoints()
		sc.Workload.WalletSeed = "it"
		sc.Workload.Senders = 20
		sc.Workload.Window = 2
		sc.Load.Rate = 60
		sc.Seed = int64(len(name) + int(name[0]))
		sc.Out = filepath.Join(t.TempDir(), name)
		go func() {
			res, err := run(t, sc)
			results <- res
			errs <- err
		}()
	}
	var committed, higher, resigned int64
	var first, last int64 = 1 << 62, 0
	for i := 0; i < 2; i++ {
		res := <-results
		if err := <-errs; err != nil && res == nil {
			t.Fatal(err)
		}
		s := res.Summary
		committed += s.Committed
		higher += s.Mismatches["chain_higher"]
		resigned += s.Resigned
		first, last = min(first, res.Chain.FirstHeight), max(last, res.Chain.LastHeight)
	}
	t.Logf("committed %d, chain_higher %d, re-signed %d", committed, higher, resigned)
	if higher == 0 || resigned == 0 {
		t.Fatalf("two clients on the same senders saw no higher-sequence mismatch (%d) or re-signed nothing (%d)", higher, resigned)
	}
	ok, _ := blockCount(t, n.Nodes[0].RPC, first, last, senders(n, 20))
	if ok != committed {
		t.Errorf("the two runs committed %d together, blocks %d..%d hold %d", committed, first, last, ok)
	}
}

// Gas is the chain's: a sender's first payment is simulated, a later one
// measured (a real payment before the load, then a simulation from its
// sender), and each reserves what it uses x1.15 (a first x1.3), not 200,000. And a chain whose
// blocks hold fewer payments than are offered per block says so before the
// load: block.max_gas 2,000,000 holds about 20 such sends, fewer than
// 150/s offered at a block every half second (issue 24).
func TestAutoGasAndBlockSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an SDK chain")
	}
	bin, err := sdknet.Tpsd(testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	st := testnet.DefaultSettings()
	st.MaxBlockGas = 2_000_000
	n, err := sdknet.Up(context.Background(), sdknet.Options{Kind: "cosmos", Binary: bin, Validators: 1, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "cosmos-space", WalletSeed: "it", Wallets: 1000, Balance: 1_000_000_000, Settings: st, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	sc := bankScenario(t, n.Home, "rpc", "presigned")
	sc.Load.Duration = scenario.Duration(4 * time.Second)
	res, _ := run(t, sc)
	if res == nil {
		t.Fatal("no result")
	}
	var used, reserved, first uint64
	space := ""
	gasNote := regexp.MustCompile(`a later one to (\d+).*each payment reserves (\d+) \(x1\.15\), a sender's first (\d+)`)
	for _, note := range res.Notes {
		if m := gasNote.FindStringSubmatch(note); m != nil {
			used, _ = strconv.ParseUint(m[1], 10, 64)
			reserved, _ = strconv.ParseUint(m[2], 10, 64)
			first, _ = strconv.ParseUint(m[3], 10, 64)
			continue
		}
		if strings.HasPrefix(note, "warning: block space: ") {
			space = note
		}
	}
	if used == 0 || reserved < used || reserved >= first || first >= 200_000 {
		t.Fatalf("gas: a later payment simulated %d, reserved %d, a first %d: want a calibrated later payment x1.15 under a first payment's reservation (notes %q)", used, reserved, first, res.Notes)
	}
	// Tight (issue 34: 1.6x cut a capped block's room by a third): what
	// blocks recorded per payment, against what each reserved.
	// (Failures in blocks, below, would be payments out of gas.)
	if g := res.Summary.BlocksSummary.GasPerPayment; g == 0 || float64(reserved) > 1.25*g {
		t.Errorf("each payment reserved %d gas; blocks recorded %.0f per payment: want at most 1.25x", reserved, g)
	}
	want := fmt.Sprintf("blocks can hold at most %d payments (consensus block.max_gas 2000000 / %d gas", 2_000_000/reserved, reserved)
	if !strings.Contains(space, want) {
		t.Errorf("block-space warning %q, want it to say %q", space, want)
	}
	// The closed model is checked too: 2,000 users paying every 5 s offer
	// 400/s (issue 34: the seed's Hub examples were never warned).
	closed := scenario.Default()
	closed.Load.Model, closed.Load.Users, closed.Load.Pacing = scenario.Closed, 2000, scenario.Duration(5*time.Second)
	msg, _, err := cosmoskind.BlockSpace(context.Background(), n.Nodes[0].RPC, &closed, reserved)
	if err != nil || !strings.Contains(msg, "at 400 tx/s (2000 users, one payment each every 5s)") {
		t.Errorf("closed model: block-space warning %q (%v)", msg, err)
	}
	if per := res.Summary.BlocksSummary.TxsMax; uint64(per) > 2_000_000/reserved {
		t.Errorf("a block held %d payments with room for %d", per, 2_000_000/reserved)
	}
	if res.Summary.Committed == 0 || res.Summary.FailedTotal > 0 {
		t.Errorf("committed %d, failed in blocks %d: the reserved gas must cover a send", res.Summary.Committed, res.Summary.FailedTotal)
	}
}
