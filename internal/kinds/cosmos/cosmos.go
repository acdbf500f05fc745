// Package cosmos is the kind of Cosmos SDK chains: tpslab's own (tpsd), a
// network `net up --kind cosmos` started (tpsd or the user's daemon), or any
// SDK chain given by endpoint. Payments are x/bank MsgSends between test
// wallets. The Cosmos EVM kind starts its networks through UpSDK too.
package cosmos

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/testnet/kubenet"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	sdk "github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is a Cosmos SDK chain.
type Kind struct{}

// Info: its nodes are CometBFT nodes, with CometBFT's metrics page.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "cosmos", MixKinds: []string{"multi_send"}, About: "a Cosmos SDK chain: tpslab's tpsd, your daemon (--binary gaiad), or endpoints; bank sends over RPC, REST or gRPC",
		CometBFTMetrics: true, Kubernetes: true, Faults: true, Links: true, Gossip: true, Recount: true}
}

// MixKinds are the scenario's own kinds of payment (cosmos.messages).
func (Kind) MixKinds(sc *scenario.Scenario) []string {
	var out []string
	for _, m := range SettingsOf(sc).Messages {
		out = append(out, m.Kind)
	}
	return out
}

// Validate checks the section; rest and grpc need their endpoints when
// endpoints are given.
func (Kind) Validate(sc *scenario.Scenario) error {
	s := SettingsOf(sc)
	if err := s.validate(); err != nil {
		return err
	}
	if len(sc.Target.Endpoints) > 0 {
		if s.Via == "rest" && len(s.APIEndpoints) == 0 {
			return fmt.Errorf("cosmos.api_endpoints: empty, expected REST URLs for cosmos.via rest (--api-endpoint)")
		}
		if s.Via == "grpc" && len(s.GRPCEndpoints) == 0 {
			return fmt.Errorf("cosmos.grpc_endpoints: empty, expected host:port addresses for cosmos.via grpc (--grpc-endpoint)")
		}
	}
	return nil
}

// StartNet starts a network of tpslab's SDK chain.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	wallets := max(sc.Network.Accounts, uint64(sc.Workload.SendersOffset+sc.Workload.Senders))
	seed := sc.Workload.WalletSeed
	if seed == "" {
		seed = "tpslab"
	}
	no := kinds.FromScenario(sc, o, "cosmos", seed, wallets, 1_000_000_000_000)
	return k.Up(ctx, no)
}

// NetDefaults: every `net up` option applies; the section's network
// settings are checked.
func (Kind) NetDefaults(o *kinds.NetOptions, _ func(string) bool) error {
	return exitcode.Wrap(exitcode.BadInput, SettingsOf(o.Scenario).validateNet())
}

// Up starts validators of tpsd (built when missing) or o.Binary.
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	return UpSDK(ctx, o, "tpslab-cosmos", sdknet.Tpsd, "SDK chain", false)
}

// UpSDK starts validators of an SDK daemon: o.Binary, or tpslab's own
// chain (built when missing); evm for a Cosmos EVM chain.
func UpSDK(ctx context.Context, o kinds.NetOptions, chainID string, build func(io.Writer) (string, error), what string, evm bool) (*testnet.Net, error) {
	if o.ChainID == "" {
		o.ChainID = chainID
	}
	if o.Kube != nil && o.Binary != "" {
		return nil, exitcode.BadInputf("--kubeconfig: on Kubernetes tpslab runs its own %s (built statically into an image), not %s", what, o.Binary)
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = build(o.Log); err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("tpslab's %s: %w", what, err))
		}
	}
	s := SettingsOf(o.Scenario)
	so := sdknet.Options{Kind: o.Kind, Binary: bin, Validators: o.Validators, Home: o.Home, ChainID: o.ChainID, Denom: s.Denom, Prefix: s.Prefix,
		WalletSeed: o.Seed, Wallets: int(o.Accounts), Balance: o.Balance, Settings: o.Settings, Bind: o.Bind, Reset: o.Reset, Owner: o.Owner, Log: o.Log,
		EVM: evm, Topology: o.Topology, ClientLinks: o.ClientLinks, RPCNodes: o.RPCNodes, Links: o.Tpslab,
		Economics: sdknet.Economics{FeeMarket: s.FeeMarket.Enabled, MinBaseGasPrice: s.FeeMarket.MinBaseGasPrice,
			MaxBlockUtilization: s.FeeMarket.MaxBlockUtilization, Mint: s.Mint}}
	if err := so.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if o.Kube != nil {
		k := *o.Kube
		k.Log = o.Log
		n, err := kubenet.UpCosmos(ctx, so, k, "")
		if err != nil && strings.HasPrefix(err.Error(), "--") {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		return n, err
	}
	fmt.Fprintf(o.Log, "starting %d validators of %s in %s\n", o.Validators, bin, o.Home)
	if !o.ForRun {
		fmt.Fprintf(o.Log, "settings: %s\n", o.Settings)
	}
	return sdknet.Up(ctx, so)
}

