// Package kinds is the seam between tpslab and the kinds of system it
// measures: a Kind connects a target and a workload to a system, and
// declares, in this file, every optional capability the rest of tpslab
// looks for. Each kind lives in a folder of its own below this one and is
// named in one place only: the registration list in kinds/all.
package kinds

import (
	"context"
	"fmt"
	"io"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is one kind of system under test.
type Kind interface {
	// Info names the kind and says what it can do.
	Info() Info
	// Validate checks what the scenario says for this kind, once the
	// scenario's own checks passed: a one-line error naming the field.
	Validate(sc *scenario.Scenario) error
	// Target builds the target for sys; it does not contact it.
	Target(sys *System, sc *scenario.Scenario) (sut.Target, error)
	// Workload builds the workload that drives tgt (reading what it needs
	// from the system: accounts, sequences).
	Workload(ctx context.Context, sys *System, sc *scenario.Scenario, tgt sut.Target) (workload.Workload, error)
}

// Info is a kind's name and the features it declares.
type Info struct {
	Name  string // as target.kind and net.json give it
	About string // one line, for --help and the docs' tables
	// MixKinds are the kinds of payment besides send that workload.mix
	// may name (a Mixer adds the scenario's own).
	MixKinds []string
	// Links: its local networks take emulated topologies, RPC nodes and
	// client links (network.topology, --rpc-nodes, --client-links).
	Links bool
	// Faults: its local networks take scheduled faults on their processes
	// (crash, pause); those on links (partition, delay, bandwidth) need
	// Links too.
	Faults bool
	// Kubernetes: `net up --kubeconfig` starts its networks as pods.
	Kubernetes bool
	// Gossip: its runs time the gossiped stage (when a payment reached a
	// second node's mempool) on the networks tpslab starts.
	Gossip bool
	// Recount: its payments are CometBFT transactions (ids the SHA-256 of
	// their bytes), so tpslab verify re-counts them from /block and
	// /block_results (docs/results.md).
	Recount bool
	// CometBFTMetrics: its nodes serve CometBFT's Prometheus page, read as
	// node telemetry.
	CometBFTMetrics bool
	// State: its local networks take pre-loaded state (network.state, net
	// up --state): accounts beyond the funded ones, payments drawn to them.
	State bool
	// Remote, when set, is the kind the scenario is measured as when it
	// names endpoints instead of a network to start (the built-in ledger's
	// endpoints are a CometBFT chain's).
	Remote Kind
}

// Optional capabilities, found by type assertion.

// Starter is a kind tpslab can start a fresh local network of, for a run
// that names no endpoints and no net_home.
type Starter interface {
	StartNet(ctx context.Context, sc *scenario.Scenario, o StartOptions) (*testnet.Net, error)
}

// Network is a kind whose local networks `tpslab net` starts, inspects and
// audits.
type Network interface {
	// NetDefaults adjusts the `net up` options the user did not set
	// (changed tells which were set), and refuses those the kind does not
	// take.
	NetDefaults(o *NetOptions, changed func(option string) bool) error
	// Up creates and starts a local network.
	Up(ctx context.Context, o NetOptions) (*testnet.Net, error)
	// Status asks every node for its state the way the kind allows.
	Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus
	// Check audits the network's state (`net check`, and after a run with
	// faults).
	Check(ctx context.Context, n *testnet.Net) Audit
}

// Configured is a kind with settings of its own: a section of the
// scenario named by the kind (`<kind>: {...}` in the file), decoded, set by
// flags (`--set <kind>.field=...`) and refused when unknown like the
// scenario's own fields. The kind checks it in Validate and reads it with
// SectionOf.
type Configured interface {
	// Settings names the section (the kind's name, or its family's when
	// kinds share one: cosmos-evm reads evm's) and returns a fresh pointer
	// to a struct of its settings holding their defaults; the fields' yaml
	// tags name them.
	Settings() (section string, defaults any)
}

// Service is a kind whose local networks are services, not chains: no
// validators or blocks; a result states the service's own settings.
type Service interface {
	ServiceSettings(n *testnet.Net) any
}

// Recounter is a kind whose payments settle outside blocks (a service's
// answer) and whose store tpslab verify re-counts them from, apart from
// the run's confirmer (docs/results.md).
type Recounter interface {
	// RecountSource is where n's committed payments are read back from
	// (a database URL).
	RecountSource(n *testnet.Net) string
	// Recount says which of ids (hex) the store at source holds as
	// committed. A store of another system than chainID's is an error
	// naming it.
	Recount(ctx context.Context, source, chainID string, ids []string) (found map[string]bool, err error)
}

// BlockRecounter is a kind whose payments are in blocks that are not
// CometBFT's (an EVM chain's): tpslab verify re-counts each evidence line's
// block from a node at url. err is a node that lacks the block or serves
// another chain; diffs are the payments not found.
type BlockRecounter interface {
	RecountBlock(ctx context.Context, url, chainID string, l report.EvidenceLine) (found int64, diffs []string, err error)
}

// Reader is a kind that reads sections other than its own (Configured):
// the ledger kind reads http's, the Cosmos EVM kind evm's and cosmos's.
type Reader interface {
	Reads() []string
}

// Migrated is a kind whose settings were the scenario's own fields once:
// Moved maps each old dotted path to the new one, for a one-line message.
type Migrated interface {
	Moved() map[string]string
}

// Flagged is a kind with command-line flags of its own.
type Flagged interface {
	Flags() []Flag
}

// Flag sets one scenario field, usually in the kind's section.
type Flag struct {
	Name string // without the dashes
	Path string // the field it sets, dotted: "tally.account"
	Help string
	// NetUp: `net up` takes it too (a setting of the network it starts,
	// which the kind reads from NetOptions.Scenario).
	NetUp bool
}

// SectionOf is the kind's section of sc, as Settings made it and the file
// and flags set it.
func SectionOf[T any](sc *scenario.Scenario, kind string) *T {
	if sc == nil { // options made without a scenario: the defaults
		d := scenario.Default()
		sc = &d
	}
	v, ok := sc.Section(kind).(*T)
	if !ok {
		panic("kinds: " + kind + ": no section of that type registered") // a programming error
	}
	return v
}

// Mixer is a kind whose scenario defines kinds of payment of its own
// (the Cosmos kind's messages).
type Mixer interface {
	MixKinds(sc *scenario.Scenario) []string
}

// Telemetered is a kind that reads its system from the inside (a
// database's statistics, a service's own counters) beyond the node
// processes and CometBFT pages every run reads.
type Telemetered interface {
	Telemetry(ctx context.Context, sys *System) ([]telemetry.Source, error)
}

// Heighted is a chain other than CometBFT whose nodes say their height:
// the health watch follows each node's (how far behind the highest, the
// catch-up after the load).
type Heighted interface {
	Height(ctx context.Context, n testnet.Node) (int64, error)
}

// Unitized is a kind whose field counts throughput in units of its own
// (Factom's entries, transactions and messages per second): Units reads
// them from the finished run's summary, one line each, for the result and
// the first screen.
type Unitized interface {
	Units(s *report.Summary) []string
}

// PaymentDecoder is a kind whose chain's transactions tpslab reads back as
// payments (`tpslab record --rpc`): any account's, not only tpslab's.
type PaymentDecoder interface {
	// DecodePayment reads one transaction of a block; false when it is not
	// a payment the kind knows.
	DecodePayment(tx []byte) (DecodedPayment, bool)
}

// DecodedPayment is a transaction read as a payment: kind as a mix names
// it (send, multi_send), accounts as the chain writes them, and the amount
// (a multi-send's first recipient and what it was paid).
type DecodedPayment struct {
	Kind, Sender, Recipient string
	Amount                  uint64
}

// System is the system under test as the runner found or started it.
type System struct {
	Kind      string
	Endpoints []string
	Net       *testnet.Net // a local network (net.json), or nil for remote endpoints
	Started   bool         // tpslab started it and stops it
	Log       io.Writer    // where a kind reports setting up (funding, ...)
	// Warn and Note, when set, record a warning or a note found before the
	// load in the run's notes (result.json) as well as its log.
	Warn, Note func(msg string)
	// AtEnd, when set, takes a function whose notes the run records after
	// the load (how a price moved, ...).
	AtEnd func(func() []string)
}

// Tell records msg in the run's notes, or prints it to Log when no run
// takes notes (a setting-up step outside a run).
func (s *System) Tell(msg string) {
	if s.Note != nil {
		s.Note(msg)
	} else if s.Log != nil {
		fmt.Fprintln(s.Log, msg)
	}
}

// StartOptions say where and how a kind starts a fresh network for a run.
type StartOptions struct {
	Home   string
	Binary string // the tpslab executable, for kinds whose nodes are tpslab
	// NodeBinary is the node program to start instead of the kind's own
	// (tpslab from another checkout, an SDK daemon, geth): `ab` compares two.
	NodeBinary string
	Owner      *testnet.Owner // the process that will stop it
	Log        io.Writer
}

// Audit is what `net check` found: a line per node, and the problems.
type Audit struct {
	Lines    []string
	Problems []string
	OK       string // what a clean check means, for this kind
}

// Conn is a kind connected to a system.
type Conn struct {
	Target   sut.Target
	Workload workload.Workload
}

// Connect builds kind's target and workload for sys (whose kind a network
// in net_home named: its sections are checked here).
func Connect(ctx context.Context, k Kind, sys *System, sc *scenario.Scenario) (*Conn, error) {
	if err := unread(sc, k); err != nil {
		return nil, err
	}
	if err := checkMix(sc, k); err != nil {
		return nil, err
	}
	tgt, err := k.Target(sys, sc)
	if err != nil {
		return nil, err
	}
	wl, err := k.Workload(ctx, sys, sc, tgt)
	if err != nil {
		tgt.Close()
		return nil, err
	}
	return &Conn{Target: tgt, Workload: wl}, nil
}

// Resourced is a kind that declares the resources of the system it starts
// or reads, each with its capacity from the network's configuration or the
// system's own answers (block bytes and gas, a pool of connections, the
// block interval): the judgement weighs each one's use against it
// (report.Capacity). Called once, before the load; what cannot be read is
// left out.
type Resourced interface {
	Capacities(ctx context.Context, sys *System, sc *scenario.Scenario) []report.Capacity
}
