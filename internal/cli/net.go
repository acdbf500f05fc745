package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tpslab/tpslab/internal/testnet/kubenet"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

func nodeCmd() *cobra.Command {
	var home, from, peers string
	c := &cobra.Command{
		Use:   "node --home DIR",
		Short: "Run one validator of the reference ledger (started for you by `net up`)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if home == "" {
				return exitcode.BadInputf("node: --home is required")
			}
			return exitcode.Wrap(exitcode.TargetFailed, chainnet.RunNodeWith(cmd.Context(), home, from, peersFlag(cmd, peers)))
		},
	}
	c.Flags().StringVar(&home, "home", "", "node home directory (config/, data/)")
	c.Flags().StringVar(&from, "from", "", "a folder of the node's files (config.toml, genesis.json, keys) to start a fresh home from: a pod's secret")
	c.Flags().StringVar(&peers, "peers", "", "persistent peers ID@HOST:PORT,... instead of config.toml's")
	return c
}

// peersFlag is --peers when given (even empty: no peers at all).
func peersFlag(cmd *cobra.Command, peers string) *string {
	if cmd.Flags().Changed("peers") {
		return &peers
	}
	return nil
}

func linksCmd() *cobra.Command {
	var home string
	c := &cobra.Command{
		Use:    "links --home DIR",
		Short:  "Run the emulated links of a network (started for you by `net up --topology`)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := loadNet(home)
			if err != nil {
				return err
			}
			if n.Links == nil {
				return exitcode.BadInputf("links: the network in %s has no emulated links", home)
			}
			return exitcode.Wrap(exitcode.TargetFailed, netem.Serve(cmd.Context(), &n.Links.Emulation, os.Stdout))
		},
	}
	c.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	return c
}

// netUpFlags map `net up`'s flags onto the scenario's network section: a
// network is described once, by that section, whichever door it comes
// through (net up's flags or file, or a run that starts its network), with
// the scenario's defaults and bounds.
var netUpFlags = []scenarioFlag{
	{"kind", "target.kind", "what to run"}, // the registered kinds are listed by registerNetUp
	{"validators", "network.validators", "number of validators, one OS process each"},
	{"chain-id", "network.chain_id", "chain id (default tpslab, or the kind's)"},
	{"seed", "network.seed", "genesis seed the funded accounts' keys are derived from (default tpslab)"},
	{"accounts", "network.accounts", "number of funded genesis accounts"},
	{"balance", "network.balance", "balance of each genesis account (default the kind's)"},
	{"state", "network.state", "builtin, ledger: pre-load this many accounts beyond the funded ones (no keys; payments go to them too): a chain with a real chain's state behind it"},
	{"bind", "network.bind", "address every node listener binds to"},
	{"binary", "network.binary", "the node program instead of the kind's own: a tpslab from another checkout (builtin), your own SDK daemon (cosmos: gaiad, simd, ...), your own geth (evm)"},
	{"timeout-commit", "network.timeout_commit", "consensus timeout_commit"},
	{"timeout-propose", "network.timeout_propose", "consensus timeout_propose"},
	{"mempool-size", "network.mempool_size", "mempool capacity in transactions"},
	{"mempool-max-bytes", "network.mempool_max_bytes", "mempool capacity in bytes"},
	{"mempool-cache-size", "network.mempool_cache_size", "mempool seen-tx cache size"},
	{"max-block-bytes", "network.max_block_bytes", "consensus param block.max_bytes"},
	{"max-block-gas", "network.max_block_gas", "consensus param block.max_gas (1 gas per payment; -1 = no cap)"},
	{"create-empty-blocks", "network.create_empty_blocks", "produce blocks without transactions"},
	{"log-level", "network.log_level", "node log level"},
	{"gossip-stage", "network.gossip_stage", "cosmos, cosmos-evm: the nodes log their mempool, and runs time the gossiped stage from it (costs the nodes CPU: docs/metrics.md)"},
	{"topology", "network.topology", "route every P2P link through an emulated one: loopback | lan | region | continent | global (docs/network.md); ledger, taler: the link to PostgreSQL"},
	{"rpc-nodes", "network.rpc_nodes", "builtin, cosmos, cosmos-evm: full nodes that do not validate; the load goes to them"},
	{"client-links", "network.client_links", "builtin, cosmos, cosmos-evm: the load generator reaches each node's RPC through an emulated link too (with --topology)"},
}

