package cli

import (
	"context"
	"fmt"
	"github.com/tpslab/tpslab/internal/dashboard"
	"github.com/tpslab/tpslab/internal/report"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/exporter"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sysmon"
	"github.com/tpslab/tpslab/internal/threshold"
)

// scenarioFlags maps named flags onto scenario fields; `--set path=value`
// reaches every other field.
var scenarioFlags = []scenarioFlag{
	{"target", "target.kind", "system kind"}, // the registered kinds are listed by register
	{"gas", "workload.gas", "gas limit per transfer"},
	{"funder-key", "workload.funder_key", "file with a funded key (hex or mnemonic) that funds the senders first; never printed"},
	{"reuse-wallets", "workload.reuse_wallets", "skip funding when the wallets already hold funds"},
	{"senders-offset", "workload.senders_offset", "first sending account (runs with disjoint senders can share a network)"},
	{"net-home", "target.net_home", "use the network that tpslab net up --home DIR started"},
	{"trace", "load.trace", "replay a recorded arrival trace (CSV; tpslab record writes one), open model"},
	{"trace-speed", "load.trace_speed", "replay the trace this many times faster (default 1)"},
	{"trace-rate", "load.trace_rate", "replay the trace at this mean rate, keeping its shape (default: its own)"},
	{"broadcast", "target.broadcast", "broadcast_tx_ mode: sync | async"},
	{"confirm", "target.confirm", "how commits are read: websocket | poll"},
	{"validators", "network.validators", "validators of the built-in network tpslab starts"},
	{"accounts", "network.accounts", "funded accounts of the built-in network"},
	{"state", "network.state", "pre-loaded accounts beyond the funded ones, payments drawn to them too (builtin, ledger)"},
	{"timeout-commit", "network.timeout_commit", "timeout_commit of the built-in network"},
	{"topology", "network.topology", "emulated links between the built-in network's nodes: loopback | lan | region | continent | global"},
	{"rpc-nodes", "network.rpc_nodes", "full nodes of the built-in network that take the load and gossip it to the validators"},
	{"client-links", "network.client_links", "put the load generator behind emulated links to the nodes too (with --topology)"},
	{"node-cpu", "network.node_cpu", "each node of the network tpslab starts in a cgroup with this CPU limit: 0.5, 500m, or node1=250m for one (root)"},
	{"node-memory", "network.node_memory", "each node's memory limit, as --node-cpu (e.g. 512Mi, node0=1Gi)"},
	{"model", "load.model", "open (arrival rate) | closed (users)"},
	{"rate", "load.rate", "open model: payments offered per second"},
	{"arrival", "load.arrival", "open model: uniform | poisson"},
	{"duration", "load.duration", "length of the load (constant rate or closed model)"},
	{"warmup", "load.warmup", "start of the load excluded from steady-state figures"},
	{"drain", "load.drain", "longest wait for in-flight payments after the load"},
	{"mempool-wait", "target.mempool_wait", "before the load, wait up to this long for the target's mempool to empty (an earlier run's payments)"},
	{"users", "load.users", "closed model: number of users"},
	{"ramp-up", "load.ramp_up", "closed model: time to start all users"},
	{"wait-for", "load.wait_for", "closed model: ack | commit"},
	{"pacing", "load.pacing", "closed model: time between a user's payments (constant pacing)"},
	{"think", "load.think", "closed model: pause after each result"},
	{"connections", "load.connections", "concurrent submissions (HTTP keep-alive connections) when payments go one per request"},
	{"max-connections", "load.max_connections", "connections may grow up to this while they wait for answers and payments wait for them (0: 8 times --connections)"},
	{"send-interval", "load.send_interval", "open model: how long due payments gather to leave together in one batch per endpoint: auto (about 20 payments, at most 20ms), a duration, or 0 (each at its own time)"},
	{"workload", "workload.kind", "payment | raw (unsigned key=value, e.g. for CometBFT's kvstore) | erc20 (evm)"},
	{"mode", "workload.mode", "presigned | live"},
	{"senders", "workload.senders", "accounts that send"},
	{"window", "workload.window", "payments in flight per sender"},
	{"padding", "workload.padding", "bytes of padding per transaction"},
	{"sender-dist", "workload.sender_choice.dist", "uniform | zipf | hot"},
	{"recipient-dist", "workload.recipient_choice.dist", "uniform | zipf | hot"},
	{"commit-timeout", "commit_timeout", "a payment not committed within this is expired"},
	{"seed", "seed", "seed of random choices"},
	{"abort-on-fail", "abort_on_fail", "end the load as soon as a threshold with a value each second has failed for longer than --abort-grace after the warm-up (exit 1)"},
	{"health", "health", "add the health criteria of a set to the thresholds: default (docs/health.md)"},
	{"abort-grace", "abort_grace", "how long a threshold may fail before --abort-on-fail ends the load"},
	{"out", "out", "run directory (default runs/<timestamp>)"},
}

