// Package evm is the kind of EVM chains: a geth dev node tpslab starts, a
// network `net up --kind evm` started, or any EVM chain by endpoint.
// Payments are native value transfers, or ERC20 transfers (workload.kind
// erc20) of a token deployed at setup. The Cosmos EVM kind reuses its
// target and workload.
package evm

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	eth "github.com/tpslab/tpslab/internal/sut/evm"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is an EVM chain.
type Kind struct{}

// walletWei is what each test wallet of a network tpslab starts holds: 10^21
// wei (1000 ether), plenty for gas and native transfers.
var walletWei = new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil)

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "evm", About: "an EVM chain: geth in dev mode tpslab starts, or endpoints; native or ERC20 transfers, final k blocks deep"}
}

// Validate: EVM transactions go to eth_sendRawTransaction.
func (Kind) Validate(sc *scenario.Scenario) error { return kinds.ViaRPC(sc, "evm") }

// StartNet starts a geth dev node.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	no := kinds.FromScenario(sc, o, "evm", WalletSeed(sc), Wallets(sc), 0)
	return k.Up(ctx, no)
}

// WalletSeed is the seed of the test wallets a network tpslab starts funds.
func WalletSeed(sc *scenario.Scenario) string {
	if sc.Workload.WalletSeed != "" {
		return sc.Workload.WalletSeed
	}
	return "tpslab"
}

// Wallets is how many test wallets a network tpslab starts funds.
func Wallets(sc *scenario.Scenario) uint64 {
	return max(sc.Network.Accounts, uint64(sc.Workload.SendersOffset+sc.Workload.Senders))
}

// NetDefaults: one node (dev mode), and the kind's balance (1000 ether)
// unless set.
func (Kind) NetDefaults(o *kinds.NetOptions, changed func(string) bool) error {
	if !changed("validators") {
		o.Validators = 1
	}
	if !changed("balance") {
		o.Balance = 0
	}
	return nil
}

// Up starts geth in dev mode.
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	if o.Validators != 1 {
		return nil, exitcode.BadInputf("--validators: %d, expected 1: geth's dev mode is a single block-producing node", o.Validators)
	}
	balance := walletWei
	if o.Balance > 0 {
		balance = new(big.Int).SetUint64(o.Balance)
	}
	gas := uint64(150_000_000)
	if o.Settings.MaxBlockGas > 0 {
		gas = uint64(o.Settings.MaxBlockGas)
	}
	period := o.Settings.TimeoutCommit
	if period < time.Second {
		period = time.Second // dev mode's period is whole seconds
	}
	fmt.Fprintf(o.Log, "starting geth %s in dev mode in %s (a block every %s, block gas limit %d)\n", gethnet.Version, o.Home, period, gas)
	return gethnet.Up(ctx, gethnet.Options{Kind: o.Kind, Binary: o.Binary, Home: o.Home, Period: period, GasLimit: gas, WalletSeed: o.Seed,
		Wallets: int(o.Accounts), Balance: balance, Bind: o.Bind, Reset: o.Reset, Owner: o.Owner, Log: o.Log})
}

// Status asks the node for its head.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	return gethnet.Status(ctx, n)
}

// Check: the node commits and its blocks link.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit {
	lines, problems := gethnet.Check(ctx, n)
	return kinds.Audit{Lines: lines, Problems: problems, OK: "ok: the node commits and its blocks link"}
}

// Target is the EVM target on the endpoints (and WebSocket URLs) given or
// in net.json.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	if t.Via != "rpc" {
		return nil, exitcode.BadInputf("target.via: %q, expected rpc: EVM transactions go to eth_sendRawTransaction", t.Via)
	}
	o := eth.Options{Endpoints: sys.Endpoints, WS: t.WSEndpoints, Depth: t.Depth, Connections: sc.Load.Connections}
	if n := sys.Net; n != nil {
		o.WS = nil
		for _, nd := range n.Nodes {
			if nd.WS != "" {
				o.WS = append(o.WS, nd.WS)
			}
		}
	}
	if t.Confirm == "poll" {
		o.WS = nil
	}
	tgt, err := eth.New(o)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload derives the wallets, reads the fees, deploys the token for