// registerNetUp declares netUpFlags, typed, with the scenario's defaults.
func registerNetUp(fs *pflag.FlagSet, reg *kinds.Registry) {
	def := scenario.Default()
	if err := reg.Resolve(&def, true); err != nil {
		panic(err) // the registry is empty: a programming error
	}
	registerScenarioFlags(fs, withKindFlags(netUpFlags, reg, true), &def, map[string]string{
		"kind": ": " + strings.Join(reg.NamesWhere(kinds.IsNetwork), " | ") + " (tpslab kinds says what each is)"})
}

// netUpOptions reads the scenario file (if any) and the flags into the
// network section, checks it with the scenario's bounds, and describes the
// network to start. changed says which settings the user gave (a flag, or a
// file's value other than the default), for the kind's own defaults.
func netUpOptions(fs *pflag.FlagSet, reg *kinds.Registry, args []string, home string, reset bool) (kinds.NetOptions, func(string) bool, error) {
	sc := scenario.Default()
	if len(args) == 1 {
		var err error
		if sc, err = scenario.ReadFile(args[0]); err != nil {
			return kinds.NetOptions{}, nil, exitcode.Wrap(exitcode.BadInput, err)
		}
	}
	table := withKindFlags(netUpFlags, reg, true)
	if err := applyScenarioFlags(fs, table, &sc); err != nil {
		return kinds.NetOptions{}, nil, err
	}
	path := map[string]string{}
	for _, f := range table {
		path[f.flag] = f.path
	}
	if err := reg.Resolve(&sc, true); err != nil {
		return kinds.NetOptions{}, nil, err
	}
	k, err := reg.Lookup(sc.Target.Kind)
	if err != nil {
		return kinds.NetOptions{}, nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	if !kinds.IsNetwork(k) {
		return kinds.NetOptions{}, nil, exitcode.BadInputf("--kind: %s: tpslab starts no network of it, expected one of %s", k.Info().Name, strings.Join(reg.NamesWhere(kinds.IsNetwork), ", "))
	}
	if err := sc.Network.Validate(); err != nil {
		// Named as the user gave it: by its flag when a flag set it.
		msg := err.Error()
		for _, f := range table {
			if fs.Changed(f.flag) && strings.HasPrefix(msg, f.path+": ") {
				msg = "--" + f.flag + ": " + strings.TrimPrefix(msg, f.path+": ")
				break
			}
		}
		return kinds.NetOptions{}, nil, exitcode.BadInputf("%s", msg)
	}
	g := testnet.DefaultGenesis()
	o := kinds.NetFromScenario(&sc, k.Info().Name, g.Seed, sc.Network.Accounts, g.Balance)
	o.Home, o.Reset, o.Log = home, reset, os.Stderr
	def := scenario.Default()
	changed := func(flag string) bool {
		if fs.Changed(flag) {
			return true
		}
		p, ok := path[flag]
		if !ok {
			return false
		}
		a, _, _ := scenario.Get(&sc, p)
		b, _, _ := scenario.Get(&def, p)
		return a != b
	}
	return o, changed, nil
}

// isService says a kind's networks are services that serve payments, not
// chains that commit blocks.
func isService(k kinds.Kind) bool {
	_, ok := k.(kinds.Service)
	return ok
}

func netCmd(reg *kinds.Registry) *cobra.Command {
	c := &cobra.Command{Use: "net", Short: "Create, start, inspect and stop a local reference network",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.BadInputf("unknown command %q for %q, expected one of up, down, start, stop, status, check", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		}}
	for _, s := range []*cobra.Command{netUpCmd(reg), netDownCmd(), netStartCmd(), netStopCmd(), netStatusCmd(reg), netCheckCmd(reg)} {
		s.Args = wrapArgs(s.Args)
		s.PreRun = func(*cobra.Command, []string) { warnOrphans() }
		c.AddCommand(s)
	}
	return c
}

func netUpCmd(reg *kinds.Registry) *cobra.Command {
	var home string
	var reset, force bool
	var kube kubenet.Options
	up := &cobra.Command{
		Use:   "up [SCENARIO.yaml] --home DIR",
		Short: "Create and start a network of validators on loopback (the scenario's network section; flags set it)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if home == "" {
				return exitcode.BadInputf("net up: --home is required")
			}
			o, changed, err := netUpOptions(cmd.Flags(), reg, args, home, reset)
			if err != nil {
				return err
			}
			if pid := testnet.InUse(home); reset && pid != 0 && !force {
				// A run is loading it: a wipe would end that run as a
				// target that failed (issue 52).
				return exitcode.BadInputf("--reset: the network in %s is in use by a tpslab run (pid %d); wait for it or stop it, or give --force to wipe it anyway", home, pid)
			}
			if err := reg.NetDefaults(&o, changed); err != nil {
				return err
			}
			var envs map[string]testnet.Envelope
			if kube.Kubeconfig != "" {
				k := kube
				if err := k.Check(); err != nil {
					return exitcode.Wrap(exitcode.BadInput, err)
				}
				o.Kube = &k
			} else if kube.CPU != "" || kube.Memory != "" {
				// Local nodes: a cgroup of their own each (issue 68).
				if envs, err = testnet.CheckEnvelopes(kube.CPU, kube.Memory, o.Validators+o.RPCNodes, "--node-cpu", "--node-memory"); err != nil {
					return exitcode.Wrap(exitcode.BadInput, err)
				}
				if err := testnet.EnvelopesOffered(); err != nil {
					return exitcode.BadInputf("--node-cpu/--node-memory: %v", err)
				}
			}
			start := time.Now()
			fresh := reset || emptyDir(home)
			n, err := reg.Up(cmd.Context(), o)
			// A port the kernel named free can be bound by another program
			// before our process binds it: such a start is made again on
			// new ports, twice at most, and says so.
			for try := 1; err != nil && fresh && try <= 2 && portTaken(err) != ""; try++ {
				if werr := wipeHalfMade(home); werr != nil {
					err = fmt.Errorf("%w; %v", err, werr)
					break
				}
				fmt.Fprintf(os.Stderr, "a port was taken by another program (%q): the half-made network was removed; starting again on other ports\n", portTaken(err))
				n, err = reg.Up(cmd.Context(), o)
			}
			if err != nil {
				if cmd.Context().Err() != nil {
					err = errors.New("net up interrupted")
				}
				if fresh && exitcode.Of(err) != exitcode.BadInput {
					// A half-made home refused the retry (issue 52): what
					// this net up made, it takes away.
					err = fmt.Errorf("%w; %s", err, removeHalfMade(home))
				}
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			if err := n.ApplyEnvelopes(envs); err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%w; the network runs without it: `tpslab net down --home %s`", err, home))
			}
			for _, nd := range n.Nodes {
				if e := nd.Envelope; e != nil {
					fmt.Fprintf(os.Stderr, "%s runs in %s: %s\n", nd.Name, strings.Join(e.Groups, ", "), e)
				}
			}
			what := "committing blocks"
			if nk, _ := reg.Lookup(n.Kind); isService(nk) {
				what = "serving payments"
			}
			fmt.Fprintf(os.Stderr, "network %s %s after %.1fs\n", n.ChainID, what, time.Since(start).Seconds())
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tRPC\tAPI\tGRPC\tETH_RPC\tP2P\tPID")
			for _, nd := range n.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", nd.Name, nd.RPC, dash(nd.API), dash(nd.GRPC), dash(nd.LoadRPC), nd.P2P, nd.PID)
			}
			tw.Flush()
			if n.Links != nil {
				printLinks(n)
			}
			fmt.Fprintf(os.Stderr, "described in %s/%s; stop with `tpslab net down --home %s`\n", n.Home, testnet.NetFile, home)
			return nil
		},
	}
	registerNetUp(up.Flags(), reg)
	up.Flags().BoolVar(&reset, "reset", false, "stop and wipe a network already in --home (refused while a run loads it, unless --force)")
	up.Flags().BoolVar(&force, "force", false, "with --reset: wipe the network even while a run loads it")
	up.Flags().StringVar(&kube.Kubeconfig, "kubeconfig", "", "start the nodes as pods on the Kubernetes cluster this kubeconfig names (tpslab cluster up writes one); --home keeps net.json and the keys")
	up.Flags().StringVar(&kube.Namespace, "namespace", "default", "with --kubeconfig: the namespace of the pods")
	up.Flags().StringVar(&kube.Image, "image", "", "with --kubeconfig: tpslab's image (default: the local cluster's)")
	up.Flags().StringVar(&kube.CPU, "node-cpu", "", "CPU per node: a pod's request and limit with --kubeconfig, else a cgroup of its own (root); 0.5, 500m, or node3=0.25 for one")
	up.Flags().StringVar(&kube.Memory, "node-memory", "", "memory per node, as --node-cpu (e.g. 512Mi, node0=1Gi)")
	up.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	up.Example = `  # 4 validators of the built-in ledger on loopback, in a home of their own
  tpslab net up --home /tmp/net --validators 4
  # the same across emulated regions, with an RPC node taking the load
  tpslab net up --home /tmp/net --validators 4 --topology global --rpc-nodes 1 --reset
  # a Cosmos SDK chain (tpsd; --binary gaiad for the Hub's own daemon)
  tpslab net up --kind cosmos --home /tmp/sdk --validators 1
  # geth, the GNU Taler exchange, the PostgreSQL ledger service
  tpslab net up --kind evm --home /tmp/geth
  tpslab net up --kind taler --home /tmp/taler
  # then load it, look at it, stop it
  tpslab run --net-home /tmp/net --duration 20s
  tpslab net status --home /tmp/net
  tpslab net down --home /tmp/net`
	setGroup(up.Flags(), "network", "kind", "home", "reset", "force")
	groupedHelp(up)
	return up
}

