package kinds

import (
	"io"

	"github.com/tpslab/tpslab/internal/testnet/kubenet"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// NetOptions are what `tpslab net up` (and a run that starts its own
// network) says about a local network, for every kind.
type NetOptions struct {
	Kind       string // a registered kind with a Network; empty: the default
	Home       string
	Validators int
	ChainID    string // empty: the kind's default
	Seed       string // derives the funded accounts' keys (test keys)
	Accounts   uint64 // funded accounts (test wallets)
	Balance    uint64 // per account
	State      uint64 // pre-loaded accounts beyond the funded ones (Info.State)
	Settings   testnet.Settings
	Bind       string
	Reset      bool
	Binary     string // the node program: tpslab itself (builtin) or an SDK daemon (cosmos; empty: tpsd, built when missing)
	Owner      *testnet.Owner
	Log        io.Writer
	Topology   string // emulated P2P links (netem.Topologies); empty: direct
	RPCNodes   int    // full nodes that take the load
	// ClientLinks: the load generator behind emulated links too.
	ClientLinks bool
	// Tpslab is the tpslab program for what runs beside the nodes (the
	// links), where the nodes are not tpslab; empty: this process's own.
	Tpslab string
	// Kube, when set, starts the network as pods on Kubernetes (builtin).
	Kube *kubenet.Options
	// ForRun: a run starts the network for itself; its settings are in
	// result.json, so the kind leaves the settings line out of the run's
	// first screen.
	ForRun bool
	// Scenario is the scenario the options came from: a kind reads its
	// own section of it (SectionOf).
	Scenario *scenario.Scenario
}

// withLog is o with a writer for its progress lines.
func (o NetOptions) withLog() NetOptions {
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// NetFromScenario is the network the scenario's network section describes:
// the one front door of `net up` (its flags set that section) and of a run
// that starts its network. Seed, accounts and balance are the kind's given
// ones unless the section names them.
func NetFromScenario(sc *scenario.Scenario, kind, seed string, accounts, balance uint64) NetOptions {
	nw := sc.Network
	st := testnet.Settings{TimeoutCommit: nw.TimeoutCommit.D(), TimeoutPropose: nw.TimeoutPropose.D(), MempoolSize: nw.MempoolSize,
		MempoolMaxBytes: nw.MempoolMaxBytes, MempoolCacheSize: nw.MempoolCacheSize, MaxBlockBytes: nw.MaxBlockBytes,
		MaxBlockGas: nw.MaxBlockGas, CreateEmptyBlocks: nw.CreateEmptyBlocks, LogLevel: nw.LogLevel, MempoolLog: nw.GossipStage}
	if nw.Seed != "" {
		seed = nw.Seed
	}
	if nw.Balance != 0 {
		balance = nw.Balance
	}
	return NetOptions{Kind: kind, Validators: nw.Validators, ChainID: nw.ChainID, Seed: seed, Accounts: accounts, Balance: balance, State: nw.State,
		Settings: st, Bind: nw.Bind, Binary: nw.Binary,
		Topology: nw.Topology, RPCNodes: nw.RPCNodes, ClientLinks: nw.ClientLinks,
		Scenario: sc}
}

// FromScenario is the network a scenario describes, for a run that starts
// it: seed, accounts and balance are the kind's unless the scenario names
// them; the node program is ab's (NodeBinary), else network.binary, else
// the kind's own (empty; kinds whose nodes are tpslab use o.Binary).
func FromScenario(sc *scenario.Scenario, o StartOptions, kind, seed string, accounts, balance uint64) NetOptions {
	no := NetFromScenario(sc, kind, seed, accounts, balance)
	for _, f := range sc.Faults {
		if f.NeedsLinks() && no.Topology == "" {
			no.Topology = "loopback" // proxied links, nothing added: faults can cut them
		}
	}
	no.Home, no.Reset, no.Owner, no.Log, no.Tpslab, no.ForRun = o.Home, true, o.Owner, o.Log, o.Binary, true
	if o.NodeBinary != "" {
		no.Binary = o.NodeBinary
	}
	return no
}

// PaymentsConfig is the payment lanes' settings a scenario gives, for every
// kind that sends signed payments.
func PaymentsConfig(sc *scenario.Scenario) workload.PaymentsConfig {
	w := sc.Workload
	c := workload.PaymentsConfig{Senders: w.Senders, Offset: w.SendersOffset, Window: w.Window,
		Amount: workload.Amount(w.Amount), SenderChoice: workload.Choice(w.SenderChoice),
		RecipientChoice: workload.Choice(w.RecipientChoice), Seed: sc.Seed,
		Invalid: workload.Invalid{Share: w.Invalid.Share, Sorts: w.Invalid.Sorts}, Mix: mixOf(w.Mix)}
	if sc.Load.Model == scenario.Open {
		c.Trace, _ = sc.Load.ReadTrace() // read and checked when the scenario was
		if sg := sc.Load.Segment; sg != nil {
			c.TraceSeg, c.TraceSegs = sg.Index, sg.Count
		}
	}
	return c
}

// mixOf is the scenario's mix for the workload.
func mixOf(m []scenario.MixEntry) []workload.Mix {
	var out []workload.Mix
	for _, e := range m {
		n := e.Outputs
		if e.Kind == "multi_send" && n == 0 {
			n = 5
		}
		out = append(out, workload.Mix{Kind: e.Kind, Weight: e.Weight, Outputs: n})
	}
	return out
}

// LedgerGenesis applies the scenario's overrides (workload.chain_id,
// genesis_seed, accounts) to the built-in ledger's genesis a kind read,
// and checks the senders fit in its accounts: every kind that signs the
// ledger's payments.
func LedgerGenesis(sc *scenario.Scenario, chainID string, g chain.Genesis) (string, chain.Genesis, error) {
	w := sc.Workload
	if w.ChainID != "" {
		chainID = w.ChainID
	}
	if w.GenesisSeed != "" {
		g.Seed = w.GenesisSeed
	}
	if _, _, wallets := LedgerWallets(sc, g.Seed); wallets {
		return chainID, g, nil // workload.accounts counts the wallets, funded before the load
	}
	if w.Accounts != 0 {
		g.Accounts = w.Accounts
	}
	if err := sc.CheckAccounts(g.Accounts); err != nil {
		return "", g, exitcode.Wrap(exitcode.BadInput, err)
	}
	return chainID, g, nil
}
