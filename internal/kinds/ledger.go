package kinds

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/sut/cometbft"
	"github.com/tpslab/tpslab/internal/sut/ledgerclient"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// ledger is a CometBFT chain: the built-in reference ledger (which tpslab
// starts), or any CometBFT chain given by endpoint. Payments are the
// ledger's; other applications take the raw key=value workload.
type ledger struct{ startsNet bool }

// StartNet starts the built-in network the scenario describes.
func (l ledger) StartNet(ctx context.Context, sc *scenario.Scenario, o runner.NetOptions) (*testnet.Net, error) {
	if !l.startsNet {
		return nil, exitcode.BadInputf("target.kind: %s: tpslab does not start such a chain, expected target.endpoints (--endpoint)", sc.Target.Kind)
	}
	g := testnet.DefaultGenesis()
	return Up(ctx, scenarioNet(sc, o, "builtin", g.Seed, sc.Network.Accounts, g.Balance))
}

// Check audits the network as `net check` does (run after faults).
func (l ledger) Check(ctx context.Context, n *testnet.Net) (lines, problems []string) {
	a := Check(ctx, n)
	return a.Lines, a.Problems
}

// scenarioNet is the network a scenario describes, for a run that starts it.
func scenarioNet(sc *scenario.Scenario, o runner.NetOptions, kind, seed string, accounts, balance uint64) NetOptions {
	nw := sc.Network
	for _, f := range sc.Faults {
		if f.NeedsLinks() && nw.Topology == "" {
			nw.Topology = "loopback" // proxied links, nothing added: faults can cut them
		}
	}
	st := testnet.DefaultSettings()
	st.TimeoutCommit = nw.TimeoutCommit.D()
	st.MempoolSize = nw.MempoolSize
	st.MaxBlockBytes = nw.MaxBlockBytes
	st.MaxBlockGas = nw.MaxBlockGas
	st.CreateEmptyBlocks = nw.CreateEmptyBlocks
	return NetOptions{Kind: kind, Home: o.Home, Validators: nw.Validators, Seed: seed, Accounts: accounts, Balance: balance,
		Settings: st, Reset: true, Binary: o.Binary, Owner: o.Owner, Log: o.Log, Topology: nw.Topology, RPCNodes: nw.RPCNodes, ClientLinks: nw.ClientLinks}
}

// Target is the CometBFT target, with results named by the ledger.
func (l ledger) Target(sys *runner.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	if t.Via != "rpc" {
		return nil, exitcode.BadInputf("target.via: %q, expected rpc: the %s network takes transactions over its CometBFT RPC only", t.Via, sys.Kind)
	}
	tgt, err := cometbft.New(cometbft.Options{Endpoints: sys.Endpoints, Async: t.Broadcast == "async", Poll: t.Confirm == "poll",
		Connections: sc.Load.Connections, Reason: chain.Reason})
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload is the ledger's payments (or raw transactions for other
// applications).
func (l ledger) Workload(ctx context.Context, sys *runner.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*cometbft.Target)
	w := sc.Workload
	if w.Kind == "raw" {
		return workload.NewRaw(fmt.Sprintf("%x", time.Now().UnixNano()), w.Padding), nil
	}
	var chainID string
	var g chain.Genesis
	if n := sys.Net; n != nil && n.Kind == "builtin" {
		chainID, g = n.ChainID, n.Genesis
	} else {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		info, err := tgt.Probe(qctx)
		if err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %s does not answer: %w", strings.Join(sys.Endpoints, ", "), err))
		}
		chainID = info.ChainID
		if g, err = chain.ReadGenesis(qctx, tgt.ABCIQuery); err != nil {
			return nil, exitcode.BadInputf("workload.kind payment: the target %s is %v; use --workload raw for other chains", strings.Join(sys.Endpoints, ", "), err)
		}
	}
	if w.ChainID != "" {
		chainID = w.ChainID
	}
	if w.GenesisSeed != "" {
		g.Seed = w.GenesisSeed
	}
	if w.Accounts != 0 {
		g.Accounts = w.Accounts
	}
	if err := sc.CheckAccounts(g.Accounts); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	client := ledgerclient.NewClient(chainID, g, w.Padding, tgt.ABCIQuery)
	p, err := workload.NewPayments(ctx, paymentsConfig(sc), client)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}
