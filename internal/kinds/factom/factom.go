// Package factom is the kind of the Factom protocol's node, factomd
// (v6.17.1-2, built from its source): a LOCAL network tpslab starts, each
// node in a network namespace of its own. Payments are what the Factom TPS
// report counted: entries, new chains and factoid transactions, in
// MainNet's mix by default, each committed when a directory block holds
// it. See docs/factom.md.
package factom

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	fa "github.com/tpslab/tpslab/internal/targets/factom"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/factomnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is a Factom network.
type Kind struct{}

// Settings are the scenario's `factom:` section.
type Settings struct {
	// BlockTime is the seconds per directory block (factomd's -blktime;
	// MainNet's is 600).
	BlockTime int `yaml:"block_time" json:"block_time"`
	// Mix is the payments' mix when workload.mix names none: mainnet (the
	// report's: 99.1% entries, 0.7% new chains, 0.1% factoid
	// transactions) or entries.
	Mix string `yaml:"mix" json:"mix"`
	// EntryBytes is each entry's content size (1 entry credit pays up to
	// 1 KiB).
	EntryBytes int `yaml:"entry_bytes" json:"entry_bytes"`
	// Chains are the chains the run's entries go to, created before the
	// load.
	Chains int `yaml:"chains" json:"chains"`
	// EntryCredits each test wallet buys at net up.
	EntryCredits int64 `yaml:"entry_credits" json:"entry_credits"`
}

// RecountBlock re-counts an evidence line from the directory block at url
// (tpslab verify).
func (Kind) RecountBlock(ctx context.Context, url, _ string, l report.EvidenceLine) (int64, []string, error) {
	return fa.Recount(ctx, url, l.Height, l.Hash, l.OK)
}

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "factom", MixKinds: []string{"entry", "chain", "factoid"}, About: "Factom's factomd v6.17.1-2 (built from source): a LOCAL network, a namespace per node; entries, new chains and factoid transactions, committed in a directory block", Faults: true, Links: true}
}

// Settings are the defaults.
func (Kind) Settings() (string, any) {
	return "factom", &Settings{BlockTime: 10, Mix: "mainnet", EntryBytes: 200, Chains: 8, EntryCredits: 100_000}
}

func settingsOf(sc *scenario.Scenario) *Settings { return kinds.SectionOf[Settings](sc, "factom") }

// Flags set the section.
func (Kind) Flags() []kinds.Flag {
	return []kinds.Flag{
		{Name: "block-time", Path: "factom.block_time", Help: "factom: seconds per directory block (factomd -blktime)", NetUp: true},
		{Name: "factom-mix", Path: "factom.mix", Help: "factom: mainnet (99.1% entries, 0.7% new chains, 0.1% factoid transactions) | entries, when workload.mix names none"},
		{Name: "entry-bytes", Path: "factom.entry_bytes", Help: "factom: each entry's content bytes"},
		{Name: "entry-credits", Path: "factom.entry_credits", Help: "factom: entry credits each test wallet buys at net up", NetUp: true},
	}
}

func (s *Settings) validate() error {
	switch {
	case s.BlockTime < 2 || s.BlockTime > 600:
		return fmt.Errorf("factom.block_time: %d, expected 2..600 seconds per directory block", s.BlockTime)
	case s.Mix != "mainnet" && s.Mix != "entries":
		return fmt.Errorf("factom.mix: %q, expected one of [mainnet entries]", s.Mix)
	case s.EntryBytes < 1 || s.EntryBytes > 10_000:
		return fmt.Errorf("factom.entry_bytes: %d, expected 1..10000 (an entry holds at most 10 KiB)", s.EntryBytes)
	case s.Chains < 1 || s.Chains > 1000:
		return fmt.Errorf("factom.chains: %d, expected 1..1000", s.Chains)
	case s.EntryCredits < 100 || s.EntryCredits > 10_000_000:
		return fmt.Errorf("factom.entry_credits: %d, expected 100..10000000 per wallet", s.EntryCredits)
	}
	return nil
}

