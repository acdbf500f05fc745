// Package builtin is the kind of tpslab's built-in reference network: real
// CometBFT validators running the ledger application (package chain), which
// tpslab starts, stops, emulates links for and injects faults into. Its
// target and workload are the CometBFT kind's.
package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/fault"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/cometbft"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"github.com/tpslab/tpslab/internal/testnet/kubenet"
)

// Kind is the built-in network.
type Kind struct{ cometbft.Kind }

// Info: links, faults, CometBFT's node metrics; given endpoints, it is
// measured as any CometBFT chain.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "builtin", MixKinds: []string{"multi_send"}, About: "the built-in reference ledger on CometBFT validators tpslab starts (the default)",
		Links: true, Faults: true, CometBFTMetrics: true, Kubernetes: true, Gossip: true, Recount: true, State: true, Remote: cometbft.Kind{}}
}

// Validate checks, for a network tpslab will start and fund, that the
// senders fit in network.accounts.
func (Kind) Validate(sc *scenario.Scenario) error {
	if most := chain.MaxTxBytes - chain.Size(chain.MaxChainIDLen, 0); sc.Workload.Kind == "payment" && sc.Workload.Padding > most {
		return fmt.Errorf("workload.padding: %d, expected at most %d bytes (the ledger refuses payments over %d bytes)", sc.Workload.Padding, most, chain.MaxTxBytes)
	}
	if sc.Target.NetHome == "" && len(sc.Target.Endpoints) == 0 {
		seed := sc.Network.Seed
		if seed == "" {
			seed = testnet.DefaultGenesis().Seed
		}
		accounts := sc.Network.Accounts // senders are genesis accounts, or wallets they fund
		if _, n, ok := kinds.LedgerWallets(sc, seed); ok {
			accounts = uint64(n)
		}
		if err := sc.CheckAccounts(accounts); err != nil {
			return err
		}
		return fault.Check(sc.Faults, planned(sc))
	}
	if sc.Target.NetHome != "" && len(sc.Faults) > 0 {
		if n, err := testnet.Load(sc.Target.NetHome); err == nil {
			return fault.Check(sc.Faults, n)
		} // else: the run says what is wrong with net_home
	}
	return nil
}

// planned is the network tpslab will start for sc, as far as faults need
// it: node names, and links (tpslab adds them when a fault needs them).
func planned(sc *scenario.Scenario) *testnet.Net {
	n := &testnet.Net{Home: "the network tpslab starts", Links: &testnet.Proxies{}}
	for _, name := range chainnet.PlannedNames(sc.Network.Validators, sc.Network.RPCNodes) {
		n.Nodes = append(n.Nodes, testnet.Node{Name: name})
	}
	return n
}

// StartNet starts the built-in network the scenario describes.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	g := testnet.DefaultGenesis()
	no := kinds.FromScenario(sc, o, "builtin", g.Seed, sc.Network.Accounts, g.Balance)
	if no.Binary == "" {
		no.Binary = o.Binary // its nodes are tpslab
	}
	return k.Up(ctx, no)
}

// NetDefaults: the options of SDK daemons (--denom, ...) are refused by
// the registry, as settings of a section this kind does not read.
func (Kind) NetDefaults(*kinds.NetOptions, func(string) bool) error { return nil }

// Up creates and starts the validators (and RPC nodes, links).
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	if o.ChainID == "" {
		o.ChainID = "tpslab"
	}
	opts := chainnet.Options{Kind: o.Kind, Validators: o.Validators, Home: o.Home, ChainID: o.ChainID,
		Genesis:  chain.Genesis{Seed: o.Seed, Accounts: o.Accounts, Balance: o.Balance, State: o.State},
		Settings: o.Settings, Bind: o.Bind, Reset: o.Reset, Binary: o.Binary, Owner: o.Owner,
		Topology: o.Topology, RPCNodes: o.RPCNodes, ClientLinks: o.ClientLinks}
	if err := opts.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if o.Kube != nil {
		k := *o.Kube
		k.Log = o.Log
		n, err := kubenet.Up(ctx, opts, k)
		if err != nil && strings.HasPrefix(err.Error(), "--") {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		return n, err
	}
	fmt.Fprintf(o.Log, "starting %d validators of the built-in ledger in %s\n", o.Validators, o.Home)
	if !o.ForRun {
		fmt.Fprintf(o.Log, "settings: %s\n", o.Settings)
	}
	if o.RPCNodes > 0 {
		fmt.Fprintf(o.Log, "and %d RPC nodes (full nodes that do not validate) that take the load\n", o.RPCNodes)
	}
	if o.Topology != "" {
		fmt.Fprintf(o.Log, "every P2P connection through an emulated link: topology %s\n", o.Topology)
	}
	if o.ClientLinks {
		fmt.Fprintln(o.Log, "and the load generator's connections to the nodes too")
	}
	if o.State == 0 {
		return chainnet.Up(ctx, opts)
	}
	fmt.Fprintf(o.Log, "pre-loading %d accounts beyond the %d funded (no keys; payments go to them too): each node writes them before its first block\n", o.State, o.Accounts)
	started := time.Now()
	n, err := chainnet.Up(ctx, opts)
	if err == nil {
		size, _ := testnet.DirBytes(filepath.Join(n.Nodes[0].Home, "data"))
		fmt.Fprintf(o.Log, "state: %d accounts on every node; node0's data directory %d MB, first block after %.0f s\n", o.Accounts+o.State, size>>20, time.Since(started).Seconds())
	}
	return n, err
}

// Status reads each node's CometBFT status.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus { return n.Status(ctx) }

// Check audits supply, balances and app hashes on every node.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit {
	r := n.Check(ctx)
	var a kinds.Audit
	names := make([]string, 0, len(r.Audits))
	for name := range r.Audits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		x := r.Audits[name]
		a.Lines = append(a.Lines, fmt.Sprintf("%s: height %d app_hash %s accounts %d supply %s", name, x.Height, x.AppHash, x.Accounts, x.Supply))
	}
	a.Problems, a.OK = r.Problems, "ok: supply conserved, balances in range, app hashes agree"
	return a
}

// DecodePayment reads a block's transaction as a ledger payment: sender and
// recipient as addresses (hex), whoever signed it (a batch: its first
// recipient and amount, as multi_send).
func (Kind) DecodePayment(tx []byte) (kinds.DecodedPayment, bool) {
	p, err := chain.Decode(tx)
	if err != nil {
		return kinds.DecodedPayment{}, false
	}
	kind := "send"
	if p.Batch() {
		kind = "multi_send"
	}
	return kinds.DecodedPayment{Kind: kind, Sender: chain.AddressOf(p.Sender).String(), Recipient: p.Recipient.String(), Amount: p.Amount}, true
}
