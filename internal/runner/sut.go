package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// Kind is one kind of system under test, as the runner sees it: it can
// start a local network of its kind, and connect a target and a workload to
// a system. Kinds are given to the runner by name (Options.Kinds); the
// runner knows no concrete one.
type Kind interface {
	// StartNet starts a local network for sc.
	StartNet(ctx context.Context, sc *scenario.Scenario, o NetOptions) (*testnet.Net, error)
	// Target builds the target for sys; it does not contact it.
	Target(sys *System, sc *scenario.Scenario) (sut.Target, error)
	// Workload builds the workload that drives tgt (reading what it needs
	// from the system: accounts, sequences).
	Workload(ctx context.Context, sys *System, sc *scenario.Scenario, tgt sut.Target) (workload.Workload, error)
}

// NetOptions say where and how a kind starts a local network.
type NetOptions struct {
	Home   string
	Binary string         // the tpslab executable, for kinds whose nodes are tpslab
	Owner  *testnet.Owner // the process that will stop it
	Log    io.Writer
}

// Conn is a kind connected to a system.
type Conn struct {
	Target   sut.Target
	Workload workload.Workload
}

// Connect builds kind's target and workload for sys.
func Connect(ctx context.Context, k Kind, sys *System, sc *scenario.Scenario) (*Conn, error) {
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

// TargetFor builds the target of the system a scenario names (endpoints or
// net_home), without a workload: for tools that only watch it.
func TargetFor(sc *scenario.Scenario, kinds Kinds) (sut.Target, error) {
	sys, k, err := findSystem(context.Background(), sc, Options{Kinds: kinds, Log: io.Discard})
	if err != nil {
		return nil, err
	}
	return k.Target(sys, sc)
}

// Presigner is a workload that can sign ahead of the load.
type Presigner interface {
	PresignPlan(n int) (count int, bytes float64)
	Presign(ctx context.Context, n int, seed int64, progress func(done, total int)) (int, error)
}

// System is the system under test as the runner found or started it.
type System struct {
	Kind      string
	Endpoints []string
	Net       *testnet.Net // a local network (net.json), or nil for remote endpoints
	Started   bool         // tpslab started it and stops it
	Log       io.Writer    // where a kind reports setting up (funding, ...)
}

func (s *System) stop(log io.Writer, keep bool) {
	if !s.Started || s.Net == nil {
		return
	}
	if keep {
		s.Net.Disown() // left running on purpose: not an orphan
		fmt.Fprintf(log, "network left running in %s (stop it with `tpslab net down --home %s`)\n", s.Net.Home, s.Net.Home)
		return
	}
	if err := s.Net.Down(); err != nil {
		fmt.Fprintf(log, "stopping the network: %v\n", err)
	}
	os.RemoveAll(s.Net.Home)
}

func (s *System) info() *report.Network {
	if s.Net == nil {
		return &report.Network{Kind: s.Kind, Endpoints: s.Endpoints}
	}
	n := s.Net
	if n.Ledger != nil {
		return &report.Network{Kind: s.Kind, Started: s.Started, ChainID: n.ChainID, Endpoints: s.Endpoints, Settings: n.Ledger}
	}
	nw := &report.Network{Kind: s.Kind, Started: s.Started, Validators: n.Validators(), ChainID: n.ChainID, Endpoints: s.Endpoints, Settings: n.Settings,
		RPCNodes: len(n.Nodes) - n.Validators()}
	if n.Links != nil {
		nw.Topology = n.Links.Topology
	}
	return nw
}

// findSystem finds the endpoints: given ones, a network in net_home, or a
// fresh local network in a temporary home.
func findSystem(ctx context.Context, sc *scenario.Scenario, o Options) (*System, Kind, error) {
	t := sc.Target
	kindOf := func(name string) (Kind, error) {
		k, ok := o.Kinds[name]
		if !ok {
			return nil, exitcode.BadInputf("target.kind: %q, expected one of %s", name, strings.Join(o.Kinds.Names(), ", "))
		}
		return k, nil
	}
	switch {
	case len(t.Endpoints) > 0:
		k, err := kindOf(t.Kind)
		return &System{Kind: t.Kind, Endpoints: t.Endpoints, Log: o.Log}, k, err
	case t.NetHome != "":
		n, err := testnet.Load(t.NetHome)
		if err != nil {
			return nil, nil, exitcode.Wrap(exitcode.BadInput, fmt.Errorf("target.net_home: %w", err))
		}
		k, err := kindOf(n.Kind)
		return &System{Kind: n.Kind, Endpoints: n.RPCEndpoints(), Net: n, Log: o.Log}, k, err
	}
	k, err := kindOf(t.Kind)
	if err != nil {
		return nil, nil, err
	}
	home, err := os.MkdirTemp("", testnet.TempPrefix)
	if err != nil {
		return nil, nil, err
	}
	n, err := k.StartNet(ctx, sc, NetOptions{Home: home, Binary: o.Binary, Owner: testnet.Me(o.Command), Log: o.Log})
	if err != nil {
		os.RemoveAll(home)
		if ctx.Err() != nil {
			return nil, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("interrupted while starting the network"))
		}
		return nil, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("start a %s network: %w", t.Kind, err))
	}
	return &System{Kind: t.Kind, Endpoints: n.RPCEndpoints(), Net: n, Started: true, Log: o.Log}, k, nil
}

// Names lists the kinds, sorted.
func (k Kinds) Names() []string {
	var out []string
	for n := range k {
		out = append(out, n)
	}
	sortStrings(out)
	return out
}

// Kinds are the kinds of system a runner can measure, by name.
type Kinds map[string]Kind

// SharedNetwork starts the local network a scenario describes, when it names
// no endpoints and no net_home, and points the scenario at it, so that
// several runs (repetitions, find-max steps) use one network. stop ends it.
func SharedNetwork(ctx context.Context, sc *scenario.Scenario, o Options) (stop func(), err error) {
	if sc.Target.NetHome != "" || len(sc.Target.Endpoints) > 0 {
		return func() {}, nil
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	s, _, err := findSystem(ctx, sc, o)
	if err != nil {
		return nil, err
	}
	sc.Target.NetHome = s.Net.Home
	return func() { s.stop(o.Log, false) }, nil
}
