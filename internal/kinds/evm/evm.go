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
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	eth "github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is an EVM chain.
type Kind struct{}

// RecountBlock re-counts an evidence line from the block's receipts at
// url (tpslab verify).
func (Kind) RecountBlock(ctx context.Context, url, chainID string, l report.EvidenceLine) (int64, []string, error) {
	return eth.Recount(ctx, url, chainID, l.Height, l.Hash, l.OK)
}

// Capacities: the block gas limit the latest block states, against the
// gas tpslab's payments used in each block (their receipts' gasUsed).
func (Kind) Capacities(ctx context.Context, sys *kinds.System, _ *scenario.Scenario) []report.Capacity {
	if len(sys.Endpoints) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := &eth.Client{URL: sys.Endpoints[0], HTTP: http.DefaultClient}
	n, err := c.BlockNumber(ctx)
	if err != nil {
		return nil
	}
	h, err := c.Block(ctx, n)
	if err != nil || h.GasLimit == 0 {
		return nil
	}
	return []report.Capacity{{Name: report.BlockGas, Class: report.CauseBlocks, Capacity: float64(h.GasLimit), Unit: "gas",
		From: "the latest block's gasLimit", Use: "blocks.gas", About: "blocks' gas (tpslab's payments)"}}
}

// walletWei is what each test wallet of a network tpslab starts holds: 10^21
// wei (1000 ether), plenty for gas and native transfers.
var walletWei = new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil)

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "evm", MixKinds: []string{"native", "erc20", "contract_call"}, About: "an EVM chain: geth in dev mode tpslab starts, or endpoints; native or ERC20 transfers, final k blocks deep", Faults: true, Links: true}
}

// Settings are an EVM chain's: the scenario's `evm:` section (the Cosmos
// EVM kind reads it too).
type Settings struct {
	// Depth is the confirmation depth k: a transaction is final when its
	// block is k blocks under the head (0: at inclusion).
	Depth int `yaml:"depth" json:"depth,omitempty"`
	// WSEndpoints are WebSocket URLs for new heads (default: polling).
	WSEndpoints []string `yaml:"ws_endpoints" json:"ws_endpoints,omitempty"`
	TxType      string   `yaml:"tx_type" json:"tx_type,omitempty"`           // dynamic (EIP-1559) | legacy
	MaxFee      string   `yaml:"max_fee" json:"max_fee,omitempty"`           // cap on the fee per gas (wei, or e.g. 30gwei); default none
	PriorityFee string   `yaml:"priority_fee" json:"priority_fee,omitempty"` // cap on the tip per gas
	// Contracts, deployed at set-up or found by address; Calls, their
	// functions as kinds of payment for workload.mix; Setup, calls made
	// before the load (docs/evm.md).
	Contracts []Contract `yaml:"contracts" json:"contracts,omitempty"`
	Calls     []Call     `yaml:"calls" json:"calls,omitempty"`
	Setup     []Call     `yaml:"setup" json:"setup,omitempty"`
}

// Settings are the defaults, in the section evm.
func (Kind) Settings() (string, any) { return "evm", &Settings{TxType: "dynamic"} }

// Moved: the settings were the target's and the workload's.
func (Kind) Moved() map[string]string {
	return map[string]string{"target.depth": "evm.depth", "target.ws_endpoints": "evm.ws_endpoints",
		"workload.tx_type": "evm.tx_type", "workload.max_fee": "evm.max_fee", "workload.priority_fee": "evm.priority_fee"}
}

// Flags set the section.
func (Kind) Flags() []kinds.Flag {
	return []kinds.Flag{
		{Name: "depth", Path: "evm.depth", Help: "evm: confirmation depth k (blocks under the head for finality)"},
		{Name: "tx-type", Path: "evm.tx_type", Help: "evm: dynamic (EIP-1559) | legacy"},
		{Name: "max-fee", Path: "evm.max_fee", Help: "evm: cap on the fee per gas, wei or e.g. 30gwei"},
		{Name: "priority-fee", Path: "evm.priority_fee", Help: "evm: cap on the tip per gas"},
	}
}