// Status reads each node's CometBFT status.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus { return n.Status(ctx) }

// Check audits supply and app hashes.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit { return CheckSDK(ctx, n) }

// CheckSDK audits an SDK network: the supply of its denom conserved, app
// hashes agreeing.
func CheckSDK(ctx context.Context, n *testnet.Net) kinds.Audit {
	audits, problems := sdknet.Check(ctx, n)
	var a kinds.Audit
	for _, nd := range n.Nodes {
		if x, ok := audits[nd.Name]; ok {
			a.Lines = append(a.Lines, fmt.Sprintf("%s: height %d app_hash %s supply %s%s", nd.Name, x.Height, x.AppHash, x.Supply, sdknet.Of(n).Denom))
		}
	}
	a.Problems, a.OK = problems, "ok: supply of "+sdknet.Of(n).Denom+" conserved, app hashes agree"
	if sdknet.Of(n).Minting {
		a.OK = "ok: supply of " + sdknet.Of(n).Denom + " is the genesis supply plus what x/mint minted, app hashes agree"
	}
	return a
}

// Target is the Cosmos target: blocks from the CometBFT RPC, submissions
// where cosmos.via says.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t, s := sc.Target, SettingsOf(sc)
	o := sdk.Options{RPC: sys.Endpoints, API: s.APIEndpoints, GRPC: s.GRPCEndpoints, Via: s.Via,
		Async: t.Broadcast == "async", Poll: t.Confirm == "poll", Connections: sc.Load.MostConnections()}
	if n := sys.Net; n != nil {
		o.API, o.GRPC = nil, nil
		o.MempoolLogs = sdknet.MempoolLogs(n)
		rpcNodes := n.Validators() < len(n.Nodes) // the load goes to them only
		for _, nd := range n.Nodes {
			if rpcNodes && nd.Role != "rpc" {
				continue
			}
			o.API = append(o.API, nd.API)
			o.GRPC = append(o.GRPC, nd.GRPC)
		}
	}
	tgt, err := sdk.New(o)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload derives the test wallets, checks the chain is the one described
