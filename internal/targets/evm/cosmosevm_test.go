package evm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// Native and ERC20 transfers, presigned and live, on tpslab's Cosmos EVM
// chain (a real CometBFT validator running x/vm, serving the Ethereum
// JSON-RPC): the committed count equals an independent count of our
// transactions with successful receipts in the blocks the result names,
// and the chain's own audit (supply conserved) passes after the load. Then
// lost transactions leave nonce gaps, which the chain refuses and tpslab
// recovers from.
func TestTransfersOnCosmosEVM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the Cosmos EVM chain")
	}
	ctx := context.Background()
	n, err := all.Registry().Up(ctx, kinds.NetOptions{Kind: "cosmos-evm", Home: filepath.Join(t.TempDir(), "cevm"), Validators: 1,
		Seed: "it", Accounts: 300, Settings: testnet.DefaultSettings(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	if n.Kind != "cosmos-evm" || n.Nodes[0].LoadRPC == "" || gethnet.Of(n) == nil || gethnet.Of(n).ChainID == "" {
		t.Fatalf("net.json: kind %q, eth_rpc %q, evm %+v", n.Kind, n.Nodes[0].LoadRPC, gethnet.Of(n))
	}
	if n.RPCEndpoints()[0] != n.Nodes[0].LoadRPC {
		t.Fatalf("the load would go to %v, not the Ethereum JSON-RPC %s", n.RPCEndpoints(), n.Nodes[0].LoadRPC)
	}
	transfers(t, n)
	contractsOn(t, n) // the examples' contracts, as on geth
	mempoolIsCometBFTs(t, n)
	// Cosmos EVM refuses a nonce gap at CheckTx ("tx nonce is higher than
	// account nonce ... accountNonce: k"): the lost transaction's bytes go
	// again, so gaps close without waiting for commit_timeout.
	res, lost := lossyRun(t, n.Nodes[0].LoadRPC, n.Nodes[0].WS)
	if s := res.Summary; s.Samples["nonce_too_high"] == "" || s.Resubmitted == 0 || s.Expired >= lost {
		t.Errorf("%d transactions lost: expected nonce_too_high refusals (samples %v) and resubmissions (%d) to close the gaps before they expire (%d)",
			lost, s.Samples, s.Resubmitted, s.Expired)
	}
	if a, err := all.Registry().Check(ctx, n); err != nil || len(a.Problems) > 0 {
		t.Errorf("net check: %v %v", err, a.Problems)
	}
}

// Cosmos EVM's own evmd, built from its source archive, four validators on
// emulated links: net up aligns its genesis (it starts with x/vm's denom
// aatom, bank metadata for it and a stake worth voting power), and ERC20
// transfers, live, and native ones, presigned, commit exactly as many as
// the blocks' successful receipts; so do ERC20 transfers through a
// partition (partitionOnEvmd).
func TestTransfersOnEvmd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts evmd")
	}
	bin, err := sdknet.Evmd(testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := testnet.DefaultSettings()
	st.MempoolLog = true // the gossiped stage
	n, err := all.Registry().Up(ctx, kinds.NetOptions{Kind: "cosmos-evm", Home: filepath.Join(t.TempDir(), "evmd"), Validators: 4, Binary: bin,
		Seed: "it", Accounts: 300, Settings: st, Log: testLog{t}, Topology: "loopback", Tpslab: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	if d := sdknet.Of(n).Denom; d != "aatom" {
		t.Errorf("denom %q, expected evmd's x/vm denom aatom", d)
	}
	var g struct {
		AppState struct {
			Staking struct {
				Params struct {
					BondDenom string `json:"bond_denom"`
				} `json:"params"`
			} `json:"staking"`
			Bank struct {
				Metadata []struct {
					Base string `json:"base"`
				} `json:"denom_metadata"`
			} `json:"bank"`
		} `json:"app_state"`
	}
	b, err := os.ReadFile(filepath.Join(n.Nodes[0].Home, "config", "genesis.json"))
	if err != nil || json.Unmarshal(b, &g) != nil {
		t.Fatalf("genesis: %v", err)
	}
	if g.AppState.Staking.Params.BondDenom != "aatom" || len(g.AppState.Bank.Metadata) == 0 || g.AppState.Bank.Metadata[0].Base != "aatom" {
		t.Errorf("genesis not aligned: bond denom %q, metadata %+v", g.AppState.Staking.Params.BondDenom, g.AppState.Bank.Metadata)
	}
	transfers(t, n, transfer{"erc20", "live"}, transfer{"payment", "presigned"})
	partitionOnEvmd(t, n)
}

// partitionOnEvmd cuts node0 and node1 of four evmd validators from the
// other two for 4 s during an ERC20 load (issue 53): the chain halts
// (neither side has two thirds) and resumes when the links heal,
// committed equals the status-1 receipts of our senders, and the audit
// after the fault passes.
func partitionOnEvmd(t *testing.T, n *testnet.Net) {
	sc := evmScenario(t, n.Home, "erc20", "live")
	// After the heal the validators are some rounds on, each waiting
	// longer for its proposal (7.5 s and more without a block, on a busy
	// machine): the load lasts long enough for blocks after it.
	sc.Load.Rate = 100
	sc.Load.Duration = scenario.Duration(26 * time.Second)
	f, err := scenario.ParseFault("5s:partition:node0+node1:4s")
	if err != nil {
		t.Fatal(err)
	}
	sc.Faults = []scenario.Fault{f}
	sc.Out = filepath.Join(t.TempDir(), "partition")
	res, err := run(t, sc)
	if err != nil {
		t.Fatalf("a partition of evmd: %v", err)
	}
	s := res.Summary
	ok, reverted := count(t, n.RPCEndpoints()[0], res.Chain.FirstHeight, res.Chain.LastHeight, senders(300))
	if len(s.Faults) != 1 {
		t.Fatalf("%d faults measured, expected the partition", len(s.Faults))
	}
	cut := s.Faults[0]
	t.Logf("partition of evmd: %.0f tx/s before, %.0f during, %.0f after, longest gap %.1f s, recovery %.1f s; %d committed, receipts %d",
		cut.BeforeTPS, cut.DuringTPS, cut.AfterTPS, cut.LongestGapS, cut.RecoveryS, s.Committed, ok)
	if ok != s.Committed || reverted != s.FailedTotal || s.Committed == 0 || cut.BeforeTPS <= 0 {
		t.Errorf("result %d committed / %d failed (%.0f tx/s before the cut), blocks %d..%d hold %d / %d", s.Committed, s.FailedTotal, cut.BeforeTPS, res.Chain.FirstHeight, res.Chain.LastHeight, ok, reverted)
	}
	// A block the validators had agreed on as the cut came may commit in
	// it (CI: 19 tx/s during, 40 before, a 7 s gap): the gap is the halt.
	if cut.LongestGapS < 3.5 {
		t.Errorf("the chain went on through a 2-of-4 partition: %+v", cut)
	}
	// It resumes once healed: within the run, or, on a machine so busy
	// that the validators' escalated rounds outlast it (CI: a 21 s gap
	// with three test lanes on 2 cores), in blocks after it.
	if cut.AfterTPS <= 0 {
		if err := n.WaitForBlocks(context.Background(), res.Chain.LastHeight+2, 3*time.Minute); err != nil {
			t.Errorf("the chain did not resume after the partition healed: %v (%+v)", err, cut)
		}
	}
	if s.NetCheck == nil || !s.NetCheck.OK {
		t.Errorf("the audit after the partition failed: %+v", s.NetCheck)
	}
	// The nodes' logs say when each payment reached a second validator.
	if l := s.LatencyMs; l.Gossiped.Count == 0 || l.Gossiped.P50 > l.Commit.P50 {
		t.Errorf("gossiped p50 %.1f (%d), commit p50 %.1f", l.Gossiped.P50, l.Gossiped.Count, l.Commit.P50)
	}
}

// mempoolIsCometBFTs: under load the mempool figure of a Cosmos EVM run is
// CometBFT's mempool, not the JSON-RPC's txpool_status, which answers 0
// while CometBFT holds transactions (issue 53).
func mempoolIsCometBFTs(t *testing.T, n *testnet.Net) {
	sc := evmScenario(t, n.Home, "payment", "presigned")
	sc.Load.Rate = 400
	sc.Out = filepath.Join(t.TempDir(), "mempool")
	res, err := run(t, sc)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := report.ReadResult(res.Dir) // the series is streamed to disk, not kept
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, x := range onDisk.Series {
		most = max(most, x.MempoolTxs)
	}
	if most == 0 {
		t.Errorf("the mempool read 0 every second of a %d tx/s load; CometBFT's holds transactions between blocks", int(sc.Load.Rate))
	}
	t.Logf("mempool under %d tx/s: at most %d transactions (CometBFT's /num_unconfirmed_txs)", int(sc.Load.Rate), most)
}
