package cosmos_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/kinds/all"
	kindcosmos "github.com/tpslab/tpslab/internal/kinds/cosmos"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// hubChain starts tpsd with the Cosmos Hub's economics as a run or net up
// would by default: the fee market on and x/mint minting.
func hubChain(t *testing.T, validators int, maxBlockUtilization uint64, maxBlockGas int64) *testnet.Net {
	t.Helper()
	bin, err := sdknet.Tpsd(testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	all.Registry()
	def := scenario.Default()
	nw := kindcosmos.SettingsOf(&def) // the cosmos kind's defaults: fee market and minting on
	st := testnet.DefaultSettings()
	if maxBlockGas != 0 {
		st.MaxBlockGas = maxBlockGas
	}
	if maxBlockUtilization > 0 {
		nw.FeeMarket.MaxBlockUtilization = maxBlockUtilization
	}
	n, err := sdknet.Up(context.Background(), sdknet.Options{Kind: "cosmos", Binary: bin, Validators: validators, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "cosmos-hub-it", WalletSeed: "it", Wallets: 2000, Balance: 1_000_000_000_000, Settings: st, Log: testLog{t},
		Economics: sdknet.Economics{FeeMarket: nw.FeeMarket.Enabled, MinBaseGasPrice: nw.FeeMarket.MinBaseGasPrice,
			MaxBlockUtilization: nw.FeeMarket.MaxBlockUtilization, Mint: nw.Mint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	if !sdknet.Of(n).FeeMarket || !sdknet.Of(n).Minting {
		t.Fatalf("net.json: fee market %v, minting %v: want both on", sdknet.Of(n).FeeMarket, sdknet.Of(n).Minting)
	}
	return n
}

// The seed's Cosmos Hub examples, unchanged but for their length and commit
// timeout, commit on
// tpsd with the Hub's fee market and minting and no fee given: under 1%
// refused, none failed inside blocks, the committed count equal to our
// code-0 transactions in the blocks; net check accounts for the minting and
// still catches a supply it cannot explain.
func TestHubExamplesOnAFeeMarket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts SDK chains with a fee market")
	}
	for _, c := range []struct {
		validators int
		example    string
	}{{1, "cosmos-hub-locust.yaml"}, {4, "cosmos-hub-bank-sends.yaml"}} {
		n := hubChain(t, c.validators, 0, 0)
		sc, err := scenario.ReadFile(filepath.Join("..", "..", "..", "examples", c.example))
		if err != nil {
			t.Fatal(err)
		}
		if kindcosmos.SettingsOf(&sc).Fee != "" {
			t.Fatalf("%s gives a fee (%q): the test is that it needs none", c.example, kindcosmos.SettingsOf(&sc).Fee)
		}
		sc.Target.NetHome = n.Home
		// Shorter, and expiring after 15 s rather than 120: the counts are
		// exact at any length, and the overloaded chain's expiries were
		// most of the test's four minutes.
		sc.Load.RampUp, sc.Load.Duration, sc.Load.Warmup = scenario.Duration(2*time.Second), scenario.Duration(12*time.Second), scenario.Duration(4*time.Second)
		sc.CommitTimeout = scenario.Duration(15 * time.Second)
		if c.validators == 4 {
			// Four overloaded validators' blocks come up to tens of seconds
			// apart: the commit timeout, which also says when a chain is
			// halted, stays long enough not to call that a halt.
			sc.Load.RampUp, sc.Load.Duration, sc.Load.Warmup = scenario.Duration(5*time.Second), scenario.Duration(25*time.Second), scenario.Duration(8*time.Second)
			sc.CommitTimeout = scenario.Duration(60 * time.Second)
		}
		sc.Out = filepath.Join(t.TempDir(), "run")
		res, err := run(t, sc)
		switch {
		case err != nil && res != nil && strings.HasPrefix(res.EndedBecause, "chain_halted"):
			// 400 offered tx/s where a block holds about 140: on 4
			// validators of a busy machine, blocks can come 15 s apart and
			// the run ends as halted, as it should; its counts must still
			// be exact.
			t.Logf("%s on %d validators: the overloaded chain was reported halted (%s)", c.example, c.validators, res.EndedBecause)
		case err != nil:
			t.Fatalf("%s on %d validators: %v", c.example, c.validators, err)
		}
		s := res.Summary
		ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders(n, sc.Workload.Senders))
		t.Logf("%s on %d validators (fee market, minting): %.1f committed tx/s, p99 commit %.0f ms, %d committed, %d refused %v, %d expired, %.0f gas a payment; notes %q",
			c.example, c.validators, s.CommittedTPS, s.LatencyMs.Commit.P99, s.Committed, s.RejectedTotal, s.Rejected, s.Expired, s.BlocksSummary.GasPerPayment, res.Notes)
		// The examples overload tpsd here (2,000 users, 400 offered tx/s): on
		// 4 validators a busy machine commits a few hundred in the run.
		if s.Committed < 100 && (err == nil || s.Committed == 0) || ok != s.Committed || failed != 0 || s.FailedTotal != 0 {
			t.Errorf("result %d committed / %d failed; blocks hold %d / %d of ours", s.Committed, s.FailedTotal, ok, failed)
		}
		if g := s.BlocksSummary.GasPerPayment; g < 80_000 || g > 200_000 {
			t.Errorf("gas per payment from the blocks: %.0f, want a bank send's", g)
		}
		if float64(s.RejectedTotal) >= 0.01*float64(s.Sent) {
			t.Errorf("%d of %d refused (%v): want under 1%%", s.RejectedTotal, s.Sent, s.Rejected)
		}
		fee := false
		for _, note := range res.Notes {
			fee = fee || strings.HasPrefix(note, "fee: the fee market's gas price is ")
		}
		if !fee {
			t.Errorf("no note on the fee paid: %q", res.Notes)
		}
		if _, problems := sdknet.Check(context.Background(), n); len(problems) > 0 {
			t.Errorf("net check on a minting chain: %v", problems)
		}
	}
}

// net check fails when the supply moved by anything but minting: here the
// recorded genesis supply is off by one coin, as if a balance had been
// changed by hand.
func TestNetCheckCatchesSupplyBesidesMinting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an SDK chain")
	}
	n := hubChain(t, 1, 0, 0)
	// A few blocks of minting.
	if h, err := testnet.Height(context.Background(), n.Nodes[0].RPC); err != nil {
		t.Fatal(err)
	} else if err := n.WaitForBlocks(context.Background(), h+3, time.Minute); err != nil {
		t.Fatal(err)
	}
	audits, problems := sdknet.Check(context.Background(), n)
	if len(problems) > 0 {
		t.Fatalf("a minting chain: %v", problems)
	}
	genesis, _ := new(big.Int).SetString(sdknet.Of(n).Supply, 10)
	now, _ := new(big.Int).SetString(audits["node0"].Supply, 10)
	if genesis == nil || now == nil || now.Cmp(genesis) <= 0 {
		t.Fatalf("supply %s, genesis %s: nothing minted", audits["node0"].Supply, sdknet.Of(n).Supply)
	}
	sdknet.Of(n).Supply = genesis.Add(genesis, big.NewInt(1)).String()
	if _, problems := sdknet.Check(context.Background(), n); len(problems) != 1 || !strings.Contains(problems[0], "plus") {
		t.Errorf("a supply off by one: problems %q, want one naming genesis plus minted", problems)
	}
}

