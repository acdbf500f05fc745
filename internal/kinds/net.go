package kinds

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"sort"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// NetOptions are what `tpslab net up` (and a run that starts its own
// network) says about a local network, for every kind.
type NetOptions struct {
	Kind       string // builtin | cosmos | evm | ledger
	Home       string
	Validators int
	ChainID    string // empty: the kind's default
	Seed       string // derives the funded accounts' keys (test keys)
	Accounts   uint64 // funded accounts (test wallets)
	Balance    uint64 // per account
	Settings   testnet.Settings
	Bind       string
	Reset      bool
	Binary     string        // the node program: tpslab itself (builtin) or an SDK daemon (cosmos; empty: tpsd, built when missing)
	Ledger     pgnet.Options // ledger: the database settings (its Home, Genesis, ... are set from the above)
	Denom      string        // cosmos: empty reads the daemon's
	Prefix     string        // cosmos: empty reads the daemon's
	Owner      *testnet.Owner
	Log        io.Writer
	Topology   string // builtin: emulated P2P links (netem.Topologies); empty: direct
	RPCNodes   int    // builtin: full nodes that take the load
	// ClientLinks: builtin: the load generator behind emulated links too.
	ClientLinks bool
}

// NetKinds are the kinds `net up` starts.
var NetKinds = []string{"builtin", "cosmos", "evm", "cosmos-evm", "ledger"}

// Up creates and starts a local network of o.Kind.
func Up(ctx context.Context, o NetOptions) (*testnet.Net, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Kind != "builtin" && (o.Topology != "" || o.RPCNodes > 0 || o.ClientLinks) {
		return nil, exitcode.BadInputf("--topology and --rpc-nodes: for --kind builtin only (not %s)", o.Kind)
	}
	switch o.Kind {
	case "builtin":
		if o.ChainID == "" {
			o.ChainID = "tpslab"
		}
		opts := testnet.Options{Validators: o.Validators, Home: o.Home, ChainID: o.ChainID,
			Genesis:  chain.Genesis{Seed: o.Seed, Accounts: o.Accounts, Balance: o.Balance},
			Settings: o.Settings, Bind: o.Bind, Reset: o.Reset, Binary: o.Binary, Owner: o.Owner,
			Topology: o.Topology, RPCNodes: o.RPCNodes, ClientLinks: o.ClientLinks}
		if err := opts.Validate(); err != nil {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		fmt.Fprintf(o.Log, "starting %d validators of the built-in ledger in %s\nsettings: %s\n", o.Validators, o.Home, o.Settings)
		if o.RPCNodes > 0 {
			fmt.Fprintf(o.Log, "and %d RPC nodes (full nodes that do not validate) that take the load\n", o.RPCNodes)
		}
		if o.Topology != "" {
			fmt.Fprintf(o.Log, "every P2P connection through an emulated link: topology %s\n", o.Topology)
		}
		if o.ClientLinks {
			fmt.Fprintln(o.Log, "and the load generator's connections to the nodes too")
		}
		return testnet.Up(ctx, opts)
	case "cosmos", "cosmos-evm":
		isEVM := o.Kind == "cosmos-evm"
		chainID, build, what := "tpslab-cosmos", sdknet.Tpsd, "SDK chain"
		if isEVM {
			chainID, build, what = "tpslab-evm", sdknet.Tpsevmd, "Cosmos EVM chain"
			if o.Balance == 0 {
				o.Balance = evmWalletBalance
			}
		}
		if o.ChainID == "" {
			o.ChainID = chainID
		}
		bin := o.Binary
		if bin == "" {
			var err error
			if bin, err = build(o.Log); err != nil {
				return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("tpslab's %s: %w", what, err))
			}
		}
		so := sdknet.Options{Binary: bin, Validators: o.Validators, Home: o.Home, ChainID: o.ChainID, Denom: o.Denom, Prefix: o.Prefix,
			WalletSeed: o.Seed, Wallets: int(o.Accounts), Balance: o.Balance, Settings: o.Settings, Bind: o.Bind, Reset: o.Reset, Owner: o.Owner, Log: o.Log,
			EVM: isEVM}
		if err := so.Validate(); err != nil {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		fmt.Fprintf(o.Log, "starting %d validators of %s in %s\nsettings: %s\n", o.Validators, bin, o.Home, o.Settings)
		return sdknet.Up(ctx, so)
	case "evm":
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
		return gethnet.Up(ctx, gethnet.Options{Binary: o.Binary, Home: o.Home, Period: period, GasLimit: gas, WalletSeed: o.Seed,
			Wallets: int(o.Accounts), Balance: balance, Bind: o.Bind, Reset: o.Reset, Owner: o.Owner, Log: o.Log})
	case "ledger":
		if o.ChainID == "" {
			o.ChainID = "tpslab"
		}
		lo := o.Ledger
		lo.Home, lo.ChainID, lo.Genesis, lo.Binary, lo.Bind, lo.Reset, lo.Owner, lo.Log = o.Home, o.ChainID,
			chain.Genesis{Seed: o.Seed, Accounts: o.Accounts, Balance: o.Balance}, o.Binary, o.Bind, o.Reset, o.Owner, o.Log
		if err := lo.Validate(); err != nil {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		fmt.Fprintf(o.Log, "starting the ledger service in %s: %d process(es), %d database connections each, batch %d, synchronous_commit %s, partition %s, isolation %s\n",
			o.Home, lo.Processes, lo.Connections, lo.Batch, lo.SynchronousCommit, lo.Partition, lo.Isolation)
		return pgnet.Up(ctx, lo)
	}
	return nil, exitcode.BadInputf("--kind: %q, expected one of %v", o.Kind, NetKinds)
}

// Status asks every node of a network for its state the way its kind
// allows. For the ledger, the database's HEIGHT is its payment count and
// PEERS its open connections.
func Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	switch n.Kind {
	case "ledger":
		return pgnet.Status(ctx, n)
	case "evm":
		return gethnet.Status(ctx, n)
	}
	return n.Status(ctx)
}

// Audit is what `net check` found: a line per node, and the problems.
type Audit struct {
	Lines    []string
	Problems []string
	OK       string // what a clean check means, for this kind
}

// Check audits a network's state the way its kind allows.
func Check(ctx context.Context, n *testnet.Net) Audit {
	switch n.Kind {
	case "ledger":
		lines, problems := pgnet.Check(ctx, n)
		return Audit{Lines: lines, Problems: problems, OK: "ok: supply conserved, every payment recorded once with a matching debit and credit, sequences gap-free"}
	case "evm":
		lines, problems := gethnet.Check(ctx, n)
		return Audit{Lines: lines, Problems: problems, OK: "ok: the node commits and its blocks link"}
	case "cosmos", "cosmos-evm":
		audits, problems := sdknet.Check(ctx, n)
		var a Audit
		for _, nd := range n.Nodes {
			if x, ok := audits[nd.Name]; ok {
				a.Lines = append(a.Lines, fmt.Sprintf("%s: height %d app_hash %s supply %s%s", nd.Name, x.Height, x.AppHash, x.Supply, n.Cosmos.Denom))
			}
		}
		a.Problems, a.OK = problems, "ok: supply of "+n.Cosmos.Denom+" conserved, app hashes agree"
		return a
	}
	r := n.Check(ctx)
	var a Audit
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