// erc20, funds what the network did not, and reads the nonces.
func (Kind) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*eth.Target)
	w := sc.Workload
	if w.Kind != "payment" && w.Kind != "erc20" {
		return nil, exitcode.BadInputf("workload.kind: %q, expected payment (native transfers) or erc20 for an EVM chain", w.Kind)
	}
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	info, err := tgt.Probe(qctx)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %s does not answer: %w", strings.Join(sys.Endpoints, ", "), err))
	}
	if w.ChainID != "" && w.ChainID != info.ChainID {
		return nil, exitcode.BadInputf("workload.chain_id: %q, but the node at %s is on chain %s", w.ChainID, sys.Endpoints[0], info.ChainID)
	}
	chainID, _ := new(big.Int).SetString(info.ChainID, 10)
	seed, count, funderKey := w.WalletSeed, int(w.Accounts), w.FunderKey
	funded := 0
	if n := sys.Net; n != nil && n.EVM != nil {
		if seed == "" || seed == n.EVM.WalletSeed {
			seed, funded = n.EVM.WalletSeed, n.EVM.Wallets
			if count == 0 {
				count = n.EVM.Wallets
			}
		}
		if funderKey == "" {
			funderKey = n.EVM.FunderKey
		}
	}
	if seed == "" {
		seed = "tpslab"
	}
	if count == 0 {
		count = max(w.SendersOffset+w.Senders, 2)
	}
	if err := sc.CheckAccounts(uint64(count)); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	maxFee, _ := scenario.Wei(w.MaxFee)
	maxTip, _ := scenario.Wei(w.PriorityFee)
	fees, err := tgt.Fees(qctx, w.TxType == "legacy", maxFee, maxTip)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("read the fees: %w", err))
	}
	// Each kind of payment takes its own gas unless workload.gas says.
	nativeGas, callGas := uint64(21_000), uint64(100_000)
	if w.Gas != 0 {
		nativeGas, callGas = w.Gas, w.Gas
	}
	gas := nativeGas
	if w.Kind == "erc20" {
		gas = callGas
	}
	wallets := eth.DeriveWallets(seed, count)
	codec := eth.NewCodec(chainID, nil, gas, fees, wallets, tgt.Client())
	// A mix's erc20 and contract_call kinds need the token too.
	needToken := w.Kind == "erc20"
	for _, m := range w.Mix {
		needToken = needToken || m.Kind == "erc20" || m.Kind == "contract_call"
	}
	first, last := w.SendersOffset, w.SendersOffset+w.Senders-1
	var funder eth.Wallet
	needNative := last >= funded && !(w.ReuseWallets && holds(ctx, tgt, wallets, first, last, new(big.Int).SetUint64(w.FundAmount/2)))
	if needToken || needNative {
		if funderKey == "" {
			return nil, exitcode.BadInputf("workload.funder_key: empty, expected a funded key (a file with a hex key, or env:NAME) to %s", map[bool]string{true: "deploy the ERC20 token", false: "fund the senders"}[needToken])
		}
		if funder, err = eth.ReadKey(funderKey); err != nil {
			return nil, exitcode.BadInputf("workload.funder_key: %v", err)
		}
	}
	sub := tgt.Submitter(0)
	to := make([]int, 0, w.Senders)
	for i := first; i <= last; i++ {
		to = append(to, i)
	}
	if needNative {
		fmt.Fprintf(sys.Log, "funding %d wallets with %d wei each from %s\n", len(to), w.FundAmount, funder.Address.Hex())
		if err := eth.Fund(ctx, codec, sub, funder, to, new(big.Int).SetUint64(w.FundAmount), nil, nil); err != nil {
			return nil, fundErr(err)
		}
	}
	var token *common.Address
	if needToken {
		supply := new(big.Int).Mul(big.NewInt(int64(w.Senders)), new(big.Int).SetUint64(w.FundAmount))
		start := time.Now()
		addr, err := eth.Deploy(ctx, codec, sub, funder, supply)
		if err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
		if err := eth.Fund(ctx, codec, sub, funder, to, new(big.Int), &addr, new(big.Int).SetUint64(w.FundAmount)); err != nil {
			return nil, fundErr(err)
		}
		fmt.Fprintf(sys.Log, "deployed the ERC20 token at %s and gave %d senders %d tokens each in %.1f s\n", addr.Hex(), len(to), w.FundAmount, time.Since(start).Seconds())
		token = &addr
	}
	if w.Kind == "erc20" {
		codec = eth.NewCodec(chainID, token, gas, fees, wallets, tgt.Client())
	}
	codec.MixToken, codec.NativeGas, codec.CallGas = token, nativeGas, callGas
	p, err := workload.NewPayments(ctx, kinds.PaymentsConfig(sc), codec)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}

func fundErr(err error) error {
	if strings.HasPrefix(err.Error(), "workload.funder_key") {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	return exitcode.Wrap(exitcode.TargetFailed, err)
}

// holds says wallets first and last hold at least min wei.
func holds(ctx context.Context, tgt *eth.Target, wallets []eth.Wallet, first, last int, min *big.Int) bool {
	for _, i := range []int{first, last} {
		b, err := tgt.Client().Balance(ctx, wallets[i].Address.Hex())
		if err != nil || b.Cmp(min) < 0 {
			return false
		}
	}
	return true
}