// Load above the fee market's target raises its gas price during the run;
// payments presigned with little headroom are refused for their fee, then
// re-priced at the chain's new price, re-signed, and committed, and the
// re-pricing is counted. Counts stay exact against the blocks.
func TestRisingGasPriceIsRepriced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an SDK chain with a fee market")
	}
	// The fee market counts a send's gas before its own deduction (about
	// 77,000 of the 115,000 a block records), so with blocks capped at its
	// maximum, payments reserving ~170,000 fill blocks to under half of it,
	// its target, and the price holds. Blocks of 4,500,000 gas take about
	// 2,000,000 of its counting: above the target of 1,500,000, below the
	// maximum, so the price rises and nothing fails inside a block.
	n := hubChain(t, 1, 3_000_000, 4_500_000)
	sc := bankScenario(t, n.Home, "rpc", "presigned")
	sc.Load.Rate, sc.Load.Duration, sc.Load.Warmup = 60, scenario.Duration(20*time.Second), scenario.Duration(2*time.Second)
	kindcosmos.SettingsOf(&sc).FeeMargin, sc.Workload.Senders = 1.02, 100
	res, err := run(t, sc)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	s := res.Summary
	ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders(n, sc.Workload.Senders))
	var first, peak float64
	mismatch := false
	for _, note := range res.Notes {
		fmt.Sscanf(note, "fee: the gas price went from %g to at most %g", &first, &peak)
		mismatch = mismatch || strings.Contains(note, "block.max_gas is 4500000 but the fee market allows 3000000 gas a block")
	}
	if !mismatch {
		t.Errorf("no warning that blocks may take more gas than the fee market allows: %q", res.Notes)
	}
	t.Logf("gas price %g -> %g; %d committed, %d repriced, refused %v, %d expired", first, peak, s.Committed, s.Repriced, s.Rejected, s.Expired)
	if peak < first*1.05 || first == 0 {
		t.Fatalf("the gas price went from %g to %g: the load did not raise it (notes %q)", first, peak, res.Notes)
	}
	if s.Repriced == 0 {
		t.Errorf("nothing re-priced: refused %v", s.Rejected)
	}
	if s.Committed == 0 || ok != s.Committed || failed != s.FailedTotal {
		t.Errorf("result %d committed / %d failed; blocks hold %d / %d of ours", s.Committed, s.FailedTotal, ok, failed)
	}
}

