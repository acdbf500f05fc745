package evm_test

import (
	"bytes"
	"context"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/all"
	evmkind "github.com/tpslab/tpslab/internal/kinds/evm"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/targets/suttest"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Log(string(b)); return len(b), nil }

func startGeth(t *testing.T) *testnet.Net {
	t.Helper()
	n, err := gethnet.Up(context.Background(), gethnet.Options{Kind: "evm", Home: filepath.Join(t.TempDir(), "geth"), WalletSeed: "it", Wallets: 600,
		Balance: new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	return n
}

// count reads blocks [from, to] with their transactions and receipts, and
// counts the transactions sent by the given addresses that succeeded
// (status 1) and that reverted.
func count(t *testing.T, rpc string, from, to int64, senders map[string]bool) (ok, reverted int64) {
	byKind, reverted := countByKind(t, rpc, from, to, senders)
	for _, n := range byKind {
		ok += n
	}
	return ok, reverted
}

// countByKind is count with the successes by kind, read from each
// transaction's calldata: erc20 (transfer), contract_call (approve), or
// native (none).
func countByKind(t *testing.T, rpc string, from, to int64, senders map[string]bool) (ok map[string]int64, reverted int64) {
	t.Helper()
	cl := &evm.Client{URL: rpc, HTTP: http.DefaultClient}
	ctx := context.Background()
	ok = map[string]int64{}
	for h := from; h <= to; h++ {
		var b struct {
			Transactions []struct {
				Hash  string `json:"hash"`
				From  string `json:"from"`
				Input string `json:"input"`
			} `json:"transactions"`
		}
		if err := cl.Call(ctx, &b, "eth_getBlockByNumber", "0x"+big.NewInt(h).Text(16), true); err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		rs, err := cl.Receipts(ctx, h)
		if err != nil {
			t.Fatalf("receipts %d: %v", h, err)
		}
		status := map[string]uint64{}
		for _, r := range rs {
			status[strings.ToLower(r.TxHash)] = uint64(r.Status)
		}
		for _, tx := range b.Transactions {
			if !senders[strings.ToLower(tx.From)] {
				continue
			}
			if status[strings.ToLower(tx.Hash)] != 1 {
				reverted++
				continue
			}
			switch {
			case strings.HasPrefix(tx.Input, "0xa9059cbb"):
				ok["erc20"]++
			case strings.HasPrefix(tx.Input, "0x095ea7b3"):
				ok["contract_call"]++
			default:
				ok["native"]++
			}
		}
	}
	return ok, reverted
}

func senders(n int) map[string]bool {
	m := map[string]bool{}
	for _, w := range evm.DeriveWallets("it", n) {
		m[strings.ToLower(w.Address.Hex())] = true
	}
	return m
}

func evmScenario(t *testing.T, home, kind, mode string) scenario.Scenario {
	sc := scenario.Default()
	sc.Target.NetHome = home
	sc.Load.Rate = 150
	sc.Load.Duration = scenario.Duration(5 * time.Second) // exactness holds at any length
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Workload.Kind = kind
	sc.Workload.Mode = scenario.Mode(mode)
	sc.Workload.Senders = 300
	sc.Workload.Window = 4
	sc.Out = filepath.Join(t.TempDir(), kind+"-"+mode)
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

// Native and ERC20 transfers, presigned and live, on a real geth: the
// committed count equals an independent count of our transactions with
// successful receipts in the blocks the result names.
func TestTransfersOnGeth(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and starts geth")
	}
	transfers(t, startGeth(t))
}

// A crash of the geth node (SIGKILL) during a native-transfer load, and its
// restart on its data directory 3 s later, then 200 ms more on tpslab's
// link to it (issue 53): the run goes on, the crash's dip and recovery are
// measured, the delay shows in the acknowledgements, and committed equals
// the blocks' successful receipts of our senders (what the node held in
// its pool when it died is lost, and counted in flight or expired, never
// committed).
func TestCrashFaultOnGeth(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and starts geth")
	}
	n, err := gethnet.Up(context.Background(), gethnet.Options{Kind: "evm", Home: filepath.Join(t.TempDir(), "geth"), WalletSeed: "it", Wallets: 300,
		Balance: new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil), Log: testLog{t}, Topology: "loopback", Links: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	if n.Links == nil || n.RPCEndpoints()[0] != n.Nodes[0].ClientRPC {
		t.Fatalf("geth behind a client link: links %+v, node %+v", n.Links, n.Nodes[0])
	}
	sc := evmScenario(t, n.Home, "payment", "live")
	sc.Load.Rate = 100
	// geth may take 6 s to answer again after its restart on a busy
	// machine (CI): the delay comes well after.
	sc.Load.Duration = scenario.Duration(20 * time.Second)
	for _, spec := range []string{"3s:crash:node0:3s", "14s:delay:node0:200ms:4s"} {
		f, err := scenario.ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		sc.Faults = append(sc.Faults, f)
	}
	res, err := run(t, sc)
	if err != nil && exitcode.Of(err) != exitcode.ThresholdsFailed {
		t.Fatalf("run: %v", err)
	}
	s := res.Summary
	if res.EndedBecause != "completed" || len(s.Faults) != 2 {
		t.Fatalf("ended %q, %d faults measured; expected completed, the crash and the delay", res.EndedBecause, len(s.Faults))
	}
	fa := s.Faults[0]
	ok, reverted := count(t, n.RPCEndpoints()[0], res.Chain.FirstHeight, res.Chain.LastHeight, senders(300))
	t.Logf("crash of geth: %.0f tx/s before, %.0f during, %.0f after, first block %.1f s after, recovery %.1f s; %d committed, blocks hold %d",
		fa.BeforeTPS, fa.DuringTPS, fa.AfterTPS, *fa.FirstBlockS, fa.RecoveryS, s.Committed, ok)
	// The exact count is the point; the floor a second of offers (CI
	// beside two busy loops: 225 of 2,000).
	if ok != s.Committed || reverted != s.FailedTotal || s.Committed < int64(sc.Load.Rate) {
		t.Errorf("result %d committed / %d failed, blocks %d..%d hold %d / %d", s.Committed, s.FailedTotal, res.Chain.FirstHeight, res.Chain.LastHeight, ok, reverted)
	}
	onDisk, err := report.ReadResult(res.Dir) // the series is streamed to disk, not kept
	if err != nil {
		t.Fatal(err)
	}
	// Restarted, it commits again: in the load or in its drain (CI: geth
	// answered 6.5 s after its restart and committed nothing before the
	// load ended).
	var later int64
	for _, x := range onDisk.Series {
		if x.T > fa.EndS {
			later += x.Committed
		}
	}
	if fa.DuringTPS > 0 || later == 0 {
		t.Errorf("the crash and the restart did not show: %.0f tx/s during, %d committed after it (%.0f tx/s in the load)", fa.DuringTPS, later, fa.AfterTPS)
	}
	at, ack := func(x report.Second) float64 { return x.T }, func(x report.Second) measure.Percentiles { return x.AckMs }
	pre, during := measuretest.MeanP50(onDisk.Series, at, ack, 10, 14), measuretest.MeanP50(onDisk.Series, at, ack, 15, 18)
	t.Logf("ack p50 %.1f ms before the delay, %.1f ms during it (%s)", pre, during, s.Faults[1].Fault)
	if s.Faults[1].Error != "" || during < pre+150 {
		t.Errorf("200 ms on the client link moved ack p50 from %.1f to %.1f ms (%+v)", pre, during, s.Faults[1])
	}
}

// transfers runs native and ERC20 loads, live and presigned, on network n
// and checks each count against the blocks its load endpoint serves, and
// that the result names the network and that endpoint.
// transfer is one workload transfers runs: a kind in a mode.
type transfer struct{ kind, mode string }

// transfers runs each case (all four without any) on n and checks the
// committed count against the blocks' successful receipts of our senders.
func transfers(t *testing.T, n *testnet.Net, cases ...transfer) {
	t.Helper()
	if len(cases) == 0 {
		cases = []transfer{{"payment", "live"}, {"payment", "presigned"}, {"erc20", "live"}, {"erc20", "presigned"}}
	}
	ours := senders(300)
	rpc := n.RPCEndpoints()[0]
	for _, c := range cases {
		sc := evmScenario(t, n.Home, c.kind, c.mode)
		res, err := run(t, sc)
		if err != nil {
			t.Fatalf("%s %s: %v", c.kind, c.mode, err)
		}
		s := res.Summary
		ok, reverted := count(t, rpc, res.Chain.FirstHeight, res.Chain.LastHeight, ours)
		t.Logf("%s %s %s: %.1f committed tx/s, p99 inclusion %.0f ms, p99 commit %.0f ms, %d committed, blocks hold %d", n.Kind, c.kind, c.mode, s.CommittedTPS, s.LatencyMs.Inclusion.P99, s.LatencyMs.Commit.P99, s.Committed, ok)
		// The exact count is the point; the floor only says the load
		// reached the blocks (CI: 588 of 750 on a starved machine, whose
		// 4 validators committed 11 tx/s in the steady window).
		if s.Committed < int64(sc.Load.Rate) || ok != s.Committed || reverted != s.FailedTotal {
			t.Errorf("%s %s: result %d committed / %d failed, blocks %d..%d hold %d / %d", c.kind, c.mode, s.Committed, s.FailedTotal, res.Chain.FirstHeight, res.Chain.LastHeight, ok, reverted)
		}
		if res.Network.Kind != n.Kind || len(res.Network.Endpoints) != len(n.RPCEndpoints()) || res.Network.Endpoints[0] != rpc {
			t.Errorf("network %q at %v, expected %s at %s", res.Network.Kind, res.Network.Endpoints, n.Kind, rpc)
		}
		// tpslab verify re-counts it from the receipts (issue 55).
		if out, err := exec.Command(testbin.Path(t), "verify", res.Dir, "--rpc", rpc).CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "verified: ") {
			t.Errorf("%s %s: verify: %v\n%s", c.kind, c.mode, err, out)
		} else {
			t.Logf("%s", out)
		}
	}
}

// A mix of native transfers, ERC20 transfers and contract calls (approve)
// on a real geth: each kind's committed count equals the blocks' successful
// transactions of that kind, read from their calldata.
func TestMixOnGeth(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and starts geth")
	}
	n := startGeth(t)
	for _, mode := range []string{"live", "presigned"} {
		sc := evmScenario(t, n.Home, "payment", mode)
		sc.Workload.Mix = []scenario.MixEntry{{Kind: "native", Weight: 5}, {Kind: "erc20", Weight: 3}, {Kind: "contract_call", Weight: 2}}
		res, err := run(t, sc)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		ok, reverted := countByKind(t, n.RPCEndpoints()[0], res.Chain.FirstHeight, res.Chain.LastHeight, senders(300))
		t.Logf("%s: committed by kind %v, blocks %v; p99 commit by kind %v", mode, s.CommittedByKind, ok, s.ByKind)
		for _, k := range []string{"native", "erc20", "contract_call"} {
			if s.CommittedByKind[k] != ok[k] || ok[k] < 100 {
				t.Errorf("%s %s: %d committed, the blocks hold %d", mode, k, s.CommittedByKind[k], ok[k])
			}
		}
		if reverted != 0 || s.FailedTotal != 0 {
			t.Errorf("%s: %d reverted in the blocks, %d failed in the result", mode, reverted, s.FailedTotal)
		}
	}
	// The same geth: contracts the scenario brings.
	contractsOn(t, n)
}

// proxy forwards JSON-RPC to geth, but answers every k-th
// eth_sendRawTransaction itself with a made-up hash, without forwarding it:
// a transaction that was acknowledged and lost, leaving a nonce gap.
type proxy struct {
	rp   *httputil.ReverseProxy
	k    int64
	n    atomic.Int64
	lost atomic.Int64
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if bytes.Contains(body, []byte(`eth_sendRawTransaction`)) && p.n.Add(1)%p.k == 0 {
		p.lost.Add(1)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x` + strings.Repeat("ab", 32) + `"}`))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.rp.ServeHTTP(w, r)
}

// lossyRun loads the node at rpc through a proxy that loses one
// eth_sendRawTransaction in fifty (acknowledged, never forwarded), and
// checks what any node must show: gaps happened and were recovered (a
// resync of the sender's nonce, or the lost bytes sent again), most
// payments still committed, and the count equals the blocks'. It returns
// the result and how many transactions the proxy lost.
func lossyRun(t *testing.T, rpc, ws string) (*report.Result, int64) {
	t.Helper()
	u, _ := url.Parse(rpc)
	p := &proxy{rp: httputil.NewSingleHostReverseProxy(u), k: 50}
	srv := httptest.NewServer(p)
	defer srv.Close()
	sc := evmScenario(t, "", "payment", "live")
	sc.Target.Kind = "evm"
	sc.Target.Endpoints = []string{srv.URL}
	if ws != "" {
		// New heads straight from the node: the proxy stands for a lossy
		// path of the sends, and polling the head through it (behind 100
		// sends a second, in this starved test process) saw no block for
		// the 4 s commit timeout on a busy machine and called it a halt.
		all.Registry() // registers the kinds' sections
		kinds.SectionOf[evmkind.Settings](&sc, "evm").WSEndpoints = []string{ws}
	}
	sc.Workload.WalletSeed = "it"
	sc.Workload.ReuseWallets = true // funded when the network started
	sc.Workload.Senders = 50
	sc.Load.Rate = 100
	sc.Load.Duration = scenario.Duration(20 * time.Second)
	sc.CommitTimeout = scenario.Duration(4 * time.Second)
	sc.Load.SendInterval = "0" // a request per transaction: the proxy loses one transaction, not a batch
	res, err := run(t, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("lost %d; expired %d, resyncs %d, resubmitted %d, committed %d of %d accepted", p.lost.Load(), s.Expired, s.Resyncs, s.Resubmitted, s.Committed, s.Accepted)
	if p.lost.Load() == 0 || s.Resyncs+s.Resubmitted == 0 {
		t.Fatalf("no gap or no recovery: lost %d, resyncs %d, resubmitted %d", p.lost.Load(), s.Resyncs, s.Resubmitted)
	}
	if s.Committed < s.Accepted*8/10 {
		t.Errorf("the gaps were not filled: %d of %d accepted committed", s.Committed, s.Accepted)
	}
	ok, _ := count(t, rpc, res.Chain.FirstHeight, res.Chain.LastHeight, senders(50))
	if ok != s.Committed {
		t.Errorf("committed %d, blocks hold %d", s.Committed, ok)
	}
	return res, p.lost.Load()
}

// Lost transactions leave nonce gaps that geth does not refuse: the later
// transactions wait in its queue. Each gap's transaction expires, its
// sender's nonce is read again (geth counts pending transactions), and the
// payment after it fills the gap: the queue drains, and the count still
// equals the blocks'.
func TestNonceGapsRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and starts geth")
	}
	n := startGeth(t)
	res, lost := lossyRun(t, n.Nodes[0].RPC, n.Nodes[0].WS)
	if res.Summary.Expired < lost {
		t.Errorf("%d lost transactions, only %d expired: a lost payment was counted as something else", lost, res.Summary.Expired)
	}
}

// The EVM target keeps the contract on a real geth; a transfer beyond the
// sender's balance is refused by name.
func TestContractAgainstGeth(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and starts geth")
	}
	n := startGeth(t)
	tgt, err := evm.New(evm.Options{Endpoints: n.RPCEndpoints(), WS: []string{n.Nodes[0].WS}, Connections: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fees, err := tgt.Fees(ctx, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := tgt.Client().ChainID(ctx)
	wallets := evm.DeriveWallets("it", 30)
	codec := evm.NewCodec(id, nil, 21_000, fees, wallets, tgt.Client())
	valid := func(i int) sut.Tx {
		b := codec.Sign(nil, i, i+10, 1, 0)
		return sut.Tx{ID: codec.ID(b), Bytes: b}
	}
	poor := evm.DeriveWallet("nobody", 0)
	raw, _ := codec.SignCall(poor.Key, 0, &wallets[0].Address, big.NewInt(1), nil, 21_000)
	invalid := sut.Tx{ID: codec.ID(raw), Bytes: raw}
	suttest.Run(t, suttest.Case{Target: tgt, Valid: valid, Invalid: &invalid, Commits: true})
}
