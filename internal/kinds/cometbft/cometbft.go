// Package cometbft is the kind of any CometBFT chain given by endpoint:
// payments are the built-in ledger's when the chain is one (recognised by
// its queries), else the raw key=value workload (kvstore and the like).
package cometbft

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	cmt "github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/ledgerclient"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is a CometBFT chain by endpoint. The built-in network's kind
// reuses its target and workload.
type Kind struct{}

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "cometbft", MixKinds: []string{"multi_send"}, About: "any CometBFT chain by endpoint: the built-in ledger's payments when it is one, else raw key=value transactions", Recount: true}
}

// Validate needs endpoints: tpslab starts no such chain.
func (k Kind) Validate(sc *scenario.Scenario) error {
	if len(sc.Target.Endpoints) == 0 {
		return fmt.Errorf("target.endpoints: empty, expected at least one RPC URL for target kind cometbft (--endpoint)")
	}
	return nil
}

// Target is the CometBFT target, with results named by the ledger.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	o := cmt.Options{Endpoints: sys.Endpoints, Async: t.Broadcast == "async", Poll: t.Confirm == "poll",
		Connections: sc.Load.MostConnections(), Reason: chain.Reason}
	if sc.Workload.Kind != "raw" { // the ledger says when each node's mempool first held a payment
		o.Seen = &cmt.SeenQuery{Path: "/seen", Sample: func(id sut.TxID) bool { return chain.SeenSample(id) }, Read: cmt.LedgerSeen}
	}
	tgt, err := cmt.New(o)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload is the ledger's payments (or raw transactions for other
// applications).
func (Kind) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*cmt.Target)
	w := sc.Workload
	if w.Kind == "raw" {
		return workload.NewRaw(fmt.Sprintf("%x", time.Now().UnixNano()), w.Padding), nil
	}
	var chainID string
	var g chain.Genesis
	if n := sys.Net; n != nil { // a built-in network in net_home or started
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
	chainID, g, err := kinds.LedgerGenesis(sc, chainID, g)
	if err != nil {
		return nil, err
	}
	client := ledgerclient.NewClient(chainID, g, w.Padding, tgt.ABCIQuery)
	if seed, n, ok := kinds.LedgerWallets(sc, g.Seed); ok {
		if client, err = fundWallets(ctx, sys, sc, tgt, client, seed, n); err != nil {
			return nil, err
		}
	}
	p, err := workload.NewPayments(ctx, kinds.PaymentsConfig(sc), client)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}

// FundFanout is how many wallets one funding batch pays.
const FundFanout = 100

// fundWallets derives the n test wallets of workload.wallet_seed and funds
// each with workload.fund_amount from the genesis accounts (roots), by a
// tree of batches (ledgerclient.Funding), showing progress; the summary's
// notes say how long it took and what it cost in memory.
func fundWallets(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, tgt *cmt.Target, roots *ledgerclient.Client, seed string, n int) (*ledgerclient.Client, error) {
	w := sc.Workload
	if err := sc.CheckAccounts(uint64(n)); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, fmt.Errorf("%v (workload.accounts: the test wallets of workload.wallet_seed)", err))
	}
	start := time.Now()
	fmt.Fprintf(sys.Log, "deriving %d test wallets\n", n)
	wallets := ledgerclient.NewWallets(roots.ChainID(), seed, n, w.Padding, tgt.ABCIQuery)
	wallets.ShareState(roots)
	fmt.Fprintf(sys.Log, "funding %d wallets with %d each from %d genesis accounts, by batches of up to %d (derived in %.1f s)\n",
		n, w.FundAmount, min(roots.Accounts(), (n+FundFanout-1)/FundFanout), FundFanout, time.Since(start).Seconds())
	subs := make([]sut.Submitter, 16)
	for i := range subs {
		subs[i] = tgt.Submitter(i)
	}
	f := ledgerclient.Funding{Roots: roots, Wallets: wallets, Query: tgt.ABCIQuery, Submitters: subs,
		Amount: w.FundAmount, Fanout: FundFanout, Resume: w.ReuseWallets, Progress: kinds.FundProgress(sys.Log, start)}
	st, err := f.Fund(ctx)
	if err != nil {
		if strings.HasPrefix(err.Error(), "workload.") {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	took := time.Since(start).Seconds()
	fmt.Fprintf(sys.Log, "funded %d wallets in %.1f s\n", n, took)
	if sys.Note != nil {
		sys.Note(fmt.Sprintf("funding: %d wallets with %d each from %d genesis accounts in %.1f s, keys derived included (%d batches of up to %d in %d rounds, %d already done; tpslab's Go memory %.0f MB)",
			n, w.FundAmount, st.Roots, took, st.Batches, FundFanout, st.Rounds, st.Skipped, kinds.GoMemoryMB()))
	}
	return wallets, nil
}

// Capacities are the chain's block limits (its consensus parameters) and
// its nodes' mempools (a network tpslab started).
func (Kind) Capacities(ctx context.Context, sys *kinds.System, _ *scenario.Scenario) []report.Capacity {
	if len(sys.Endpoints) == 0 {
		return nil
	}
	return append(kinds.ConsensusCapacities(ctx, sys.Endpoints[0]), kinds.MempoolCapacities(sys)...)
}