// (chain id, denom), funds the senders when asked, and reads their
// accounts.
func (Kind) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*sdk.Target)
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
	s := SettingsOf(sc)
	seed, count, denom, prefix := w.WalletSeed, int(w.Accounts), s.Denom, s.Prefix
	genesisFunded := 0
	if n := sys.Net; n != nil && sdknet.Of(n) != nil {
		if seed == "" || seed == sdknet.Of(n).WalletSeed {
			seed, genesisFunded = sdknet.Of(n).WalletSeed, sdknet.Of(n).Wallets
			if count == 0 {
				count = sdknet.Of(n).Wallets
			}
		}
		if denom == "" {
			denom = sdknet.Of(n).Denom
		}
		if prefix == "" {
			prefix = sdknet.Of(n).Prefix
		}
	}
	if seed == "" {
		seed = "tpslab"
	}
	if count == 0 {
		count = max(w.SendersOffset+w.Senders, 2)
	}
	if denom == "" {
		if denom, err = sdk.StakingDenom(qctx, tgt.ABCIQuery); err != nil || denom == "" {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the chain's staking denom (give cosmos.denom): %v", err))
		}
	}
	if supply, err := sdk.Supply(qctx, tgt.ABCIQuery, denom); err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the supply of %s: %w", denom, err))
	} else if supply == "0" {
		staking, _ := sdk.StakingDenom(qctx, tgt.ABCIQuery)
		return nil, exitcode.BadInputf("cosmos.denom: %q does not exist on chain %s (no supply); its staking denom is %q", denom, info.ChainID, staking)
	}
	if prefix == "" {
		if prefix, err = sdk.Bech32Prefix(qctx, tgt.ABCIQuery); err != nil || prefix == "" {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the chain's address prefix (give cosmos.bech32_prefix): %v", err))
		}
	}
	if err := sc.CheckAccounts(uint64(count)); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	auto := s.Fee == "" || s.Fee == "auto"
	var fee []sdk.Coin
	if !auto {
		if fee, err = sdk.ParseCoins(s.Fee); err != nil {
			return nil, exitcode.BadInputf("cosmos.fee: %v (or auto: the chain's gas price)", err)
		}
	}
	gas := w.Gas
	if gas == 0 {
		gas = defaultGas // until the chain says what a send uses
	}
	codec := sdk.NewCodec(info.ChainID, denom, fee, gas, s.Memo, sdk.DeriveWallets(seed, count, prefix), tgt.ABCIQuery)
	codec.SetSenders(w.SendersOffset, w.Senders)
	if err := addMessageKinds(qctx, codec, tgt, s); err != nil {
		return nil, err
	}
	if auto {
		margin := feeMargin(sc)
		from, err := codec.UseChainFee(qctx, margin)
		if err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%v (or give cosmos.fee)", err))
		}
		if sys.Note != nil {
			how := "re-read every second and followed, and a payment refused for its fee is re-priced and re-signed once"
			if w.Mode == scenario.Presigned {
				how = "signed ahead with that headroom; a payment refused for its fee is re-priced and re-signed"
			}
			sys.Note(fmt.Sprintf("fee: %s; each payment pays its gas x that x%.1f (cosmos.fee auto): %s", from, margin, how))
		}
	}
	if err := fund(ctx, sc, tgt, codec, prefix, genesisFunded, sys); err != nil {
		return nil, err
	}
	if err := setUp(ctx, sys, sc, tgt, codec); err != nil {
		return nil, err
	}
	cctx, ccancel := context.WithTimeout(ctx, 90*time.Second) // a calibration payment waits for its block
	defer ccancel()
	if w.Gas == 0 {
		gas = mixGas(cctx, sys, sc, tgt, codec)
	}
	if err := messageGas(cctx, sys, sc, codec); err != nil {
		return nil, err
	}
	checkBlockSpace(cctx, sys, sc, gas)
	p, err := workload.NewPayments(ctx, kinds.PaymentsConfig(sc), codec)
	if err != nil {
		if strings.Contains(err.Error(), "never funded") {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%v: give a funded key with --funder-key to fund the senders first", err))
		}
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	if auto && sys.AtEnd != nil {
		presigned := w.Mode == scenario.Presigned
		stop := codec.WatchPrice(ctx, !presigned)
		sys.AtEnd(func() []string { stop(); return feeNotes(codec, feeMargin(sc), presigned) })
	}
	return p, nil
}

// The margins over the chain's gas price a payment pays (cosmos.fee
// auto). The fee market raises its price by at most 12.5% a block, and a
// payment is checked again at the block that takes it: live signing covers
// about three full blocks; presigned bytes cannot follow the price, so they
// carry room for nine.
const (
	liveFeeMargin      = 1.5
	presignedFeeMargin = 3.0
)

// feeMargin is cosmos.fee_margin, or the mode's.
func feeMargin(sc *scenario.Scenario) float64 {
	w := sc.Workload
	switch {
	case SettingsOf(sc).FeeMargin != 0:
		return SettingsOf(sc).FeeMargin
	case w.Mode == scenario.Presigned:
		return presignedFeeMargin
	}
	return liveFeeMargin
}

// feeNotes says how the gas price moved during the run and whether it
// overtook what the payments paid.
func feeNotes(codec *sdk.Codec, margin float64, presigned bool) []string {
	first, peak, fee, ok := codec.FeeFacts()
	if !ok || peak <= 0 {
		return nil
	}
	n := fmt.Sprintf("fee: the gas price went from %.6g to at most %.6g %s per gas during the run; a payment paid %s at the end", first, peak, codec.Denom, fee)
	if presigned && first > 0 && peak > first*margin {
		n += fmt.Sprintf("; the price rose past the x%.1f the payments were presigned with: that is why payments were refused for their fee (insufficient_fee; re-priced ones are counted as repriced) or dropped from mempools (expired)", margin)
	}
	return []string{n}
}

// defaultGas is what a payment reserves when the chain cannot simulate one.
const defaultGas = 200_000