// Invalid payments on an SDK chain are refused with the SDK's reasons and
// counted apart; the payments' figures still equal the blocks.
func TestInvalidShareOnTpsd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an SDK chain")
	}
	n, off := sharedChain(t)
	warm := bankScenario(t, n.Home, "rpc", "live")
	warm.Workload.SendersOffset = off
	warm.Load.Duration = scenario.Duration(3 * time.Second)
	if _, err := run(t, warm); err != nil { // sequences used, so stale ones exist
		t.Fatal(err)
	}
	sc := bankScenario(t, n.Home, "rpc", "presigned")
	sc.Workload.SendersOffset = off
	sc.Workload.Invalid = scenario.Invalid{Share: 0.1, Sorts: []string{"bad_signature", "wrong_chain_id", "stale_sequence", "oversized"}}
	res, err := run(t, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("verdict %s; invalid sent %v refused %v", res.Verdict(), s.InvalidSent, s.InvalidRefused)
	want := map[string]string{"bad_signature": "unauthorized", "wrong_chain_id": "unauthorized", "stale_sequence": "sequence_mismatch", "oversized": "memo_too_large"}
	for sort, reason := range want {
		if s.InvalidSent[sort] == 0 || s.InvalidRefused[sort+": "+reason] != s.InvalidSent[sort] {
			t.Errorf("%s: sent %d, refused as %s %d (all %v)", sort, s.InvalidSent[sort], reason, s.InvalidRefused[sort+": "+reason], s.InvalidRefused)
		}
	}
	ok, failed := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, sendersFrom(n, off, sc.Workload.Senders))
	if len(s.InvalidCommitted) > 0 || ok != s.Committed || failed != s.FailedTotal || s.Committed < 400 {
		t.Errorf("invalid committed %v; result %d committed / %d failed, blocks %d / %d", s.InvalidCommitted, s.Committed, s.FailedTotal, ok, failed)
	}
}

