package kinds

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/sut/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// sdk is a Cosmos SDK chain: tpslab's own (tpsd), a network `net up --kind
// cosmos` started, or any SDK chain given by endpoint. Payments are x/bank
// MsgSends between test wallets.
type sdk struct{}

// StartNet starts a network of tpslab's SDK chain.
func (sdk) StartNet(ctx context.Context, sc *scenario.Scenario, o runner.NetOptions) (*testnet.Net, error) {
	wallets := max(sc.Network.Accounts, uint64(sc.Workload.SendersOffset+sc.Workload.Senders))
	seed := sc.Workload.WalletSeed
	if seed == "" {
		seed = "tpslab"
	}
	no := scenarioNet(sc, o, "cosmos", seed, wallets, 1_000_000_000_000)
	no.Binary = "" // tpsd, not tpslab
	return Up(ctx, no)
}

// Target is the Cosmos target: blocks from the CometBFT RPC, submissions
// where target.via says.
func (sdk) Target(sys *runner.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	o := cosmos.Options{RPC: sys.Endpoints, API: t.APIEndpoints, GRPC: t.GRPCEndpoints, Via: t.Via,
		Async: t.Broadcast == "async", Poll: t.Confirm == "poll", Connections: sc.Load.Connections}
	if n := sys.Net; n != nil {
		o.API, o.GRPC = nil, nil
		for _, nd := range n.Nodes {
			o.API = append(o.API, nd.API)
			o.GRPC = append(o.GRPC, nd.GRPC)
		}
	}
	tgt, err := cosmos.New(o)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload derives the test wallets, checks the chain is the one described
// (chain id, denom), funds the senders when asked, and reads their
// accounts.
func (sdk) Workload(ctx context.Context, sys *runner.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*cosmos.Target)
	w := sc.Workload
	if w.Kind != "payment" {
		return nil, exitcode.BadInputf("workload.kind: %q, expected payment (bank sends) for a Cosmos SDK chain", w.Kind)
	}
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	info, err := tgt.Probe(qctx)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %s does not answer: %w", strings.Join(sys.Endpoints, ", "), err))
	}
	if w.ChainID != "" && w.ChainID != info.ChainID {
		return nil, exitcode.BadInputf("workload.chain_id: %q, but the node at %s is on chain %q", w.ChainID, sys.Endpoints[0], info.ChainID)
	}
	seed, count, denom, prefix := w.WalletSeed, int(w.Accounts), w.Denom, w.Prefix
	genesisFunded := 0
	if n := sys.Net; n != nil && n.Cosmos != nil {
		if seed == "" || seed == n.Cosmos.WalletSeed {
			seed, genesisFunded = n.Cosmos.WalletSeed, n.Cosmos.Wallets
			if count == 0 {
				count = n.Cosmos.Wallets
			}
		}
		if denom == "" {
			denom = n.Cosmos.Denom
		}
		if prefix == "" {
			prefix = n.Cosmos.Prefix
		}
	}
	if seed == "" {
		seed = "tpslab"
	}
	if count == 0 {
		count = max(w.SendersOffset+w.Senders, 2)
	}
	if denom == "" {
		if denom, err = cosmos.StakingDenom(qctx, tgt.ABCIQuery); err != nil || denom == "" {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the chain's staking denom (give workload.denom): %v", err))
		}
	}
	if supply, err := cosmos.Supply(qctx, tgt.ABCIQuery, denom); err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the supply of %s: %w", denom, err))
	} else if supply == "0" {
		staking, _ := cosmos.StakingDenom(qctx, tgt.ABCIQuery)
		return nil, exitcode.BadInputf("workload.denom: %q does not exist on chain %s (no supply); its staking denom is %q", denom, info.ChainID, staking)
	}
	if prefix == "" {
		if prefix, err = cosmos.Bech32Prefix(qctx, tgt.ABCIQuery); err != nil || prefix == "" {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the chain's address prefix (give workload.bech32_prefix): %v", err))
		}
	}
	if err := sc.CheckAccounts(uint64(count)); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	fee, err := cosmos.ParseCoins(w.Fee)
	if err != nil {
		return nil, exitcode.BadInputf("workload.fee: %v", err)
	}
	gas := w.Gas
	if gas == 0 {
		gas = 200_000
	}
	codec := cosmos.NewCodec(info.ChainID, denom, fee, gas, w.Memo, cosmos.DeriveWallets(seed, count, prefix), tgt.ABCIQuery)
	if err := fund(ctx, sc, tgt, codec, prefix, genesisFunded, sys.Log); err != nil {
		return nil, err
	}
	p, err := workload.NewPayments(ctx, paymentsConfig(sc), codec)
	if err != nil {
		if strings.Contains(err.Error(), "never funded") {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%v: give a funded key with --funder-key to fund the senders first", err))
		}
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}

// fund gives the senders their funds from workload.funder_key, unless the
// network's genesis funded them, or they hold funds and reuse_wallets is set.
func fund(ctx context.Context, sc *scenario.Scenario, tgt *cosmos.Target, codec *cosmos.Codec, prefix string, genesisFunded int, log io.Writer) error {
	w := sc.Workload
	first, last := w.SendersOffset, w.SendersOffset+w.Senders-1
	if w.FunderKey == "" || last < genesisFunded {
		return nil
	}
	if w.ReuseWallets {
		funded := true
		for _, i := range []int{first, last} {
			b, err := cosmos.Balance(ctx, tgt.ABCIQuery, codec.Wallet(i).Address, codec.Denom)
			funded = funded && err == nil && b >= w.FundAmount/2
		}
		if funded {
			return nil
		}
	}
	funder, err := cosmos.ReadKeyFile(w.FunderKey, prefix)
	if err != nil {
		return exitcode.BadInputf("workload.funder_key: %v", err)
	}
	to := make([]int, 0, w.Senders)
	for i := first; i <= last; i++ {
		to = append(to, i)
	}
	start := time.Now()
	fmt.Fprintf(log, "funding %d wallets with %d%s each from %s\n", len(to), w.FundAmount, codec.Denom, funder.Address)
	err = cosmos.Fund(ctx, codec, tgt.Target.Submitter(0), funder, to, w.FundAmount, nil)
	if err != nil {
		if strings.HasPrefix(err.Error(), "workload.funder_key") {
			return exitcode.Wrap(exitcode.BadInput, err)
		}
		return exitcode.Wrap(exitcode.TargetFailed, err)
	}
	fmt.Fprintf(log, "funded %d wallets in %.1f s\n", len(to), time.Since(start).Seconds())
	return nil
}
