package runner

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// sut is the system under test as the runner found or started it.
type sut struct {
	endpoints []string
	net       *testnet.Net // the built-in network, when there is one
	started   bool         // tpslab started it and stops it
	info      *report.Network
}

func (s *sut) stop(log io.Writer, keep bool) {
	if !s.started || s.net == nil {
		return
	}
	if keep {
		fmt.Fprintf(log, "network left running in %s (stop it with `tpslab net down --home %s`)\n", s.net.Home, s.net.Home)
		return
	}
	if err := s.net.Down(); err != nil {
		fmt.Fprintf(log, "stopping the network: %v\n", err)
	}
	os.RemoveAll(s.net.Home)
}

// prepare finds the endpoints: given ones, a network in net_home, or a fresh
// built-in network in a temporary home.
func prepare(ctx context.Context, sc *scenario.Scenario, o Options) (*sut, error) {
	t := sc.Target
	switch {
	case len(t.Endpoints) > 0:
		return &sut{endpoints: t.Endpoints, info: &report.Network{Kind: t.Kind, Endpoints: t.Endpoints}}, nil
	case t.Kind != "builtin":
		return nil, exitcode.BadInputf("target.endpoints: empty, expected at least one RPC URL for target kind %s", t.Kind)
	case t.NetHome != "":
		n, err := testnet.Load(t.NetHome)
		if err != nil {
			return nil, exitcode.Wrap(exitcode.BadInput, err)
		}
		if dead := n.Dead(); len(dead) == len(n.Nodes) {
			return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target.net_home %s: no node is running; start it with `tpslab net up`", t.NetHome))
		}
		return &sut{endpoints: n.RPCEndpoints(), net: n, info: netInfo(n, false)}, nil
	}
	home, err := os.MkdirTemp("", "tpslab-net-")
	if err != nil {
		return nil, err
	}
	nw := sc.Network
	st := testnet.DefaultSettings()
	st.TimeoutCommit = nw.TimeoutCommit.D()
	st.MempoolSize = nw.MempoolSize
	st.MaxBlockBytes = nw.MaxBlockBytes
	st.MaxBlockGas = nw.MaxBlockGas
	st.CreateEmptyBlocks = nw.CreateEmptyBlocks
	g := testnet.DefaultGenesis()
	g.Accounts = nw.Accounts
	opts := testnet.Options{Validators: nw.Validators, Home: home, ChainID: "tpslab", Genesis: g, Settings: st, Binary: o.Binary, Reset: true}
	if err := opts.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	fmt.Fprintf(o.Log, "starting a built-in network of %d validators in %s\nsettings: %s\n", nw.Validators, home, st)
	n, err := testnet.Up(ctx, opts)
	if err != nil {
		os.RemoveAll(home)
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("start built-in network: %w", err))
	}
	return &sut{endpoints: n.RPCEndpoints(), net: n, started: true, info: netInfo(n, true)}, nil
}

func netInfo(n *testnet.Net, started bool) *report.Network {
	return &report.Network{Kind: "builtin", Started: started, Validators: len(n.Nodes), ChainID: n.ChainID, Endpoints: n.RPCEndpoints(), Settings: n.Settings}
}

// ledger returns the chain id and genesis of the ledger under test.
func (s *sut) ledger() (string, chain.Genesis, bool) {
	if s.net == nil {
		return "", chain.Genesis{}, false
	}
	return s.net.ChainID, s.net.Genesis, true
}

// SharedNetwork starts the built-in network a scenario describes, when it
// names no endpoints and no net_home, and points the scenario at it, so that
// several runs (repetitions, find-max steps) use one network. stop ends it.
func SharedNetwork(ctx context.Context, sc *scenario.Scenario, log io.Writer) (stop func(), err error) {
	if sc.Target.Kind != "builtin" || sc.Target.NetHome != "" || len(sc.Target.Endpoints) > 0 {
		return func() {}, nil
	}
	s, err := prepare(ctx, sc, Options{Log: log})
	if err != nil {
		return nil, err
	}
	sc.Target.NetHome = s.net.Home
	return func() { s.stop(log, false) }, nil
}
