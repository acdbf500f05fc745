package runner

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/provenance"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/testnet"
)

// TargetFor builds the target of the system a scenario names (endpoints or
// net_home), without a workload: for tools that only watch it.
func TargetFor(sc *scenario.Scenario, reg *kinds.Registry) (sut.Target, error) {
	sys, k, err := findSystem(context.Background(), sc, Options{Kinds: reg, Log: io.Discard})
	if err != nil {
		return nil, err
	}
	return k.Target(sys, sc)
}

// stopSystem stops a network tpslab started (unless keep).
func stopSystem(s *kinds.System, log io.Writer, keep bool) {
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

// networkInfo is what result.json says of the system.
func networkInfo(s *kinds.System, k kinds.Kind) *report.Network {
	if s.Net == nil {
		return &report.Network{Kind: s.Kind, Endpoints: s.Endpoints}
	}
	n := s.Net
	// Before the load: each program hashed (or its cache record read) and
	// asked its version once.
	prov := provenance.Of(context.Background(), n)
	if sv, ok := k.(kinds.Service); ok {
		return &report.Network{Kind: s.Kind, Started: s.Started, ChainID: n.ChainID, Endpoints: s.Endpoints, Settings: sv.ServiceSettings(n), Provenance: prov, Envelopes: envelopes(n), State: n.Genesis.State}
	}
	nw := &report.Network{Kind: s.Kind, Started: s.Started, Validators: n.Validators(), ChainID: n.ChainID, Endpoints: s.Endpoints, Settings: n.Settings,
		RPCNodes: len(n.Nodes) - n.Validators(), Provenance: prov, Envelopes: envelopes(n), State: n.Genesis.State}
	if n.Links != nil {
		nw.Topology = n.Links.Topology
	}
	return nw
}

// findSystem finds the endpoints: given ones, a network in net_home, or a
// fresh local network in a temporary home.
func findSystem(ctx context.Context, sc *scenario.Scenario, o Options) (*kinds.System, kinds.Kind, error) {
	t := sc.Target
	switch {
	case len(t.Endpoints) > 0:
		k, err := o.Kinds.Lookup(t.Kind)
		if err != nil {
			return nil, nil, err
		}
		return &kinds.System{Kind: k.Info().Name, Endpoints: t.Endpoints, Log: o.Log}, k, nil
	case t.NetHome != "":
		n, err := testnet.Load(t.NetHome)
		if err != nil {
			return nil, nil, exitcode.Wrap(exitcode.BadInput, fmt.Errorf("target.net_home: %w", err))
		}
		k, err := o.Kinds.Lookup(n.Kind)
		if err != nil {
			return nil, nil, exitcode.Wrap(exitcode.BadInput, fmt.Errorf("target.net_home: %s: %w", n.Home, err))
		}
		return &kinds.System{Kind: k.Info().Name, Endpoints: n.RPCEndpoints(), Net: n, Log: o.Log}, k, nil
	}
	k, err := o.Kinds.Lookup(t.Kind)
	if err != nil {
		return nil, nil, err
	}
	name := k.Info().Name
	st, ok := k.(kinds.Starter)
	if !ok {
		return nil, nil, exitcode.BadInputf("target.kind: %s: tpslab does not start such a system, expected target.endpoints (--endpoint)", name)
	}
	// Each node's envelope (network.node_cpu, node_memory), refused
	// before anything starts when this machine cannot give it.
	envs, err := testnet.CheckEnvelopes(sc.Network.NodeCPU, sc.Network.NodeMemory, 0, "network.node_cpu", "network.node_memory")
	if err != nil {
		return nil, nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if len(envs) > 0 {
		if err := testnet.EnvelopesOffered(); err != nil {
			return nil, nil, exitcode.BadInputf("network.node_cpu/node_memory: %v", err)
		}
	}
	home, err := os.MkdirTemp("", testnet.TempPrefix)
	if err != nil {
		return nil, nil, err
	}
	n, err := st.StartNet(ctx, sc, kinds.StartOptions{Home: home, Binary: o.Binary, NodeBinary: o.NodeBinary, Owner: testnet.Me(o.Command), Log: o.Log})
	if err != nil {
		os.RemoveAll(home)
		if ctx.Err() != nil {
			return nil, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("interrupted while starting the network"))
		}
		return nil, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("start a %s network: %w", name, err))
	}
	s := &kinds.System{Kind: name, Endpoints: n.RPCEndpoints(), Net: n, Started: true, Log: o.Log}
	if err := n.ApplyEnvelopes(envs); err != nil {
		stopSystem(s, o.Log, false)
		return nil, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("the nodes' envelopes: %w", err))
	}
	for _, nd := range n.Nodes {
		if e := nd.Envelope; e != nil {
			fmt.Fprintf(o.Log, "%s runs in %s: %s\n", nd.Name, strings.Join(e.Groups, ", "), e)
		}
	}
	return s, k, nil
}

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
	return func() { stopSystem(s, o.Log, false) }, nil
}

