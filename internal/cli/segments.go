package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/tpslab/tpslab/internal/dashboard"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/segment"
	"github.com/tpslab/tpslab/internal/testnet"
)

// segmentFlags are run's flags for a load spread over several generators.
type segmentFlags struct {
	segments    int    // --segments N: this process is the controller
	segment     string // --segment I/N: this process is one of them
	coordinator string // --coordinator URL: where segment I/N meets the others
	raw         bool   // --raw-latencies
	kubeconfig  string
	namespace   string
	image       string
	listen      string // --coordinator-addr: where pods reach the controller
	stream      bool   // --stream-results: send the run directory to the coordinator
	finish      func() // sends what is left, after the run
}

func (f *segmentFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.segments, "segments", 1, "spread the load over N generators (local processes, or the pods of an Indexed Job with --kubeconfig), each sending its share from its own senders, and merge their results exactly")
	fs.StringVar(&f.segment, "segment", "", "run as segment I/N of a spread load (tpslab run --segments starts them)")
	fs.StringVar(&f.coordinator, "coordinator", "", "with --segment: the controller's coordinator URL")
	fs.BoolVar(&f.raw, "raw-latencies", false, "also write every committed payment's latency to latencies.csv (t,phase,commit_us)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "with --segments: run the segments as the pods of an Indexed Job on this cluster (tpslab cluster up writes one)")
	fs.StringVar(&f.namespace, "namespace", "default", "with --kubeconfig: the Job's namespace")
	fs.StringVar(&f.image, "image", "", "with --kubeconfig: tpslab's image (default: the local cluster's)")
	fs.StringVar(&f.listen, "coordinator-addr", "", "with --kubeconfig: host:port where the pods reach this controller (default: the local cluster's address for this machine)")
	fs.BoolVar(&f.stream, "stream-results", false, "with --segment: send the run directory to the coordinator as it grows")
	fs.MarkHidden("segment")
	fs.MarkHidden("coordinator")
	fs.MarkHidden("stream-results")
}

// parseSegment reads I/N.
func parseSegment(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, exitcode.BadInputf("--segment: %q, expected I/N with 0 <= I < N, e.g. 0/2", s)
	}
	return i, n, nil
}