// emptyDir says dir does not exist or holds nothing.
func emptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0
}

// portTaken is the log line of a process that exited for want of its
// port, when err is that exit.
func portTaken(err error) string {
	if e := (*testnet.ExitedError)(nil); errors.As(err, &e) {
		return e.PortLine()
	}
	return ""
}

// removeHalfMade stops what a failed net up started in home and removes
// it, and says so.
func removeHalfMade(home string) string {
	if err := wipeHalfMade(home); err != nil {
		return err.Error()
	}
	return "the half-made network in " + home + " was stopped and removed; net up can be run again"
}

// wipeHalfMade stops what a failed net up started in home and removes it.
func wipeHalfMade(home string) error {
	if n, err := testnet.Load(home); err == nil {
		if err := n.Down(); err != nil {
			return fmt.Errorf("stopping the half-made network in %s: %v", home, err)
		}
	}
	if err := os.RemoveAll(home); err != nil {
		return fmt.Errorf("removing the half-made network in %s: %v", home, err)
	}
	return nil
}

func netDownCmd() *cobra.Command {
	var home string
	down := &cobra.Command{
		Use: "down --home DIR", Short: "Stop every node of a network", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := loadNet(home)
			if err != nil {
				return err
			}
			if err := n.Down(); err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			fmt.Fprintf(os.Stderr, "stopped %d nodes in %s\n", len(n.Nodes), n.Home)
			return nil
		},
	}
	down.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	return down
}

