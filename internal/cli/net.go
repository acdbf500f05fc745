package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
)

func nodeCmd() *cobra.Command {
	var home string
	c := &cobra.Command{
		Use:   "node --home DIR",
		Short: "Run one validator of the reference ledger (started for you by `net up`)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if home == "" {
				return exitcode.BadInputf("node: --home is required")
			}
			return exitcode.Wrap(exitcode.TargetFailed, testnet.RunNode(cmd.Context(), home))
		},
	}
	c.Flags().StringVar(&home, "home", "", "node home directory (config/, data/)")
	return c
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

// netFlags are the `net up` options, shared with `run` when it starts its own network.
type netFlags struct {
	ledger      pgnet.Options
	kind        string
	binary      string
	denom       string
	prefix      string
	validators  int
	chainID     string
	seed        string
	accounts    uint64
	balance     uint64
	bind        string
	settings    testnet.Settings
	topology    string
	rpcNodes    int
	clientLinks bool
}

func (f *netFlags) register(fs *pflag.FlagSet, reg *kinds.Registry) {
	d := testnet.DefaultSettings()
	g := testnet.DefaultGenesis()
	fs.StringVar(&f.kind, "kind", reg.Default().Info().Name, "what to run: "+strings.Join(reg.NamesWhere(kinds.IsNetwork), " | ")+" (tpslab kinds says what each is)")
	fs.IntVar(&f.ledger.Processes, "processes", 1, "ledger: service processes")
	fs.IntVar(&f.ledger.Connections, "db-connections", 16, "ledger: database connections per process")
	fs.IntVar(&f.ledger.Batch, "batch", 1, "ledger: payments per database transaction (batch commit)")
	fs.StringVar(&f.ledger.SynchronousCommit, "synchronous-commit", "on", "ledger: PostgreSQL synchronous_commit: on | off | local | remote_write | remote_apply")
	fs.StringVar(&f.ledger.Partition, "partition", "none", "ledger: the payment log's partitioning: none | hash | range")
	fs.StringVar(&f.ledger.Isolation, "isolation", "serializable", "ledger: serializable (retried on serialization failures) | row-locks")
	fs.DurationVar(&f.ledger.BatchWait, "batch-wait", 0, "ledger: longest wait to fill a batch (0: 2ms)")
	fs.IntVar(&f.ledger.MaxQueue, "max-queue", 0, "ledger: payments a process queues for the database before answering 429 (0: 10000)")
	fs.StringVar(&f.binary, "binary", "", "cosmos: your own SDK daemon (gaiad, simd, ...) instead of tpslab's tpsd; evm: your own geth")
	fs.StringVar(&f.denom, "denom", "", "cosmos: the test denom (default: the daemon's staking denom)")
	fs.StringVar(&f.prefix, "bech32-prefix", "", "cosmos: the address prefix (default: the daemon's)")
	fs.IntVar(&f.validators, "validators", 4, "number of validators, one OS process each")
	fs.StringVar(&f.chainID, "chain-id", "", "chain id (default tpslab, or tpslab-cosmos)")
	fs.StringVar(&f.seed, "seed", g.Seed, "genesis seed the funded accounts' keys are derived from")
	fs.Uint64Var(&f.accounts, "accounts", g.Accounts, "number of funded genesis accounts")
	fs.Uint64Var(&f.balance, "balance", g.Balance, "balance of each genesis account")
	fs.StringVar(&f.bind, "bind", "127.0.0.1", "address every node listener binds to")
	fs.DurationVar(&f.settings.TimeoutCommit, "timeout-commit", d.TimeoutCommit, "consensus timeout_commit")
	fs.DurationVar(&f.settings.TimeoutPropose, "timeout-propose", d.TimeoutPropose, "consensus timeout_propose")
	fs.IntVar(&f.settings.MempoolSize, "mempool-size", d.MempoolSize, "mempool capacity in transactions")
	fs.Int64Var(&f.settings.MempoolMaxBytes, "mempool-max-bytes", d.MempoolMaxBytes, "mempool capacity in bytes")
	fs.IntVar(&f.settings.MempoolCacheSize, "mempool-cache-size", d.MempoolCacheSize, "mempool seen-tx cache size")
	fs.Int64Var(&f.settings.MaxBlockBytes, "max-block-bytes", d.MaxBlockBytes, "consensus param block.max_bytes")
	fs.Int64Var(&f.settings.MaxBlockGas, "max-block-gas", d.MaxBlockGas, "consensus param block.max_gas (1 gas per payment; -1 = no cap)")
	fs.BoolVar(&f.settings.CreateEmptyBlocks, "create-empty-blocks", d.CreateEmptyBlocks, "produce blocks without transactions")
	fs.StringVar(&f.settings.LogLevel, "log-level", d.LogLevel, "node log level")
	fs.StringVar(&f.topology, "topology", "", "builtin: route every P2P link through an emulated one: loopback | lan | region | continent | global (docs/network.md)")
	fs.IntVar(&f.rpcNodes, "rpc-nodes", 0, "builtin: full nodes that do not validate; the load goes to them")
	fs.BoolVar(&f.clientLinks, "client-links", false, "builtin: the load generator reaches each node's RPC through an emulated link too (with --topology)")
}