// asSegment makes opts run sc as one segment: its share of the load, its
// start agreed with the coordinator, its histograms streamed.
func (f *segmentFlags) asSegment(sc *scenario.Scenario, opts *runner.Options) error {
	if f.segment == "" {
		if f.coordinator != "" {
			return exitcode.BadInputf("--coordinator: given without --segment")
		}
		if f.raw {
			return f.rawOnly(sc, opts)
		}
		return nil
	}
	i, n, err := parseSegment(f.segment)
	if err != nil {
		return err
	}
	if f.coordinator == "" {
		return exitcode.BadInputf("--segment: needs --coordinator URL (tpslab run --segments starts segments with it)")
	}
	if err := sc.ForSegment(i, n); err != nil {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	if opts.Out == "" {
		opts.Out = runner.DefaultOut()
	}
	w := sc.Workload
	info := report.SegmentInfo{Index: i, Count: n, Senders: fmt.Sprintf("%d..%d", w.SendersOffset, w.SendersOffset+w.Senders-1)}
	rec, err := segment.NewRecorder(opts.Out, info, f.raw)
	if err != nil {
		return exitcode.BadInputf("out: %v", err)
	}
	cl := &segment.Client{URL: f.coordinator, Index: i}
	rec.Client = cl
	// A segment whose controller died (killed, its machine gone) stops as
	// if interrupted, writing why: it must not go on loading the network
	// without the controller's sender lock (issue 34).
	watch, stopWatch := context.WithCancel(context.Background())
	go cl.Watch(watch, 5*time.Second, func(err error) {
		why := fmt.Sprintf("segment %d: the controller's coordinator at %s has not answered for 5 s (%v): stopping as interrupted", i, f.coordinator, err)
		fmt.Fprintln(os.Stderr, why)
		os.WriteFile(filepath.Join(opts.Out, "controller-lost.txt"), []byte(why+"\n"), 0o644)
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	})
	opts.Observers = append(opts.Observers, rec)
	f.finish = stopWatch
	if f.stream {
		m := &segment.Mirror{Client: cl, Dir: opts.Out}
		ctx, cancel := context.WithCancel(context.Background())
		go m.Run(ctx)
		f.finish = func() {
			stopWatch()
			cancel()
			if err := m.Flush(); err != nil {
				fmt.Fprintf(os.Stderr, "segment %d: sending its results: %v\n", i, err)
			}
		}
	}
	opts.Gate = func(ctx context.Context) (at_ time.Time, err error) {
		clk, err := cl.Measure(ctx)
		if err != nil {
			return at_, err
		}
		rec.Info.OffsetBeforeMs, rec.Info.RTTMs = clk.OffsetMs, clk.RTTMs
		return cl.Ready(ctx, clk)
	}
	return nil
}

func (f *segmentFlags) rawOnly(sc *scenario.Scenario, opts *runner.Options) error {
	if opts.Out == "" {
		opts.Out = runner.DefaultOut()
	}
	rec, err := segment.NewRecorder(opts.Out, report.SegmentInfo{}, true)
	if err != nil {
		return exitcode.BadInputf("out: %v", err)
	}
	opts.Observers = append(opts.Observers, rec)
	return nil
}

// childArgs are this run's flags for a segment: every flag the user gave,
// but those the controller sets itself.
func childArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	drop := map[string]bool{"segments": true, "out": true, "net-home": true, "threshold": true, "metrics-addr": true,
		"kubeconfig": true, "namespace": true, "image": true, "coordinator-addr": true, "repeat": true, "same-network": true, "keep-network": true, "summary-format": true, "summary": true, "progress": true, "quiet": true, "dashboard": true}
	var out []string
	fs.Visit(func(fl *pflag.Flag) {
		if drop[fl.Name] {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+fl.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	for _, a := range args {
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

// runSegments runs sc spread over n local processes and merges them.
func runSegments(cmd *cobra.Command, reg *kinds.Registry, sc scenario.Scenario, args []string, f *segmentFlags) error {
	if f.segment != "" {
		return exitcode.BadInputf("--segments: a segment (--segment %s) cannot spread its load again", f.segment)
	}
	// The same checks a segment makes, before anything starts.
	if err := checkSegments(sc, f.segments); err != nil {
		return err
	}
	out, err := segmentsOut(sc)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	base := runner.Options{Log: os.Stderr, Version: Version, Kinds: reg, Command: "run --segments"}
	stop, err := runner.SharedNetwork(ctx, &sc, base)
	if err != nil {
		return err
	}
	defer stop()
	release, err := lockSenders(sc)
	if err != nil {
		return err
	}
	defer release()
	child, err := childArgs(cmd.Flags(), args)
	if err != nil {
		return exitcode.BadInputf("%v", err)
	}
	if sc.Target.NetHome != "" {
		child = append(child, "--net-home="+sc.Target.NetHome)
	}
	coord, err := segment.NewCoordinator("127.0.0.1:0", f.segments)
	if err != nil {
		return err
	}
	defer coord.Close()
	fl, err := segment.StartFaults(ctx, sc.Faults, sc.Target.NetHome, coord)
	if err != nil {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	dash, stopDash, err := liveSegments(ctx, out, f.segments, sc)
	if err != nil {
		return err
	}
	defer stopDash()
	fmt.Fprintf(os.Stderr, "spreading the load over %d local segments; coordinator %s\n", f.segments, coord.URL())
	dirs, infos, errs := segment.Local{Binary: bin, Args: child, Out: out, N: f.segments, Log: os.Stderr}.Run(ctx, coord.URL())
	fl.Stop()
	var failed []string
	for i, e := range errs {
		if e != nil && !isThresholdExit(e) {
			failed = append(failed, fmt.Sprintf("segment %d: %v", i, e))
		}
	}
	return finishSegments(cmd, out, dirs, infos, sc, failed, fl, dash)
}

// liveSegments serves --dashboard for a segmented run: the segments'
// series, in their folders under out as they write them (local processes)
// or as the coordinator receives them (pods), merged. stop lets a watching
// page fetch the verdict, then stops serving.
func liveSegments(ctx context.Context, out string, n int, sc scenario.Scenario) (*dashboard.Dashboard, func(), error) {
	if dashboardAddr == "" {
		return nil, func() {}, nil
	}
	dash, err := startDashboard(filepath.Base(out), sc.Thresholds)
	if err != nil {
		return nil, nil, err
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = segment.Dir(out, i)
	}
	tailCtx, stopTail := context.WithCancel(ctx)
	go dash.Tail(tailCtx, dirs)
	return dash, func() {
		stopTail()
		dash.Linger(3 * time.Second)
		dash.Close()
	}, nil
}

// finishSegments merges the segments' directories into out, prints the
// summary and writes the report.
func finishSegments(cmd *cobra.Command, out string, dirs []string, infos []report.SegmentInfo, sc scenario.Scenario, failed []string, fl *segment.Faults, dash *dashboard.Dashboard) error {
	red := sc
	red.Workload.GenesisSeed, red.Workload.WalletSeed, red.Network.Seed = "", "", ""
	res, err := segment.Merge(out, dirs, red, sc.Thresholds, infos, fl)
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("merging the segments: %v (their own results are in %s)", err, filepath.Join(out, "segments")))
	}
	if dash != nil {
		dash.Result(res, true)
	}
	printRunSummary(res, summaryFormat, true)
	fmt.Fprintf(os.Stderr, "\nresult: %s (merged from %d segments)\n", filepath.Join(out, "result.json"), len(dirs))
	if path, herr := campaign.WriteReport(out); herr == nil {
		fmt.Fprintf(os.Stderr, "report: %s\n", path)
	} else {
		fmt.Fprintf(os.Stderr, "report: %v\n", herr)
	}
	if len(failed) > 0 {
		return exitcode.Wrap(exitcode.TargetFailed, errors.New(strings.Join(failed, "; ")))
	}
	if res.Summary.Lost > 0 {
		return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%d payments lost: accepted, then neither committed nor expired", res.Summary.Lost))
	}
	for _, th := range res.Thresholds {
		if !th.OK {
			return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("threshold failed: %s (actual %s)", th.Expr, th.Actually()))
		}
	}
	return nil
}

func isThresholdExit(err error) bool {
	var ee interface{ ExitCode() int }
	return errors.As(err, &ee) && ee.ExitCode() == int(exitcode.ThresholdsFailed)
}

// lockSenders holds the load lock of the network under test for all the
// segments' senders (each segment then sends from its part unlocked).
func lockSenders(sc scenario.Scenario) (func(), error) {
	if sc.Target.NetHome == "" || sc.Workload.Kind == "raw" {
		return func() {}, nil
	}
	lk, err := testnet.LockSenders(sc.Target.NetHome, sc.Workload.SendersOffset, sc.Workload.Senders)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return lk.Release, nil
}

// runOnKubernetes runs sc's segments as an Indexed Job and merges them.
func runOnKubernetes(cmd *cobra.Command, reg *kinds.Registry, sc scenario.Scenario, args []string, f *segmentFlags) error {
	if sc.Target.NetHome == "" && len(sc.Target.Endpoints) == 0 {
		return exitcode.BadInputf("--kubeconfig: the segments run in pods: give them a network they can reach (--net-home of a network from `net up --kubeconfig`, or --endpoint)")
	}
	if err := checkSegments(sc, f.segments); err != nil {
		return err
	}
	k := segment.Kube{Kubeconfig: f.kubeconfig, Namespace: f.namespace, Image: f.image, N: f.segments, Log: os.Stderr}
	if _, err := os.Stat(k.Kubeconfig); err != nil {
		return exitcode.BadInputf("--kubeconfig: %v", err)
	}
	local := cluster.ForKubeconfig(k.Kubeconfig)
	if k.Image == "" {
		if local == nil {
			return exitcode.BadInputf("--image: required for a cluster that is not tpslab's local one (docs/kubernetes.md)")
		}
		k.Image = local.Image
	}
	listen := f.listen
	if listen == "" {
		if local == nil {
			return exitcode.BadInputf("--coordinator-addr: required for a cluster that is not tpslab's local one: host:port this machine can listen on and the pods can reach")
		}
		listen = local.HostIP() + ":0"
	}
	if sc.Target.NetHome != "" {
		n, err := testnet.Load(sc.Target.NetHome)
		if err != nil {
			return exitcode.BadInputf("--net-home: %v", err)
		}
		if n.Kubernetes == nil {
			return exitcode.BadInputf("--net-home: %s runs on this machine, not in the cluster; its nodes are not reachable from pods (start it with net up --kubeconfig)", sc.Target.NetHome)
		}
		if k.NetJSON, err = os.ReadFile(filepath.Join(sc.Target.NetHome, testnet.NetFile)); err != nil {
			return err
		}
	}
	if len(args) == 1 {
		b, err := os.ReadFile(args[0])
		if err != nil {
			return exitcode.BadInputf("%v", err)
		}
		k.Scenario = b
	}
	out, err := segmentsOut(sc)
	if err != nil {
		return err
	}
	k.Out = out
	release, err := lockSenders(sc)
	if err != nil {
		return err
	}
	defer release()
	child, err := childArgs(cmd.Flags(), nil)
	if err != nil {
		return exitcode.BadInputf("%v", err)
	}
	k.Args = child
	coord, err := segment.NewCoordinator(listen, f.segments)
	if err != nil {
		return exitcode.BadInputf("--coordinator-addr: %v", err)
	}
	coord.Out = out
	defer coord.Close()
	k.Coordinator = coord.URL()
	fl, err := segment.StartFaults(cmd.Context(), sc.Faults, sc.Target.NetHome, coord)
	if err != nil {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	dash, stopDash, err := liveSegments(cmd.Context(), out, f.segments, sc)
	if err != nil {
		return err
	}
	defer stopDash()
	fmt.Fprintf(os.Stderr, "spreading the load over %d segments on Kubernetes; coordinator %s\n", f.segments, coord.URL())
	dirs, infos, errs := k.Run(cmd.Context())
	fl.Stop()
	var failed []string
	for i, e := range errs {
		if e != nil {
			failed = append(failed, fmt.Sprintf("segment %d: %v", i, e))
		}
	}
	return finishSegments(cmd, out, dirs, infos, sc, failed, fl, dash)
}

// checkSegments makes, before anything starts, the checks each of n
// segments will make, and refuses what segments cannot share.
func checkSegments(sc scenario.Scenario, n int) error {
	for i := 0; i < n; i++ {
		c := sc
		if err := c.ForSegment(i, n); err != nil {
			return exitcode.Wrap(exitcode.BadInput, fmt.Errorf("--segments %d: %v", n, err))
		}
	}
	if sc.Workload.FunderKey != "" {
		return exitcode.BadInputf("--segments: %d with funded wallets: the segments would share one funder's sequence; expected genesis senders (no workload.funder_key)", n)
	}
	return nil
}

// segmentsOut is the merged run's directory, made new.
func segmentsOut(sc scenario.Scenario) (string, error) {
	out := sc.Out
	if out == "" {
		out = runner.DefaultOut()
	}
	if _, err := os.Stat(filepath.Join(out, "result.json")); err == nil {
		return "", exitcode.BadInputf("out: %s already holds a run (result.json); expected a new directory", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", exitcode.BadInputf("out: %v", err)
	}
	return out, nil
}