func netStatusCmd(reg *kinds.Registry) *cobra.Command {
	var home string
	var asJSON, endpoints bool
	status := &cobra.Command{
		Use: "status --home DIR", Short: "Show height, peers and mempool of each node", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := loadNet(home)
			if err != nil {
				return err
			}
			if endpoints {
				// For scripts: --endpoint "$(tpslab net status --home H --endpoints | head -1)".
				for _, u := range n.RPCEndpoints() {
					fmt.Println(u)
				}
				return nil
			}
			st, err := reg.Status(cmd.Context(), n)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(st)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tROLE\tSTATE\tHEIGHT\tPEERS\tMEMPOOL_TXS\tMEMPOOL_BYTES\tERROR")
			for _, s := range st {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Name, s.Role, s.State, s.Height, s.Peers, s.MempoolTxs, s.MempoolBytes, s.Err)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if n.Links != nil {
				printLinks(n)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	status.Flags().BoolVar(&endpoints, "endpoints", false, "print only the URLs that take the load, one a line (the nodes' RPC, a service's API)")
	status.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	return status
}

func netCheckCmd(reg *kinds.Registry) *cobra.Command {
	var home string
	check := &cobra.Command{
		Use: "check --home DIR", Short: "Audit every validator's state: supply, balances, app hashes", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := loadNet(home)
			if err != nil {
				return err
			}
			a, err := reg.Check(cmd.Context(), n)
			if err != nil {
				return err
			}
			for _, l := range a.Lines {
				fmt.Println(l)
			}
			if len(a.Problems) > 0 {
				for _, p := range a.Problems {
					fmt.Println("FAIL:", p)
				}
				return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("net check: %d problem(s) found", len(a.Problems)))
			}
			fmt.Println(a.OK)
			return nil
		},
	}
	check.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	return check
}

