// Package cosmosevm is the kind of tpslab's Cosmos EVM chain (tpsevmd: x/vm
// on CometBFT): started as an SDK network, measured through its JSON-RPC
// with the EVM kind's target and workload.
package cosmosevm

import (
	"context"
	"net/http"
	"time"

	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/cosmos"
	"github.com/tpslab/tpslab/internal/kinds/evm"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	eth "github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// Kind is a Cosmos EVM chain.
type Kind struct{ evm.Kind }

// walletBalance is what each test wallet of a Cosmos EVM network holds:
// 10^19 atps (wei), within a genesis balance's uint64 here, enough for
// ~450,000 native transfers at a 1 gwei base fee.
const walletBalance = 10_000_000_000_000_000_000

// Info: its nodes are CometBFT nodes, with CometBFT's metrics page.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "cosmos-evm", MixKinds: []string{"native", "erc20", "contract_call"}, About: "tpslab's Cosmos EVM chain (x/vm on CometBFT); its JSON-RPC takes the load",
		CometBFTMetrics: true, Faults: true, Links: true, Gossip: true, Kubernetes: true}
}

// Target is the EVM kind's, with the gossiped stage from the nodes' logs,
// but its mempool figure is CometBFT's (the
// largest /num_unconfirmed_txs of the nodes): the JSON-RPC's txpool_status
// answers 0 while CometBFT's mempool holds hundreds of transactions, so
// find-max's mempool objective could never trip (issue 53).
func (k Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t, err := k.Kind.Target(sys, sc)
	if err != nil || sys.Net == nil {
		return t, err
	}
	var nodes []*cometbft.Client
	for _, nd := range sys.Net.Nodes {
		if nd.RPC != "" {
			nodes = append(nodes, &cometbft.Client{URL: nd.RPC, HTTP: &http.Client{Timeout: 2 * time.Second}})
		}
	}
	if m := sdknet.MempoolLogs(sys.Net); m != nil {
		m.IDs = sdknet.EthTxIDs
		t.(*eth.Target).SetGossip(m)
	}
	t.(*eth.Target).SetMempool(func(ctx context.Context) (int, error) {
		most, read := 0, false
		var last error
		for _, c := range nodes {
			m, err := c.Mempool(ctx)
			if err != nil {
				last = err
				continue
			}
			most, read = max(most, int(m.Total)), true
		}
		if !read {
			return 0, last
		}
		return most, nil
	})
	return t, nil
}

// Capacities: the EVM's block gas limit, CometBFT's block bytes (read
// from a node's CometBFT RPC) and each node's mempool.
func (k Kind) Capacities(ctx context.Context, sys *kinds.System, sc *scenario.Scenario) []report.Capacity {
	out := k.Kind.Capacities(ctx, sys, sc)
	if sys.Net == nil || len(sys.Net.Nodes) == 0 || sys.Net.Nodes[0].RPC == "" {
		return out
	}
	for _, c := range kinds.ConsensusCapacities(ctx, sys.Net.Nodes[0].RPC) {
		if c.Name == report.BlockBytes { // the gas limit is the EVM's, above
			out = append(out, c)
		}
	}
	return append(out, kinds.MempoolCapacities(sys)...)
}

// Validate: EVM transactions go to eth_sendRawTransaction, with the evm
// section's settings.
func (k Kind) Validate(sc *scenario.Scenario) error { return k.Kind.Validate(sc) }

// Reads: the evm section for its payments, the cosmos section for its
// network (denom, prefix, fee market, minting).
func (Kind) Reads() []string { return []string{"cosmos"} }

// StartNet starts a Cosmos EVM network.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	no := kinds.FromScenario(sc, o, "cosmos-evm", evm.WalletSeed(sc), evm.Wallets(sc), 0)
	return k.Up(ctx, no)
}

// NetDefaults: the kind's balance unless set.
func (Kind) NetDefaults(o *kinds.NetOptions, changed func(string) bool) error {
	if !changed("balance") {
		o.Balance = 0
	}
	return nil
}

// Up starts validators of tpsevmd (built when missing) or o.Binary.
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	if o.Balance == 0 {
		o.Balance = walletBalance
	}
	return cosmos.UpSDK(ctx, o, "tpslab-evm", sdknet.Tpsevmd, "Cosmos EVM chain", true)
}

// Status reads each node's CometBFT status.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus { return n.Status(ctx) }

// Check audits supply and app hashes.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit { return cosmos.CheckSDK(ctx, n) }