func settingsOf(sc *scenario.Scenario) *Settings { return kinds.SectionOf[Settings](sc, "evm") }

// Validate: EVM transactions go to eth_sendRawTransaction; the section's
// settings are checked.
func (Kind) Validate(sc *scenario.Scenario) error {
	return settingsOf(sc).validate()
}

func (s *Settings) validate() error {
	if s.Depth < 0 || s.Depth > 1000 {
		return fmt.Errorf("evm.depth: %d, expected 0..1000 blocks", s.Depth)
	}
	for i, e := range s.WSEndpoints {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return fmt.Errorf("evm.ws_endpoints[%d]: %q, expected a WebSocket URL such as ws://127.0.0.1:8546", i, e)
		}
	}
	if s.TxType != "dynamic" && s.TxType != "legacy" {
		return fmt.Errorf("evm.tx_type: %q, expected one of [dynamic legacy]", s.TxType)
	}
	for _, f := range []struct{ path, v string }{{"evm.max_fee", s.MaxFee}, {"evm.priority_fee", s.PriorityFee}} {
		if _, err := Wei(f.v); err != nil {
			return fmt.Errorf("%s: %q, expected wei or an amount such as 30gwei", f.path, f.v)
		}
	}
	return s.validateContracts()
}

// Wei reads an amount of wei: a number, or a number with wei, gwei or
// ether ("30gwei"); "" is none (nil).
func Wei(s string) (*big.Int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	mul := big.NewInt(1)
	for _, u := range []struct {
		unit string
		exp  int64
	}{{"gwei", 9}, {"ether", 18}, {"wei", 0}} {
		if v, ok := strings.CutSuffix(s, u.unit); ok {
			s, mul = v, new(big.Int).Exp(big.NewInt(10), big.NewInt(u.exp), nil)
			break
		}
	}
	f, ok := new(big.Float).SetString(strings.TrimSpace(s))
	if !ok || f.Sign() < 0 {
		return nil, fmt.Errorf("not an amount")
	}
	v, _ := new(big.Float).Mul(f, new(big.Float).SetInt(mul)).Int(nil)
	return v, nil
}

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
	if o.RPCNodes > 0 {
		return exitcode.BadInputf("--rpc-nodes: %d, expected 0: geth's dev mode is one node (its one emulated link, --topology, is tpslab's to it)", o.RPCNodes)
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
		Wallets: int(o.Accounts), Balance: balance, Bind: o.Bind, Reset: o.Reset, Owner: o.Owner, Log: o.Log, Topology: o.Topology, Links: o.Tpslab})
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
	es := settingsOf(sc)
	o := eth.Options{Endpoints: sys.Endpoints, WS: es.WSEndpoints, Depth: es.Depth, Connections: sc.Load.MostConnections()}
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
	if n := sys.Net; n != nil && gethnet.Of(n) != nil {
		if seed == "" || seed == gethnet.Of(n).WalletSeed {
			seed, funded = gethnet.Of(n).WalletSeed, gethnet.Of(n).Wallets
			if count == 0 {
				count = gethnet.Of(n).Wallets
			}
		}
		if funderKey == "" {
			funderKey = gethnet.Of(n).FunderKey
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
	es := settingsOf(sc)
	maxFee, _ := Wei(es.MaxFee)
	maxTip, _ := Wei(es.PriorityFee)
	fees, err := tgt.Fees(qctx, es.TxType == "legacy", maxFee, maxTip)
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
	needFunder := needToken || needNative || es.needsFunder()
	if needFunder {
		if funderKey == "" {
			return nil, exitcode.BadInputf("workload.funder_key: empty, expected a funded key (a file with a hex key, or env:NAME) to %s", map[bool]string{true: "deploy the ERC20 token", false: map[bool]string{true: "fund the senders", false: "deploy evm.contracts and make evm.setup's funder calls"}[needNative]}[needToken])
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
	codec.SetSenders(w.SendersOffset, w.Senders)
	if err := setUpContracts(ctx, sys, sc, codec, sub, funder); err != nil {
		return nil, err
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
