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
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	cmt "github.com/tpslab/tpslab/internal/sut/cometbft"
	"github.com/tpslab/tpslab/internal/sut/ledgerclient"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is a CometBFT chain by endpoint. The built-in network's kind
// reuses its target and workload.
type Kind struct{}

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "cometbft", About: "any CometBFT chain by endpoint: the built-in ledger's payments when it is one, else raw key=value transactions"}
}

// Validate needs endpoints: tpslab starts no such chain.
func (k Kind) Validate(sc *scenario.Scenario) error {
	if len(sc.Target.Endpoints) == 0 {
		return fmt.Errorf("target.endpoints: empty, expected at least one RPC URL for target kind cometbft (--endpoint)")
	}
	return kinds.ViaRPC(sc, "cometbft")
}

// Target is the CometBFT target, with results named by the ledger.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	if t.Via != "rpc" {
		return nil, exitcode.BadInputf("target.via: %q, expected rpc: the %s network takes transactions over its CometBFT RPC only", t.Via, sys.Kind)
	}
	tgt, err := cmt.New(cmt.Options{Endpoints: sys.Endpoints, Async: t.Broadcast == "async", Poll: t.Confirm == "poll",
		Connections: sc.Load.Connections, Reason: chain.Reason})
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
	p, err := workload.NewPayments(ctx, kinds.PaymentsConfig(sc), client)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}