// gasMargin is what auto gas adds to a sender's first payment, simulated:
// it stores the sender's key, and simulations of it vary the most.
const gasMargin = 1.3

// steadyMargin is what auto gas adds to the gas a later payment uses:
// measured by a real payment and a simulation from a sender whose key is
// stored, it varies only with the digits of amounts and sequences and with
// recipients' state (a recipient's first coins cost more). 1.6x, as the
// simulated first payment with 1.3 gave on a Cosmos Hub chain, cut a gas
// capped block's room by a third (issue 34).
const steadyMargin = 1.15

// checkBlockSpace warns before the load when blocks cannot hold the
// offered rate, and notes what a block holds: the verdict weighs it against
// the intervals the chain makes under load.
func checkBlockSpace(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, gas uint64) {
	msg, perBlock, err := BlockSpace(ctx, sys.Endpoints[0], sc, gas)
	if err != nil {
		fmt.Fprintf(sys.Log, "block space: not checked: %v\n", err)
		return
	}
	if msg != "" && sys.Warn != nil {
		sys.Warn(msg)
	}
	if perBlock > 0 && sys.Note != nil {
		sys.Note(fmt.Sprintf("block space: blocks hold at most %d payments (%d gas each reserves)", perBlock, gas))
	}
}

// feeMarketGas is what a payment on a fee-market chain uses beyond its
// simulation when it cannot be measured: the fee market simulates its fee
// deduction as one constant (12,490 gas) and no tip, while a real payment
// escrows the fee, pays it and sends the tip to the proposer (measured on
// tpsd: 114,700 used against 89,000 simulated, 156,000 against 130,000
// for a first payment).
const feeMarketGas = 30_000

// autoGas is workload.gas 0 (auto): what a payment reserves, from what
// the chain says a payment uses. A sender's first payment (it stores the
// key) is simulated, times gasMargin. A later one is measured: one real
// payment from the first sender when it has never paid (made before the
// load, so not counted) shows what a block charges beyond the simulation,
// and a simulation from that sender, its key now stored, what a later
// payment uses; that, times steadyMargin. Rounded up to a thousand;
// defaultGas when the chain cannot simulate. Reserving what a payment uses,
// not 200,000, lets a gas-capped block (or a fee market's target) take as
// many as it can.
func autoGas(ctx context.Context, codec *sdk.Codec, tgt *sdk.Target, from, shapes []int, sys *kinds.System) (gas, first uint64) {
	simulate := func(f int) (uint64, error) {
		var used uint64
		for _, n := range shapes {
			u, err := codec.SimulateGasOf(ctx, f, n)
			if err != nil {
				return 0, err
			}
			used = max(used, u)
		}
		return used, nil
	}
	round := func(v float64) uint64 { return (uint64(math.Ceil(v)) + 999) / 1000 * 1000 }
	// The first and the last sender: a run may add new senders to ones
	// used before; the largest shape of a mix serves every payment.
	var firstUsed, sim0 uint64
	for i, f := range from {
		u, err := simulate(f)
		if err != nil {
			fmt.Fprintf(sys.Log, "gas: a bank send could not be simulated (%v); each payment reserves %d (give workload.gas)\n", err, uint64(defaultGas))
			return defaultGas, defaultGas
		}
		if i == 0 {
			sim0 = u
		}
		firstUsed = max(firstUsed, u)
	}
	extra, why := uint64(0), ""
	if codec.FeeMarket(ctx) {
		extra, why = feeMarketGas, fmt.Sprintf(", plus %d for the fee market's deduction and tip, which simulations leave out", feeMarketGas)
	}
	firstGas := round(float64(firstUsed+extra) * gasMargin)
	// A later payment is known from a sender whose key is stored: the
	// first sender if it has paid before, else after its calibration.
	steadyUsed, steadyKnown, measured := firstUsed, false, ""
	seq, err := codec.Nonce(ctx, from[0])
	switch {
	case err != nil:
	case seq > 0:
		steadyKnown = true
	case len(tgt.Clients()) > 0:
		real, cerr := codec.Calibrate(ctx, tgt.Submitter(0), tgt.Clients()[0], from[0], firstGas)
		if cerr != nil {
			fmt.Fprintf(sys.Log, "gas: no calibration payment (%v); every payment reserves what a first one does\n", cerr)
			break
		}
		extra, why = 0, ""
		if real > sim0 {
			extra, why = real-sim0, fmt.Sprintf(", plus %d a block charged beyond the simulation", real-sim0)
		}
		measured = fmt.Sprintf("; a real first payment (before the load) used %d", real)
		steadyKnown = true
	}
	if steadyKnown {
		if steadyUsed, err = simulate(from[0]); err != nil {
			steadyUsed, steadyKnown = firstUsed, false
		}
	}
	firstGas = round(float64(firstUsed+extra) * gasMargin)
	gas = firstGas // not measured: the first payment's reservation serves all
	if steadyKnown {
		gas = round(float64(steadyUsed+extra) * steadyMargin)
	}
	if sys.Note != nil {
		sys.Note(fmt.Sprintf("gas: a sender's first payment simulates to %d gas%s, a later one to %d%s; each payment reserves %d (x%.2f), a sender's first %d (x%.1f; workload.gas 0: auto)",
			firstUsed, measured, steadyUsed, why, gas, steadyMargin, max(firstGas, gas), gasMargin))
	}
	return gas, max(firstGas, gas)
}