// envelopes are the limits each node ran under: its cgroup's, or its
// pod's (nil when none).
func envelopes(n *testnet.Net) map[string]report.Envelope {
	out := map[string]report.Envelope{}
	for _, nd := range n.Nodes {
		switch {
		case nd.Envelope != nil:
			out[nd.Name] = report.Envelope{CPU: nd.Envelope.CPU, Memory: nd.Envelope.Memory, Where: "cgroup"}
		case nd.Pod != "" && n.Kubernetes != nil && (n.Kubernetes.CPU != "" || n.Kubernetes.Memory != ""):
			e, _ := testnet.ParseEnvelopes(n.Kubernetes.CPU, n.Kubernetes.Memory)
			out[nd.Name] = report.Envelope{CPU: e[""].CPU, Memory: e[""].Memory, Where: "pod"}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// setAside names each network setting the scenario gives that the network
// it runs on (target.net_home: made by net up, with its own) did not take,
// with what the network has where net.json says (issue 64: a 5-node,
// region-linked, 10 s-block scenario ran on 3 nodes, no links and 2 s
// blocks without a word).
func setAside(sc *scenario.Scenario, n *testnet.Net, flags []kinds.Flag) []string {
	def := scenario.Default()
	def.Target.Kind = sc.Target.Kind
	var out []string
	differs := func(path string) (string, bool) {
		a, _, err := scenario.Get(sc, path)
		b, _, err2 := scenario.Get(&def, path)
		return a, err == nil && err2 == nil && a != b
	}
	topology := "none"
	if n.Links != nil {
		topology = n.Links.Topology
	}
	has := map[string]string{
		"network.validators": strconv.Itoa(n.Validators()), "network.rpc_nodes": strconv.Itoa(len(n.Nodes) - n.Validators()),
		"network.topology": topology, "network.timeout_commit": n.Settings.TimeoutCommit.String(),
		"network.timeout_propose": n.Settings.TimeoutPropose.String(), "network.mempool_size": strconv.Itoa(n.Settings.MempoolSize),
		"network.mempool_max_bytes": strconv.FormatInt(n.Settings.MempoolMaxBytes, 10), "network.max_block_bytes": strconv.FormatInt(n.Settings.MaxBlockBytes, 10),
		"network.max_block_gas": strconv.FormatInt(n.Settings.MaxBlockGas, 10), "network.accounts": "", "network.binary": "", "network.node_cpu": "", "network.node_memory": "",
		"network.state": strconv.FormatUint(n.Genesis.State, 10),
	}
	paths := slices.Sorted(maps.Keys(has))
	for _, f := range flags {
		if f.NetUp && !strings.HasPrefix(f.Path, "network.") {
			paths = append(paths, f.Path)
		}
	}
	noSettings := n.Settings == (testnet.Settings{}) // a kind without CometBFT's (factomd)
	for _, p := range slices.Compact(paths) {
		v, changed := differs(p)
		theirs, known := has[p]
		if !changed || (known && theirs == v) {
			continue
		}
		shape := p == "network.validators" || p == "network.rpc_nodes" || p == "network.topology"
		if known && theirs != "" && (shape || !noSettings) {
			out = append(out, fmt.Sprintf("%s %s (the network has %s)", p, v, theirs))
		} else {
			out = append(out, fmt.Sprintf("%s %s", p, v))
		}
	}
	return out
}
