package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
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

// netFlags are the `net up` options, shared with `run` when it starts its own network.
type netFlags struct {
	ledger     pgnet.Options
	kind       string
	binary     string
	denom      string
	prefix     string
	validators int
	chainID    string
	seed       string
	accounts   uint64
	balance    uint64
	bind       string
	settings   testnet.Settings
}

func (f *netFlags) register(fs *pflag.FlagSet) {
	d := testnet.DefaultSettings()
	g := testnet.DefaultGenesis()
	fs.StringVar(&f.kind, "kind", "builtin", "what to run: builtin (the reference ledger) | cosmos (a Cosmos SDK chain) | evm (geth in dev mode) | ledger (the ledger service on PostgreSQL)")
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
}

func (f *netFlags) options(home string, reset bool) kinds.NetOptions {
	return kinds.NetOptions{Kind: f.kind, Ledger: f.ledger, Home: home, Validators: f.validators, ChainID: f.chainID, Seed: f.seed,
		Accounts: f.accounts, Balance: f.balance, Settings: f.settings, Bind: f.bind, Reset: reset,
		Binary: f.binary, Denom: f.denom, Prefix: f.prefix, Log: os.Stderr}
}

func netCmd() *cobra.Command {
	c := &cobra.Command{Use: "net", Short: "Create, start, inspect and stop a local reference network",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.BadInputf("unknown command %q for %q, expected one of up, down, status, check", args[0], cmd.CommandPath())
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
			if nf.kind == "builtin" && (nf.binary != "" || nf.denom != "" || nf.prefix != "") {
				return exitcode.BadInputf("net up: --binary, --denom and --bech32-prefix are for --kind cosmos")
			}
			if nf.kind == "evm" && !cmd.Flags().Changed("validators") {
				nf.validators = 1
			}
			if nf.kind == "evm" && !cmd.Flags().Changed("balance") {
				nf.balance = 0 // the kind's default: 1000 ether
			}
			start := time.Now()
			n, err := kinds.Up(cmd.Context(), nf.options(home, reset))
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			what := "committing blocks"
			if n.Kind == "ledger" {
				what = "serving payments"
			}
			fmt.Fprintf(os.Stderr, "network %s %s after %.1fs\n", n.ChainID, what, time.Since(start).Seconds())
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tRPC\tAPI\tGRPC\tP2P\tPID")
			for _, nd := range n.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", nd.Name, nd.RPC, dash(nd.API), dash(nd.GRPC), nd.P2P, nd.PID)
			}
			tw.Flush()
			fmt.Fprintf(os.Stderr, "described in %s/%s; stop with `tpslab net down --home %s`\n", n.Home, testnet.NetFile, home)
			return nil
		},
	}
	nf.register(up.Flags())
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
			st := kinds.Status(cmd.Context(), n)
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(st)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tRUNNING\tHEIGHT\tPEERS\tMEMPOOL_TXS\tMEMPOOL_BYTES\tERROR")
			for _, s := range st {
				fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%d\t%s\n", s.Name, s.Running, s.Height, s.Peers, s.MempoolTxs, s.MempoolBytes, s.Err)
			}
			return tw.Flush()
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
			a := kinds.Check(cmd.Context(), n)
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
	for _, s := range []*cobra.Command{up, down, status, check} {
		s.Flags().StringVar(&home, "home", "", "network home directory (holds net.json)")
		s.Args = wrapArgs(s.Args)
		s.PreRun = func(*cobra.Command, []string) { warnOrphans() }
		c.AddCommand(s)
	}
	return c
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