func (f *netFlags) options(home string, reset bool) kinds.NetOptions {
	return kinds.NetOptions{Kind: f.kind, Ledger: f.ledger, Home: home, Validators: f.validators, ChainID: f.chainID, Seed: f.seed,
		Accounts: f.accounts, Balance: f.balance, Settings: f.settings, Bind: f.bind, Reset: reset,
		Binary: f.binary, Denom: f.denom, Prefix: f.prefix, Log: os.Stderr, Topology: f.topology, RPCNodes: f.rpcNodes, ClientLinks: f.clientLinks}
}

func netCmd(reg *kinds.Registry) *cobra.Command {
	c := &cobra.Command{Use: "net", Short: "Create, start, inspect and stop a local reference network",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.BadInputf("unknown command %q for %q, expected one of up, down, start, stop, status, check", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		}}
	var home string
	var reset bool
	var nf netFlags
	up := &cobra.Command{
		Use:   "up --home DIR",
		Short: "Create and start a network of validators on loopback",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if home == "" {
				return exitcode.BadInputf("net up: --home is required")
			}
			o := nf.options(home, reset)
			if err := reg.NetDefaults(&o, cmd.Flags().Changed); err != nil {
				return err
			}
			start := time.Now()
			n, err := reg.Up(cmd.Context(), o)
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			what := "committing blocks"
			if n.Ledger != nil {
				what = "serving payments"
			}
			fmt.Fprintf(os.Stderr, "network %s %s after %.1fs\n", n.ChainID, what, time.Since(start).Seconds())
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tRPC\tAPI\tGRPC\tETH_RPC\tP2P\tPID")
			for _, nd := range n.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", nd.Name, nd.RPC, dash(nd.API), dash(nd.GRPC), dash(nd.EthRPC), nd.P2P, nd.PID)
			}
			tw.Flush()
			if n.Links != nil {
				printLinks(n)
			}
			fmt.Fprintf(os.Stderr, "described in %s/%s; stop with `tpslab net down --home %s`\n", n.Home, testnet.NetFile, home)
			return nil
		},
	}
	nf.register(up.Flags(), reg)
	up.Flags().BoolVar(&reset, "reset", false, "stop and wipe a network already in --home")

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
	var asJSON bool
	status := &cobra.Command{
		Use: "status --home DIR", Short: "Show height, peers and mempool of each node", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := loadNet(home)
			if err != nil {
				return err
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
	for _, s := range []*cobra.Command{up, down, start, stop, status, check} {
		s.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
		s.Args = wrapArgs(s.Args)
		s.PreRun = func(*cobra.Command, []string) { warnOrphans() }
		c.AddCommand(s)
	}
	return c
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