// Validate: payments of Factom's kinds.
func (Kind) Validate(sc *scenario.Scenario) error {
	if sc.Workload.Kind != "payment" {
		return fmt.Errorf("workload.kind: %q, expected payment (entries, new chains and factoid transactions)", sc.Workload.Kind)
	}
	for i, m := range sc.Workload.Mix {
		if m.Kind != fa.KindEntry && m.Kind != fa.KindChain && m.Kind != fa.KindFactoid {
			return fmt.Errorf("workload.mix[%d].kind: %q, expected one of [entry chain factoid] for factom", i, m.Kind)
		}
	}
	return settingsOf(sc).validate()
}

// Mainnet is the Factom TPS report's MainNet mix.
var Mainnet = []workload.Mix{{Kind: fa.KindEntry, Weight: 99.1}, {Kind: fa.KindChain, Weight: 0.7}, {Kind: fa.KindFactoid, Weight: 0.1}}

// Target is factomd's API on every node.
func (Kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	urls := append([]string(nil), sys.Endpoints...)
	if n := sys.Net; n != nil {
		urls = urls[:0]
		for _, nd := range n.Nodes {
			urls = append(urls, nd.RPC)
		}
	}
	if len(urls) == 0 {
		return nil, exitcode.BadInputf("target.endpoints: none, expected a factom network (--net-home)")
	}
	return fa.NewTarget(urls, sc.Load.MostConnections()), nil
}

// Workload creates the run's chains and signs from the wallets the
// network funded.
func (Kind) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*fa.Target)
	s := settingsOf(sc)
	var f *factomnet.Factom
	if sys.Net != nil {
		f = factomnet.Of(sys.Net)
	}
	if f == nil {
		return nil, exitcode.BadInputf("target: not a factom network tpslab started, expected --net-home of `net up --kind factom`")
	}
	cfg := kinds.PaymentsConfig(sc)
	if cfg.Offset+cfg.Senders > f.Wallets {
		return nil, exitcode.BadInputf("workload.senders: %d, expected at most the %d test wallets of the network (net up --accounts)", cfg.Offset+cfg.Senders, f.Wallets)
	}
	codec := &fa.Codec{Rate: f.ECRate, Run: fmt.Sprintf("%d-%d", sc.Seed, time.Now().UnixNano()), Content: s.EntryBytes}
	for i := 0; i < f.Wallets; i++ {
		codec.EC = append(codec.EC, fa.ECWallet(f.WalletSeed, i))
		codec.FA = append(codec.FA, fa.FactoidWallet(f.WalletSeed, i))
	}
	start := time.Now()
	chains, err := fa.CreateChains(ctx, tgt.Client(0), codec.EC[0], codec.Run, s.Chains, time.Duration(3*f.BlockTime+30)*time.Second)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	codec.Chains = chains
	sys.Tell(fmt.Sprintf("factom: %d chains for the run's entries, in a directory block after %.1f s", len(chains), time.Since(start).Seconds()))
	if len(cfg.Mix) == 0 && s.Mix == "mainnet" {
		cfg.Mix = Mainnet
	}
	if sys.AtEnd != nil {
		sys.AtEnd(func() []string { return nil })
	}
	p, err := workload.NewPayments(ctx, cfg, codec)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}

// StartNet starts a network for a run.
func (k Kind) StartNet(ctx context.Context, sc *scenario.Scenario, o kinds.StartOptions) (*testnet.Net, error) {
	no := kinds.FromScenario(sc, o, "factom", "tpslab", uint64(max(sc.Network.Accounts, uint64(sc.Workload.SendersOffset+sc.Workload.Senders))), 0)
	if sc.Network.Validators == 0 {
		no.Validators = 1
	}
	return k.Up(ctx, no)
}

// NetDefaults: one node unless set; the CometBFT settings do not apply.
func (Kind) NetDefaults(o *kinds.NetOptions, changed func(string) bool) error {
	if !changed("validators") {
		o.Validators = 1
	}
	for _, f := range []string{"rpc-nodes", "client-links", "bind"} {
		if changed(f) {
			return exitcode.BadInputf("--%s: not for factom (its nodes each have a namespace and an address on a host-only bridge; docs/factom.md)", f)
		}
	}
	return exitcode.Wrap(exitcode.BadInput, settingsOf(o.Scenario).validate())
}