type scenarioOpts struct {
	sets        []string
	endpoints   []string
	nodeMetrics []string
	profile     string
	keep        bool
	thresholds  []string
	faults      []string
	fs          *pflag.FlagSet
	kinds       *kinds.Registry
	table       []scenarioFlag // scenarioFlags and the kinds' own
}

func (o *scenarioOpts) register(fs *pflag.FlagSet, reg *kinds.Registry) {
	o.fs, o.kinds = fs, reg
	def := scenario.Default()
	if err := reg.Resolve(&def, true); err != nil {
		panic(err) // the registry is empty: a programming error
	}
	kindsHelp := ": " + strings.Join(reg.Names(), " | ") + " (tpslab kinds says what each is)"
	o.table = withKindFlags(scenarioFlags, reg, false)
	registerScenarioFlags(fs, o.table, &def, map[string]string{"target": kindsHelp})
	fs.StringArrayVar(&o.endpoints, "endpoint", nil, "RPC URL of the target, repeatable; given, tpslab starts no network")
	fs.StringVar(&o.profile, "profile", "", "Go profiles of the local nodes over the steady window: cpu, allocs or cpu,allocs (profile)")
	fs.StringArrayVar(&o.nodeMetrics, "node-metrics", nil, "Prometheus URL of a remote CometBFT node, repeatable (local nodes are read anyway)")
	fs.StringArrayVar(&o.sets, "set", nil, "override any scenario field: --set load.rate=2000")
	fs.BoolVar(&o.keep, "keep-network", false, "leave the built-in network running after the run")
	fs.StringArrayVar(&o.faults, "fault", nil, "a fault during the load, repeatable: AT:ACTION:TARGET[:FOR], e.g. 10s:crash:node1:8s, 10s:pause:node2:5s, 15s:partition:node0+node1:10s, 5s:delay:node3:200ms, 5s:bandwidth:node3:1mbit (faults)")
	fs.StringArrayVar(&o.thresholds, "threshold", nil, "pass/fail condition, repeatable: 'committed_tps>=1000', 'p99_commit<=2s', 'reject_rate<1%'")
	setGroup(fs, "target", "endpoint", "node-metrics")
	setGroup(fs, "network", "keep-network")
	setGroup(fs, "run", "profile", "set", "fault", "threshold", "health", "abort-on-fail", "abort-grace")
}

// resolve reads the file (if any) over the defaults, then applies flags.
func (o *scenarioOpts) resolve(args []string) (scenario.Scenario, error) {
	sc := scenario.Default()
	if len(args) == 1 {
		var err error
		if sc, err = scenario.ReadFile(args[0]); err != nil {
			return sc, exitcode.Wrap(exitcode.BadInput, notAnAddress(args[0], err))
		}
	}
	if err := applyScenarioFlags(o.fs, o.table, &sc); err != nil {
		return sc, err
	}
	if len(o.endpoints) > 0 {
		sc.Target.Endpoints = o.endpoints
	}
	if len(o.nodeMetrics) > 0 {
		sc.Target.NodeMetrics = o.nodeMetrics
	}
	if o.profile != "" {
		sc.Profile = strings.Split(o.profile, ",")
	}
	if o.keep {
		sc.Network.Keep = true
	}
	sc.Thresholds = append(sc.Thresholds, o.thresholds...)
	for _, f := range o.faults {
		ft, err := scenario.ParseFault(f)
		if err != nil {
			return sc, exitcode.Wrap(exitcode.BadInput, err)
		}
		sc.Faults = append(sc.Faults, ft)
	}
	for _, s := range o.sets {
		path, value, ok := strings.Cut(s, "=")
		if !ok {
			return sc, exitcode.BadInputf("--set: %q, expected path=value such as load.rate=2000", s)
		}
		if err := scenario.Set(&sc, path, value); err != nil {
			return sc, exitcode.BadInputf("--set: %v", err)
		}
	}
	if most := maxLoad(); most > 0 {
		if f := scenario.Compress(&sc, most); f < 1 {
			fmt.Fprintf(os.Stderr, "%s=%s: the load is compressed in time, x%.3g (its faults with it; rates unchanged)\n", scenario.MaxLoadEnv, most, f)
		}
	}
	// Endpoints given by flag to a kind that would start a network measure
	// them as its Remote kind (the built-in ledger's: any CometBFT chain,
	// the ledger still recognised by its queries).
	if err := o.kinds.Resolve(&sc, len(o.endpoints) == 0 || o.fs.Changed("target")); err != nil {
		return sc, err
	}
	if err := o.kinds.Validate(&sc); err != nil {
		return sc, exitcode.Wrap(exitcode.BadInput, err)
	}
	return sc, nil
}

