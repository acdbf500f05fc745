package runner_test

import (
	"context"
	"fmt"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/targets/ledgerclient"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Test wallets of their own seed are funded before the load by a tree of
// batches from three genesis accounts (two rounds: 3 pay 300, those pay the
// rest), then pay each other a send / multi_send mix: the blocks hold each
// kind exactly as counted, and the wallets together hold exactly what the
// funding gave them (payments only move it among them). A second run with
// reuse_wallets finds every batch done.
func TestWalletsFundedByTreeThenMix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	g := chain.Genesis{Seed: "roots", Accounts: 3, Balance: 1 << 50}
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 1, Home: filepath.Join(t.TempDir(), "net"),
		ChainID: "wallets-chain", Genesis: g, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { downFresh(n) })
	const wallets, amount = 6000, 1_000_000
	scenarioFor := func(name string) scenario.Scenario {
		sc := scenario.Default()
		sc.Target.NetHome = n.Home
		sc.Load.Rate, sc.Load.Duration, sc.Load.Warmup = 200, scenario.Duration(5*time.Second), scenario.Duration(time.Second)
		sc.Workload.WalletSeed, sc.Workload.Accounts, sc.Workload.FundAmount = "wallets", wallets, amount
		sc.Workload.Senders, sc.Workload.SendersOffset, sc.Workload.Window = 400, 100, 4
		sc.Workload.Mix = []scenario.MixEntry{{Kind: "send", Weight: 7}, {Kind: "multi_send", Weight: 3, Outputs: 3}}
		sc.Out = filepath.Join(t.TempDir(), name)
		return sc
	}
	res, err := run(t, context.Background(), scenarioFor("first"))
	if err != nil {
		t.Fatal(err)
	}
	note := strings.Join(res.Notes, "\n")
	if !strings.Contains(note, fmt.Sprintf("funding: %d wallets with %d each from 3 genesis accounts", wallets, amount)) || !strings.Contains(note, "60 batches of up to 100 in 2 rounds, 0 already done") {
		t.Errorf("notes: %s", note)
	}
	keys := chain.DeriveKeys("wallets", wallets)
	senders := map[chain.Address]bool{}
	for _, k := range keys[100:500] {
		senders[chain.AddressOf(k[32:])] = true
	}
	s := res.Summary
	ok, failed := blockCountByKind(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senders)
	if failed != 0 || s.CommittedByKind["send"] != ok["send"] || s.CommittedByKind["multi_send"] != ok["multi_send"] || ok["multi_send"] < 100 {
		t.Errorf("committed by kind %v; the blocks hold %v ok and %d failed", s.CommittedByKind, ok, failed)
	}
	c, err := rpchttp.New(n.Nodes[0].RPC, "/websocket")
	if err != nil {
		t.Fatal(err)
	}
	query := func(ctx context.Context, path string, data []byte) ([]byte, error) {
		r, err := c.ABCIQuery(ctx, path, data)
		if err != nil {
			return nil, err
		}
		return r.Response.Value, nil
	}
	var sum uint64
	for _, k := range keys {
		ai, err := ledgerclient.ReadAccount(context.Background(), query, chain.AddressOf(k[32:]))
		if err != nil {
			t.Fatal(err)
		}
		sum += ai.Balance
	}
	if sum != wallets*amount {
		t.Errorf("the wallets hold %d together, want %d", sum, wallets*amount)
	}
	sc := scenarioFor("again")
	sc.Workload.ReuseWallets = true
	if res, err = run(t, context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	if note := strings.Join(res.Notes, "\n"); !strings.Contains(note, "0 batches of up to 100 in 2 rounds, 60 already done") {
		t.Errorf("resumed funding's notes: %s", note)
	}
}