// mixGas sets the gas of workload.gas auto: the largest of the mix's
// shapes (its multi-sends' outputs, its kinds of the chain's messages).
func mixGas(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, tgt *sdk.Target, codec *sdk.Codec) uint64 {
	w := sc.Workload
	shapes := []int{1}
	for _, m := range kinds.PaymentsConfig(sc).Mix {
		if m.Kind == "multi_send" {
			shapes = append(shapes, m.Outputs)
		}
	}
	gas, first := autoGas(ctx, codec, tgt, []int{w.SendersOffset, w.SendersOffset + w.Senders - 1}, shapes, sys)
	codec.SetGas(gas)
	codec.FirstGas = first
	return gas
}

// messageGas gives each of the mix's kinds of the chain's messages its
// own gas: its cosmos.messages gas, or a simulation from the first sender
// x messageMargin. A message's cost moves with the state more than a
// send's (gaiad: a delegator's second delegation also withdraws its
// rewards; at the bank send's x1.15, 303 of 371 ran out of gas).
func messageGas(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, codec *sdk.Codec) error {
	for i, k := range SettingsOf(sc).Messages {
		gas, why := k.Gas, "cosmos.messages' gas"
		if gas == 0 && sc.Workload.Gas != 0 {
			continue // workload.gas, as every payment
		}
		if gas == 0 {
			used, err := codec.SimulateGasOfKind(ctx, sc.Workload.SendersOffset, k.Kind)
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("cosmos.messages[%d] (%s): its simulation: %v (give its gas)", i, k.Kind, err))
			}
			gas = (uint64(math.Ceil(float64(used)*messageMargin)) + 999) / 1000 * 1000
			why = fmt.Sprintf("simulated at %d, x%.1f", used, messageMargin)
		}
		codec.SetKindGas(k.Kind, gas)
		if sys.Note != nil {
			sys.Note(fmt.Sprintf("gas: each %s payment reserves %d (%s)", k.Kind, gas, why))
		}
	}
	return nil
}

// messageMargin is a chain's own message's gas over its simulation.
const messageMargin = 1.5

// setUp sends each sender's cosmos.setup transaction, before the load.
func setUp(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, tgt *sdk.Target, codec *sdk.Codec) error {
	s, w := SettingsOf(sc), sc.Workload
	if len(s.Setup) == 0 {
		return nil
	}
	if len(tgt.Clients()) == 0 {
		return exitcode.BadInputf("cosmos.setup: needs the chain's CometBFT RPC, to find each set-up transaction in its block; give --endpoint")
	}
	senders := make([]int, w.Senders)
	for i := range senders {
		senders[i] = w.SendersOffset + i
	}
	start := time.Now()
	if err := codec.Setup(ctx, tgt.Submitter(0), tgt.Clients()[0], senders); err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, err)
	}
	if sys.Note != nil {
		sys.Note(fmt.Sprintf("set-up: each of the %d senders sent its cosmos.setup transaction (%d message(s)), all committed with code 0 in %.1f s, before the load (not measured)", len(senders), len(s.Setup), time.Since(start).Seconds()))
	}
	return nil
}