// maxLoad is $TPSLAB_MAX_LOAD: the longest load a quick check runs (0:
// no cap; a value that is not a duration is no cap either).
func maxLoad() time.Duration {
	d, err := time.ParseDuration(os.Getenv(scenario.MaxLoadEnv))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// notAnAddress explains a scenario file that is not there but reads as
// host:port: a flag's value given after a space (--dashboard ADDR).
func notAnAddress(arg string, err error) error {
	if _, statErr := os.Stat(arg); statErr == nil {
		return err
	}
	if _, port, splitErr := net.SplitHostPort(arg); splitErr == nil && port != "" {
		return fmt.Errorf("SCENARIO.yaml: %q is no file but reads as an address: give it to its flag with =, as in --dashboard=%s", arg, arg)
	}
	return err
}

// scenarioFlag maps a named flag onto one scenario field.
type scenarioFlag struct{ flag, path, help string }

// withKindFlags is table and the flags the kinds declare (netUp: those
// `net up` takes).
func withKindFlags(table []scenarioFlag, reg *kinds.Registry, netUp bool) []scenarioFlag {
	out := append([]scenarioFlag{}, table...)
	for _, f := range reg.Flags(netUp) {
		out = append(out, scenarioFlag{f.Name, f.Path, f.Help})
	}
	return out
}

// registerScenarioFlags declares each flag of table, typed, with def's value
// as its default; extra adds to a flag's help.
func registerScenarioFlags(fs *pflag.FlagSet, table []scenarioFlag, def *scenario.Scenario, extra map[string]string) {
	for _, f := range table {
		v, typ, err := scenario.Get(def, f.path)
		if err != nil {
			panic(fmt.Sprintf("flag --%s: %v", f.flag, err)) // a flag mapped to no field: a programming error
		}
		fs.Var(&scenarioValue{typ: typ, v: v}, f.flag, f.help+extra[f.flag]+" ("+f.path+")")
		setGroup(fs, groupOfPath(f.path), f.flag)
		if v == "0" || v == "0s" || v == "false" || v == "[]" || v == "" {
			fs.Lookup(f.flag).DefValue = "" // --help shows no default for a zero value
		}
		if typ == "bool" {
			fs.Lookup(f.flag).NoOptDefVal = "true" // a switch: --flag alone means true
		}
	}
}

// applyScenarioFlags sets the fields of the flags of table the user gave.
func applyScenarioFlags(fs *pflag.FlagSet, table []scenarioFlag, sc *scenario.Scenario) error {
	for _, f := range table {
		if fl := fs.Lookup(f.flag); fl != nil && fl.Changed {
			if err := scenario.Set(sc, f.path, fl.Value.String()); err != nil {
				return exitcode.BadInputf("--%s: %v", f.flag, err)
			}
		}
	}
	return nil
}

// scenarioValue is a flag that sets one scenario field: its type and
// default are the field's (shown by --help); the text given is applied
// with scenario.Set, over the scenario file, when the flag was set.
type scenarioValue struct {
	typ, v string
	items  []string // a list given item by item (--api-endpoint a --api-endpoint b)
}

func (s *scenarioValue) String() string { return s.v }

func (s *scenarioValue) Set(v string) error {
	if s.typ != "list" || strings.HasPrefix(strings.TrimSpace(v), "[") {
		s.v = v
		return nil
	}
	s.items = append(s.items, strconv.Quote(v)) // a JSON string is a YAML one
	s.v = "[" + strings.Join(s.items, ", ") + "]"
	return nil
}
func (s *scenarioValue) Type() string { return s.typ }

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runCmd(reg *kinds.Registry) *cobra.Command {
	var so scenarioOpts
	var repeat int
	var sameNetwork bool
	var seg segmentFlags
	c := &cobra.Command{
		Use:   "run [SCENARIO.yaml]",
		Short: "Run a load scenario and measure committed throughput and latency",
		Long: `Run a load scenario. With no file and no --endpoint it starts a 4-validator
built-in network in a temporary home, offers 1000 presigned payments per second
for 30 s, prints the summary, writes the result and stops the network.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := so.resolve(args)
			if err != nil {
				return err
			}
			if repeat < 1 {
				return exitcode.BadInputf("--repeat: %d, expected at least 1", repeat)
			}
			if err := checkFormat(summaryFormat); err != nil {
				return err
			}
			if err := output.check(); err != nil {
				return err
			}
			if metricsAddr != "" {
				if _, _, err := net.SplitHostPort(metricsAddr); err != nil {
					return exitcode.BadInputf("--metrics-addr: %q, expected host:port such as 127.0.0.1:9464", metricsAddr)
				}
			}
			if seg.segments < 1 || seg.segments > 1024 {
				return exitcode.BadInputf("--segments: %d, expected 1..1024", seg.segments)
			}
			// Local segments share this machine's cores: more processes than
			// a few per core only compete for them (and 1,000 of them could
			// not even start and stop in time to leave a merged result).
			if most := localSegmentsMax(); seg.kubeconfig == "" && seg.segments > most {
				return exitcode.BadInputf("--segments: %d, expected 1..%d on this machine (%d cores, 4 segments a core at most); spread wider over machines with --kubeconfig", seg.segments, most, runtime.NumCPU())
			}
			if sc.AbortOnFail && (seg.segments > 1 || seg.kubeconfig != "") {
				// Each segment sees only its share; no one judges the whole
				// each second yet.
				return exitcode.BadInputf("--abort-on-fail: with --segments %d, expected a run in one process (segments are judged once merged)", seg.segments)
			}
			if seg.kubeconfig != "" {
				if repeat > 1 {
					return exitcode.BadInputf("--kubeconfig: with --repeat %d; expected one of them", repeat)
				}
				return runSegments(cmd, reg, sc, args, &seg)
			}
			if seg.segments > 1 {
				if repeat > 1 {
					return exitcode.BadInputf("--segments: with --repeat %d; expected one of them", repeat)
				}
				return runSegments(cmd, reg, sc, args, &seg)
			}
			if repeat > 1 {
				return runRepeated(cmd, reg, sc, repeat, sameNetwork)
			}
			return runOnce(cmd, reg, sc, &seg)
		},
	}
	so.register(c.Flags(), reg)
	c.Flags().IntVar(&repeat, "repeat", 1, "run the scenario N times (OUT/rep-1 .. rep-N), each on a fresh built-in network unless --same-network")
	seg.register(c.Flags())
	c.Flags().BoolVar(&sameNetwork, "same-network", false, "with --repeat: start the built-in network once for all repetitions")
	addFormatFlag(c, &summaryFormat)
	output.register(c)
	c.Flags().StringVar(&dashboardAddr, "dashboard", "", "serve a live web page of the run: --dashboard alone on "+dashboard.DefaultAddr+" (a free port when taken), or --dashboard=HOST:PORT")
	c.Flags().Lookup("dashboard").NoOptDefVal = dashboard.DefaultAddr
	c.Flags().BoolVar(&linger, "linger", false, "with --dashboard: keep serving the live page after the run, until Ctrl-C (without it: tpslab serve shows the run again)")
	c.Flags().StringVar(&metricsAddr, "metrics-addr", "", "serve live Prometheus metrics on host:port (e.g. 127.0.0.1:9464) while the run goes")
	setGroup(c.Flags(), "run", "repeat", "same-network")
	setGroup(c.Flags(), "output", "summary-format", "summary", "progress", "quiet", "dashboard", "linger", "metrics-addr", "raw-latencies")
	setGroup(c.Flags(), "segments", "segments", "kubeconfig", "namespace", "image", "coordinator-addr")
	c.Example = `  # 1,000 signed payments/s for 30 s on a fresh 4-validator built-in network
  tpslab run
  # a shorter run at another rate, with its live page (the = matters)
  tpslab run --rate 500 --duration 20s --dashboard=127.0.0.1:5665
  # the network tpslab net up started, through Cosmos REST, at a rate it can commit
  tpslab run --net-home /tmp/sdk --via rest --rate 200 --duration 20s
  # a scenario file, one field overridden, a pass/fail condition
  tpslab run examples/zipf-merchants.yaml --set load.duration=20s --threshold 'p99_commit<=2s'
  # an endpoint tpslab did not start (any CometBFT chain)
  tpslab run --endpoint http://127.0.0.1:26657 --workload raw --rate 200`
	groupedHelp(c)
	return c
}

// metricsAddr is --metrics-addr: where a run serves its live metrics;
// summaryFormat is --summary-format.
var metricsAddr, summaryFormat string

// linger is --linger: the live page stays after the run until Ctrl-C.
var linger bool

// dashboardAddr is --dashboard: where a run serves its live page ("": none).
var dashboardAddr string

// FitProcs lets `run` fit GOMAXPROCS to its load. The tpslab program sets
// it; a process that runs the CLI beside other work (a test that hosts its
// network's nodes) keeps every core.
var FitProcs bool

// runOnce runs sc, prints its summary and writes its HTML report.
func runOnce(cmd *cobra.Command, reg *kinds.Registry, sc scenario.Scenario, seg *segmentFlags) error {
	opts := runner.Options{Out: sc.Out, Log: runLog(), Version: Version, Kinds: reg, Command: "run"}
	if seg != nil {
		if err := seg.asSegment(&sc, &opts); err != nil {
			return err
		}
	}
	if l := sc.Load; l.Model == scenario.Open && l.Trace == "" && FitProcs {
		// A live page or a metrics endpoint serves others meanwhile: a P
		// of their own.
		least := 1
		if dashboardAddr != "" || metricsAddr != "" {
			least = 2
		}
		peak := l.Profile().Peak() * l.Segment.Share()
		if n := sysmon.FitProcs(peak, least); n > 0 && n < runtime.NumCPU() && output.summary == "full" {
			// The result records it (generator.procs); the first screen
			// of a default run leaves it out.
			fmt.Fprintf(os.Stderr, "tpslab runs on %d of %d cores (GOMAXPROCS): a peak of %.0f tx/s needs no more; set GOMAXPROCS to choose\n", n, runtime.NumCPU(), peak)
		}
	}
	opts.Progress, opts.ProgressEvery, opts.ProgressInPlace = output.progressTo()
	if opts.ProgressInPlace {
		opts.ProgressWidth = terminalWidthOf(os.Stderr)
	}
	if metricsAddr != "" {
		if opts.Out == "" {
			opts.Out = runner.DefaultOut()
		}
		ex := exporter.New(filepath.Base(opts.Out))
		if err := ex.Listen(metricsAddr); err != nil {
			return exitcode.BadInputf("--metrics-addr: %v", err)
		}
		defer ex.Close()
		fmt.Fprintf(os.Stderr, "live metrics: http://%s/metrics\n", ex.Addr())
		opts.Observers = append(opts.Observers, ex)
	}
	var dash *dashboard.Dashboard
	if dashboardAddr != "" {
		if opts.Out == "" {
			opts.Out = runner.DefaultOut()
		}
		d, err := startDashboard(filepath.Base(opts.Out), threshold.Of(&sc))
		if err != nil {
			return err
		}
		defer d.Close()
		defer d.Linger(3 * time.Second)
		opts.Observers = append(opts.Observers, d)
		dash = d
	}
	res, err := runner.Run(cmd.Context(), sc, opts)
	if dash != nil && linger && cmd.Context().Err() == nil {
		// k6's --linger: the page stays until Ctrl-C (after the summary).
		defer func() {
			say(os.Stderr, "the live page stays at "+dash.URL()+" until Ctrl-C (--linger)")
			<-cmd.Context().Done()
		}()
	} else if dash != nil {
		// The page's server ends with the run: say how to see it again.
		again := seeAgain(opts.Out)
		dash.SetAfter(again)
		defer say(os.Stderr, again)
	}
	if seg != nil && seg.finish != nil {
		defer seg.finish()
	}
	if res != nil && res.NeverLoaded() && err != nil {
		return err // one line: why (no figures to summarise)
	}
	if res != nil {
		showResult(res, 0)
	}
	return err
}

// runLog is where a run's lines go: stderr, wrapped at its width when it
// is a terminal.
func runLog() io.Writer {
	if !isTerminal(os.Stderr) {
		return os.Stderr
	}
	return &termLines{w: os.Stderr, width: terminalWidthOf(os.Stderr)}
}

// say writes line to f, wrapped at its width when it is a terminal.
func say(f *os.File, line string) {
	width := 0
	if isTerminal(f) {
		width = terminalWidthOf(f)
	}
	fmt.Fprintln(f, wrapLine(line, width))
}

// seeAgain says how to see a run's page once its live dashboard is gone.
func seeAgain(out string) string {
	return fmt.Sprintf("see the page again: tpslab serve %s, then http://%s/run/%s/", filepath.Dir(out), dashboard.DefaultAddr, filepath.Base(out))
}

// showResult is the end of every run, single or merged from segments:
// the summary, where the result is, and its report written.
func showResult(res *report.Result, segments int) {
	paths := os.Stdout
	if summaryFormat == "markdown" {
		paths = os.Stderr // stdout holds the markdown alone
	}
	printRunSummary(res, summaryFormat, segments > 0)
	width := 0
	if isTerminal(paths) {
		width = terminalWidthOf(paths)
	}
	line := "result: " + filepath.Join(res.Dir, "result.json")
	if segments > 0 {
		line += fmt.Sprintf(" (merged from %d segments)", segments)
	}
	// No blank line before it: the summary's health line took its place
	// on the first screen (25 lines, issue 54).
	fmt.Fprintln(paths, wrapLine(line, width))
	if path, herr := campaign.WriteReport(res.Dir); herr == nil {
		line := "report: " + path
		if output.summary != "full" && summaryFormat != "markdown" {
			line += fmt.Sprintf("  (every figure: tpslab summary %s --summary full)", res.Dir)
			if width > 0 && len(line) > width {
				line = "report: " + path + " (every figure: --summary full)"
			}
		}
		fmt.Fprintln(paths, wrapLine(line, width))
	} else {
		fmt.Fprintf(os.Stderr, "report: %v\n", herr)
	}
}

// runRepeated runs sc n times into OUT/rep-i (campaign.Repeat).
func runRepeated(cmd *cobra.Command, reg *kinds.Registry, sc scenario.Scenario, n int, sameNetwork bool) error {
	base, err := campaign.Repeat(cmd.Context(), sc, n, sameNetwork, runner.Options{Log: os.Stderr, Kinds: reg, Command: "run"}, os.Stderr,
		func(_ context.Context, rc scenario.Scenario) error { return runOnce(cmd, reg, rc, nil) })
	if err == nil || exitcode.Of(err) == exitcode.ThresholdsFailed {
		fmt.Printf("\n%d repetitions in %s; compare sets with `tpslab compare %s OTHER`\n", n, base, base)
	}
	return err
}

func validateCmd(reg *kinds.Registry) *cobra.Command {
	var so scenarioOpts
	c := &cobra.Command{
		Use:   "validate SCENARIO.yaml",
		Short: "Check a scenario file (and flags) without running it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := so.resolve(args); err != nil {
				return err
			}
			fmt.Printf("%s: ok\n", args[0])
			return nil
		},
	}
	so.register(c.Flags(), reg)
	return c
}

// localSegmentsMax is the most local segments a run may start here.
func localSegmentsMax() int { return max(8, 4*runtime.NumCPU()) }

// startDashboard serves the live page at --dashboard and says where.
func startDashboard(run string, thresholds []string) (*dashboard.Dashboard, error) {
	d, err := dashboard.New(run, thresholds)
	if err != nil {
		return nil, exitcode.BadInputf("thresholds: %v", err)
	}
	if err := d.Listen(dashboardAddr); err != nil {
		return nil, exitcode.BadInputf("--dashboard: %v, expected a free host:port such as %s", err, dashboard.DefaultAddr)
	}
	fmt.Fprintf(os.Stderr, "live dashboard: %s\n", d.URL())
	return d, nil
}