// A 70/20/10 mix on tpsd: bank sends, multi-sends to five recipients, and
// a tenth invalid (bad signatures, stale sequences). Each kind's committed
// count equals its code-0 transactions in the blocks, the invalid ones are
// all refused with the SDK's reasons, and none counts as committed.
func TestMixOnTpsd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an SDK chain")
	}
	n, off := sharedChain(t)
	warm := bankScenario(t, n.Home, "rpc", "live")
	warm.Workload.SendersOffset = off
	warm.Load.Duration = scenario.Duration(3 * time.Second)
	if _, err := run(t, warm); err != nil { // sequences used, so stale ones exist
		t.Fatal(err)
	}
	sc := bankScenario(t, n.Home, "rpc", "presigned")
	sc.Workload.SendersOffset = off
	sc.Workload.Mix = []scenario.MixEntry{{Kind: "send", Weight: 7}, {Kind: "multi_send", Weight: 2, Outputs: 5}}
	sc.Workload.Invalid = scenario.Invalid{Share: 0.1, Sorts: []string{"bad_signature", "stale_sequence"}}
	sc.Thresholds = []string{"committed_tps{kind=multi_send}>0", "committed_tps{kind=send}>0", "p99_commit{kind=multi_send}<1h"}
	res, err := run(t, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	// Thresholds name a kind: its steady figures, its share of the
	// headline's committed_tps.
	if len(res.Thresholds) != 3 || !res.Thresholds[0].OK || !res.Thresholds[1].OK || !res.Thresholds[2].OK ||
		math.Abs(s.ByKind["send"].CommittedTPS+s.ByKind["multi_send"].CommittedTPS-s.CommittedTPS) > 1e-6*s.CommittedTPS {
		t.Errorf("thresholds %+v, by kind %+v, steady committed %d over %g s", res.Thresholds, s.ByKind, s.Steady.Committed, s.Steady.DurationS)
	}
	// Each kind's commit latency counts its steady payments; together they
	// are the whole run's commit latency.
	var kinds int64
	for k, f := range s.ByKind {
		if f.CommitMs.Count != f.Committed+f.Failed || f.CommitMs.P50 <= 0 || f.CommitMs.P99 < f.CommitMs.P50 {
			t.Errorf("%s: commit latency %+v for %d committed and %d failed", k, f.CommitMs, f.Committed, f.Failed)
		}
		kinds += f.CommitMs.Count
	}
	if kinds != s.LatencyMs.Commit.Count {
		t.Errorf("the kinds' commit latencies count %d payments, the whole %d", kinds, s.LatencyMs.Commit.Count)
	}
	t.Logf("verdict %s; sent by kind %v, committed by kind %v, invalid %v / %v", res.Verdict(), s.SentByKind, s.CommittedByKind, s.InvalidSent, s.InvalidRefused)
	ours := sendersFrom(n, off, sc.Workload.Senders)
	cl := &cometbft.Client{URL: n.Nodes[0].RPC, HTTP: http.DefaultClient}
	inBlocks := map[string]int64{}
	for h := res.Chain.FirstHeight; h <= res.Chain.LastHeight; h++ {
		b, err := cl.Block(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := cl.BlockResults(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range b.Data.Txs {
			if from, err := cosmos.Sender(tx); err != nil || !ours[from] || rs[i].Code != 0 {
				continue
			}
			kind := "send"
			if bytes.Contains(tx, []byte("/cosmos.bank.v1beta1.MsgMultiSend")) {
				kind = "multi_send"
			}
			inBlocks[kind]++
		}
	}
	if s.CommittedByKind["send"] != inBlocks["send"] || s.CommittedByKind["multi_send"] != inBlocks["multi_send"] ||
		s.CommittedByKind["send"]+s.CommittedByKind["multi_send"] != s.Committed || inBlocks["multi_send"] == 0 {
		t.Errorf("committed by kind %v (total %d); the blocks hold %v", s.CommittedByKind, s.Committed, inBlocks)
	}
	if m, all := float64(s.SentByKind["multi_send"]), float64(s.Sent); m < 0.15*all || m > 0.30*all {
		t.Errorf("multi-sends %.0f of %.0f sent, want about 2 in 9", m, all)
	}
	for sort, reason := range map[string]string{"bad_signature": "unauthorized", "stale_sequence": "sequence_mismatch"} {
		if s.InvalidSent[sort] == 0 || s.InvalidRefused[sort+": "+reason] != s.InvalidSent[sort] {
			t.Errorf("%s: sent %d, refused %v", sort, s.InvalidSent[sort], s.InvalidRefused)
		}
	}
	if len(s.InvalidCommitted) > 0 {
		t.Errorf("invalid payments committed: %v", s.InvalidCommitted)
	}
}