// addMessageKinds gives the codec the scenario's kinds of the chain's own
// messages, encoded with the chain's descriptors.
func addMessageKinds(ctx context.Context, codec *sdk.Codec, tgt *sdk.Target, s *Settings) error {
	specs := s.MessageSpecs()
	if len(specs) == 0 {
		return nil
	}
	files, err := sdk.Descriptors(ctx, tgt.ABCIQuery, s.Descriptors)
	if err != nil {
		if s.Descriptors != "" {
			return exitcode.BadInputf("cosmos.descriptors: %v", err)
		}
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%v (cosmos.descriptors)", err))
	}
	vals, err := sdk.Validators(ctx, tgt.ABCIQuery)
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the chain's validators, for {validator}: %v", err))
	}
	for i, k := range s.Messages {
		if err := codec.AddKind(k.Kind, specs[k.Kind], files, vals); err != nil {
			return exitcode.BadInputf("cosmos.messages[%d].%v", i, err)
		}
	}
	if len(s.Setup) > 0 {
		if err := codec.AddKind(sdk.SetupKind, specs[sdk.SetupKind], files, vals); err != nil {
			return exitcode.BadInputf("cosmos.setup%s", strings.TrimPrefix(err.Error(), "msgs"))
		}
	}
	return nil
}

// fund gives the senders their funds from workload.funder_key, unless the
// network's genesis funded them, or they hold funds and reuse_wallets is set.
func fund(ctx context.Context, sc *scenario.Scenario, tgt *sdk.Target, codec *sdk.Codec, prefix string, genesisFunded int, sys *kinds.System) error {
	log := sys.Log
	w := sc.Workload
	first, last := w.SendersOffset, w.SendersOffset+w.Senders-1
	if w.FunderKey == "" || last < genesisFunded {
		return nil
	}
	if w.ReuseWallets { // and resume a funding that was cut short
		funded := true
		for _, i := range []int{first, last} {
			b, err := sdk.Balance(ctx, tgt.ABCIQuery, codec.Wallet(i).Address, codec.Denom)
			funded = funded && err == nil && b >= w.FundAmount/2
		}
		if funded {
			return nil
		}
	}
	funder, err := sdk.ReadKeyFile(w.FunderKey, prefix)
	if err != nil {
		return exitcode.BadInputf("workload.funder_key: %v", err)
	}
	to := make([]int, 0, w.Senders)
	for i := first; i <= last; i++ {
		to = append(to, i)
	}
	start := time.Now()
	fmt.Fprintf(log, "funding %d wallets with %d%s each from %s\n", len(to), w.FundAmount, codec.Denom, funder.Address)
	err = sdk.Fund(ctx, codec, tgt.Target.Submitter(0), funder, to, w.FundAmount, w.ReuseWallets, kinds.FundProgress(log, start))
	if err != nil {
		if strings.HasPrefix(err.Error(), "workload.funder_key") {
			return exitcode.Wrap(exitcode.BadInput, err)
		}
		return exitcode.Wrap(exitcode.TargetFailed, err)
	}
	took := time.Since(start).Seconds()
	fmt.Fprintf(log, "funded %d wallets in %.1f s\n", len(to), took)
	if sys.Note != nil {
		sys.Note(fmt.Sprintf("funding: %d wallets with %d%s each from the funder key in %.1f s (%d multi-sends of up to %d; tpslab's Go memory %.0f MB)",
			len(to), w.FundAmount, codec.Denom, took, (len(to)+sdk.FundBatch-1)/sdk.FundBatch, sdk.FundBatch, kinds.GoMemoryMB()))
	}
	return nil
}

// DecodePayment reads a block's transaction as a bank payment (MsgSend or
// MsgMultiSend first), whoever signed it.
func (Kind) DecodePayment(tx []byte) (kinds.DecodedPayment, bool) {
	kind, from, to, amount, ok := sdk.DecodePayment(tx)
	return kinds.DecodedPayment{Kind: kind, Sender: from, Recipient: to, Amount: amount}, ok
}

// Capacities are the chain's block limits (its consensus parameters) and
// its nodes' mempools (a network tpslab started).
func (Kind) Capacities(ctx context.Context, sys *kinds.System, _ *scenario.Scenario) []report.Capacity {
	if len(sys.Endpoints) == 0 {
		return nil
	}
	return append(kinds.ConsensusCapacities(ctx, sys.Endpoints[0]), kinds.MempoolCapacities(sys)...)
}
