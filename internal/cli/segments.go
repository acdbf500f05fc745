package cli

import (
	"context"
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
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/segment"
	"github.com/tpslab/tpslab/internal/threshold"
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

// runSegments spreads sc's load over --segments generators (local
// processes, or pods with --kubeconfig) through campaign.Segments, then
// shows the merged result as a single run's.
func runSegments(cmd *cobra.Command, reg *kinds.Registry, sc scenario.Scenario, args []string, f *segmentFlags) error {
	if f.segment != "" {
		return exitcode.BadInputf("--segments: a segment (--segment %s) cannot spread its load again", f.segment)
	}
	ctx := cmd.Context()
	seg := campaign.Segments{N: f.segments, Log: os.Stderr,
		Options: runner.Options{Log: os.Stderr, Version: Version, Kinds: reg, Command: "run --segments"}}
	fileArgs := args
	if f.kubeconfig != "" {
		seg.Kube = &segment.Kube{Kubeconfig: f.kubeconfig, Namespace: f.namespace, Image: f.image}
		seg.Listen = f.listen
		fileArgs = nil // the pods read the scenario from their secret
		if len(args) == 1 {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return exitcode.BadInputf("%v", err)
			}
			seg.Scenario = b
		}
	}
	child, err := childArgs(cmd.Flags(), fileArgs)
	if err != nil {
		return exitcode.BadInputf("%v", err)
	}
	seg.Args = child
	stopDash := func() {}
	defer func() { stopDash() }()
	seg.Live = func(out string) (func(*report.Result), error) {
		dash, stop, err := liveSegments(ctx, out, f.segments, sc)
		stopDash = stop
		return func(res *report.Result) {
			if dash != nil {
				dash.Result(res, true)
			}
		}, err
	}
	res, failed, err := seg.Run(ctx, sc)
	if err != nil {
		return err
	}
	showResult(res, len(res.Segments))
	return campaign.Verdict(res, failed)
}

// liveSegments serves --dashboard for a segmented run: the segments'
// series, in their folders under out as they write them (local processes)
// or as the coordinator receives them (pods), merged. stop lets a watching
// page fetch the verdict, then stops serving.
func liveSegments(ctx context.Context, out string, n int, sc scenario.Scenario) (*dashboard.Dashboard, func(), error) {
	if dashboardAddr == "" {
		return nil, func() {}, nil
	}
	dash, err := startDashboard(filepath.Base(out), threshold.Of(&sc))
	if err != nil {
		return nil, func() {}, err
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = segment.Dir(out, i)
	}
	tailCtx, stopTail := context.WithCancel(ctx)
	go dash.Tail(tailCtx, dirs)
	return dash, func() {
		stopTail()
		again := seeAgain(out)
		dash.SetAfter(again)
		dash.Linger(3 * time.Second)
		dash.Close()
		say(os.Stderr, again)
	}, nil
}