func netStartCmd() *cobra.Command {
	var home string
	var nodes []string
	start := &cobra.Command{
		Use: "start --home DIR [--node NAME]", Short: "Start stopped or crashed nodes again on their state (all, or --node)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := loadNet(home)
			if err != nil {
				return err
			}
			started, err := n.Start(nodes)
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			if len(started) == 0 {
				fmt.Fprintln(os.Stderr, "every named node is already running")
				return nil
			}
			fmt.Fprintf(os.Stderr, "started %s; `tpslab net status --home %s` shows when they have caught up\n", strings.Join(started, ", "), home)
			return nil
		},
	}
	start.Flags().StringArrayVar(&nodes, "node", nil, "a node to start, repeatable (default: every node not running)")
	start.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	return start
}

func netStopCmd() *cobra.Command {
	var home string
	var nodes []string
	stop := &cobra.Command{
		Use: "stop --home DIR --node NAME", Short: "Stop one node cleanly; `net start` brings it back", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(nodes) == 0 {
				return exitcode.BadInputf("net stop: --node is required (stop the whole network with `tpslab net down`)")
			}
			n, err := loadNet(home)
			if err != nil {
				return err
			}
			if err := n.Stop(nodes); err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			fmt.Fprintf(os.Stderr, "stopped %s\n", strings.Join(nodes, ", "))
			return nil
		},
	}
	stop.Flags().StringArrayVar(&nodes, "node", nil, "the node to stop, repeatable")
	stop.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
	return stop
}

// printLinks lists a network's emulated links.
func printLinks(n *testnet.Net) {
	fmt.Printf("links (topology %s, api %s):\n", n.Links.Topology, n.Links.API)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINK\tFROM_REGION\tTO_REGION\tCONDITIONS\tPROXY")
	for _, l := range n.Links.Links {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, dash(n.Links.Regions[l.From]), dash(n.Links.Regions[l.To]), l.Conditions, l.Listen)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// warnOrphans names networks a tpslab process started and could not stop
// (it was killed with SIGKILL).
func warnOrphans() {
	for _, w := range testnet.OrphanWarnings() {
		fmt.Fprintln(os.Stderr, "tpslab: warning:", w)
	}
}

func loadNet(home string) (*testnet.Net, error) {
	if home == "" {
		return nil, exitcode.BadInputf("--home is required")
	}
	n, err := testnet.Load(home)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return n, nil
}

// unpackCmd is what a daemon's pod runs first: its home from the archive
// in its Secret (tpslab's image holds the only program there is).
func unpackCmd() *cobra.Command {
	var from, to string
	c := &cobra.Command{Use: "unpack --from HOME.tgz --to DIR", Short: "Unpack a node's home (a pod's first step on Kubernetes)", Args: cobra.NoArgs, Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return exitcode.BadInputf("unpack: --from and --to are required")
			}
			return exitcode.Wrap(exitcode.TargetFailed, kubenet.Unpack(from, to))
		}}
	c.Flags().StringVar(&from, "from", "", "the archive (a gzipped tar)")
	c.Flags().StringVar(&to, "to", "", "the home to create (left alone when it exists)")
	return c
}