// Up builds factomd when needed and starts the nodes.
func (Kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	s := settingsOf(o.Scenario)
	if err := s.validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if o.Validators < 1 || o.Validators > 32 {
		return nil, exitcode.BadInputf("--validators: %d, expected 1..32 factomd nodes (node0 leads, the others follow)", o.Validators)
	}
	wallets := int(o.Accounts)
	if wallets < 1 || wallets > 100_000 {
		return nil, exitcode.BadInputf("--accounts: %d, expected 1..100000 test wallets", wallets)
	}
	// The LOCAL funder pays every wallet: 10,000 wallets at 1 FCT of
	// entry credits and 1 FCT each ran it dry at wallet 9,960.
	budget := factomnet.LocalFunds / 10 * 9 // a tenth kept for the fees
	ecCost := int64(wallets) * s.EntryCredits * factomnet.LocalECRate
	if ecCost > budget {
		return nil, exitcode.BadInputf("--accounts: %d wallets of %d entry credits (factom.entry_credits), expected at most %d: the LOCAL network's prefunded address holds %d FCT, an entry credit costs %d factoshis",
			wallets, s.EntryCredits, budget/(s.EntryCredits*factomnet.LocalECRate), factomnet.LocalFunds/100_000_000, factomnet.LocalECRate)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	fmt.Fprintf(o.Log, "starting %s in %s: %d node(s), a directory block every %d s, %d test wallets\n", factomnet.Version, o.Home, o.Validators, s.BlockTime, wallets)
	return factomnet.Up(ctx, factomnet.Options{Kind: o.Kind, Binary: o.Binary, Home: o.Home, Nodes: o.Validators, BlockTime: s.BlockTime,
		WalletSeed: o.Seed, Wallets: wallets, EntryCredits: s.EntryCredits, Factoshis: min(100_000_000, (budget-ecCost)/int64(wallets)),
		Topology: o.Topology, Links: o.Tpslab, Reset: o.Reset, Owner: o.Owner, Log: o.Log})
}

// Status asks every node its directory block height.
func (Kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	return factomnet.Status(ctx, n)
}

// Check audits the nodes' agreement.
func (Kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit {
	lines, problems := factomnet.Check(ctx, n)
	return kinds.Audit{Lines: lines, Problems: problems, OK: "ok: every node holds the same directory blocks, entries and entry-credit balances"}
}

// heightHTTP answers within the health watch's second.
var heightHTTP = &http.Client{Timeout: 800 * time.Millisecond}

// Height is the node's saved directory block height, for the health watch.
func (Kind) Height(ctx context.Context, n testnet.Node) (int64, error) {
	h, err := (&fa.Client{URL: n.RPC + "/v2", HTTP: heightHTTP}).Heights(ctx)
	return h.DirectoryBlock, err
}

// p2pMetrics are factomd's own P2P counters, summed over the nodes.
var p2pMetrics = []telemetry.PromMetric{
	{Family: "factomd_p2p_messages_sent", Metric: telemetry.Metric{Name: "factom.p2p_messages_sent", Unit: "1/s", Rate: true, PerPayment: true, Help: "application messages the nodes sent to peers (factomd's P2P counter)"}},
	{Family: "factomd_p2p_parcels_sent", Metric: telemetry.Metric{Name: "factom.p2p_parcels_sent", Unit: "1/s", Rate: true, PerPayment: true, Help: "P2P parcels the nodes sent, the library's own messages included"}},
	{Family: "factomd_p2p_parcels_received", Metric: telemetry.Metric{Name: "factom.p2p_parcels_received", Unit: "1/s", Rate: true, Help: "P2P parcels the nodes received"}},
	{Family: "factomd_p2p_dropped_peer_send", Metric: telemetry.Metric{Name: "factom.p2p_dropped_sends", Unit: "1/s", Rate: true, Better: "lower", Help: "parcels the nodes could not send for a peer's lack of bandwidth"}},
	{Family: "factomd_p2p_dropped_from_network", Metric: telemetry.Metric{Name: "factom.p2p_dropped_received", Unit: "1/s", Rate: true, Better: "lower", Help: "parcels dropped because factomd did not read them fast enough"}},
}

// Telemetry reads factomd's P2P counters from every node's Prometheus page
// (port 9876 in its namespace).
func (Kind) Telemetry(_ context.Context, sys *kinds.System) ([]telemetry.Source, error) {
	if sys.Net == nil || fa.NoProbes {
		return nil, nil
	}
	var urls []string
	for _, nd := range sys.Net.Nodes {
		urls = append(urls, nd.Metrics)
	}
	return []telemetry.Source{telemetry.NewPrometheus(urls, p2pMetrics)}, nil
}

// Units are the Factom TPS report's: EPS counts entries, new chains and
// factoid transactions; an entry or a new chain is two transactions (its
// commit and its reveal), a factoid transaction one; each transaction is
// two messages (it and its acknowledgement). With emulated links, the P2P
// bytes each committed entry cost on a link.
func (Kind) Units(s *report.Summary) []string {
	// Every payment is one EPS; the kinds' rates are their shares of the
	// headline's committed/s (without a mix, every payment an entry).
	eps := s.CommittedTPS
	e, c, f := eps, 0.0, 0.0
	if len(s.ByKind) > 0 {
		e, c, f = s.ByKind[fa.KindEntry].CommittedTPS, s.ByKind[fa.KindChain].CommittedTPS, s.ByKind[fa.KindFactoid].CommittedTPS
	}
	tps := 2*(e+c) + f
	out := []string{fmt.Sprintf("factom: %s EPS committed (entries %s, new chains %s, factoid transactions %s) = %s TPS = %s MPS, as the Factom TPS report counts them",
		num(eps), num(e), num(c), num(f), num(tps), num(2*tps))}
	if len(s.Links) > 0 && eps > 0 {
		var sum, most float64
		name := ""
		for _, l := range s.Links {
			sum += l.BytesPerS
			if l.BytesPerS >= most {
				most, name = l.BytesPerS, l.Name
			}
		}
		out = append(out, fmt.Sprintf("factom: P2P bytes per committed entry: %s per link on average over %d links, %s on the busiest (%s)",
			num(sum/float64(len(s.Links))/eps), len(s.Links), num(most/eps), name))
	}
	if m, ok := s.Telemetry["factom.p2p_messages_sent"]; ok && eps > 0 && m.Mean > 0 {
		p, _ := s.Telemetry["factom.p2p_parcels_sent"]
		out = append(out, fmt.Sprintf("factom: the nodes' own P2P counters: %s messages sent per committed entry (%s parcels with the library's own), all nodes together",
			num(m.Mean/eps), num(p.Mean/eps)))
	}
	return out
}

// num is a figure as the first screen writes it: whole above 100, else one
// decimal.
func num(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// Capacities: the directory block interval the network was started with
// (factomd -blktime): gaps and halts are weighed against it.
// A scenario that asked for another interval is told it was set aside
// (the network was made with its own; issue 64).
func (Kind) Capacities(_ context.Context, sys *kinds.System, sc *scenario.Scenario) []report.Capacity {
	if sys.Net == nil {
		return nil
	}
	f := factomnet.Of(sys.Net)
	if f == nil || f.BlockTime <= 0 {
		return nil
	}
	if sc != nil && sys.Note != nil && settingsOf(sc).BlockTime != f.BlockTime {
		sys.Note(fmt.Sprintf("factom.block_time %d was set aside: the network in %s makes a directory block every %d s (factomd -blktime=%d)", settingsOf(sc).BlockTime, sys.Net.Home, f.BlockTime, f.BlockTime))
	}
	return []report.Capacity{{Name: report.BlockInterval, Class: report.CauseHalt, Capacity: float64(f.BlockTime), Unit: "s",
		From: fmt.Sprintf("factomd -blktime=%d", f.BlockTime), About: "the directory block interval", Relax: "factom.block_time", RelaxBy: 0.5}}
}
