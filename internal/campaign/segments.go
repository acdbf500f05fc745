package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/segment"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/threshold"
)

// Segments is a load spread over N generators, from the controller's side:
// local processes of this binary, or the pods of an Indexed Job (Kube).
// Each segment sends its share from its own senders; the controller holds
// the senders' lock, does the faults on the agreed clock and merges the
// segments' directories exactly (internal/segment).
type Segments struct {
	N    int
	Args []string // each segment's flags: the controller's own, less --segments
	// Kube, when set, runs the segments as pods: its Kubeconfig, Namespace
	// and Image as given (Image and Listen default to the local cluster's).
	Kube *segment.Kube
	// Listen is where the pods reach the coordinator (Kubernetes).
	Listen string
	// Scenario is the scenario file's bytes, given to the pods.
	Scenario []byte
	// Options start the network the local segments share, when the
	// scenario names none.
	Options runner.Options
	Log     io.Writer
	// Live, when set, is told the merged directory before the segments
	// start (a dashboard tails their folders under it), and returns the
	// function that is given the merged result.
	Live func(out string) (merged func(*report.Result), err error)
}

// Run spreads sc's load and merges the segments into one result in
// sc.Out (a new directory). failed names the segments that did not end
// cleanly (a threshold's exit is not a failure: the merged result judges
// thresholds).
func (s Segments) Run(ctx context.Context, sc scenario.Scenario) (res *report.Result, failed []string, err error) {
	if err := CheckSegments(sc, s.N); err != nil {
		return nil, nil, err
	}
	if s.Kube != nil {
		if err := s.kubeDefaults(&sc); err != nil {
			return nil, nil, err
		}
	}
	out, err := newOut(sc)
	if err != nil {
		return nil, nil, err
	}
	if s.Kube == nil {
		stop, err := runner.SharedNetwork(ctx, &sc, s.Options)
		if err != nil {
			return nil, nil, err
		}
		defer stop()
		if sc.Target.NetHome != "" {
			s.Args = append(s.Args, "--net-home="+sc.Target.NetHome)
		}
		s.Listen = "127.0.0.1:0"
	}
	release, err := lockSenders(sc)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	coord, err := segment.NewCoordinator(s.Listen, s.N)
	if err != nil && s.Kube != nil {
		return nil, nil, exitcode.BadInputf("--coordinator-addr: %v", err)
	} else if err != nil {
		return nil, nil, err
	}
	defer coord.Close()
	fl, err := segment.StartFaults(ctx, sc.Faults, sc.Target.NetHome, coord)
	if err != nil {
		return nil, nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	done := func(*report.Result) {}
	if s.Live != nil {
		if done, err = s.Live(out); err != nil {
			return nil, nil, err
		}
	}
	dirs, infos, errs, err := s.launch(ctx, out, coord)
	fl.Stop()
	if err != nil {
		return nil, nil, err
	}
	for i, e := range errs {
		if e != nil && !isThresholdExit(e) {
			failed = append(failed, fmt.Sprintf("segment %d: %v", i, e))
		}
	}
	red := sc // the merged result's scenario, without the seeds
	red.Workload.GenesisSeed, red.Workload.WalletSeed, red.Network.Seed = "", "", ""
	res, err = segment.Merge(out, dirs, red, threshold.Of(&sc), infos, fl)
	if err == nil {
		done(res)
	}
	if err != nil {
		return nil, failed, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("merging the segments: %v (their own results are in %s)", err, filepath.Join(out, "segments")))
	}
	return res, failed, nil
}

// launch starts the segments where they run and waits for them.
func (s Segments) launch(ctx context.Context, out string, coord *segment.Coordinator) ([]string, []report.SegmentInfo, []error, error) {
	if s.Kube != nil {
		k := *s.Kube
		k.N, k.Out, k.Args, k.Scenario, k.Log, k.Coordinator = s.N, out, s.Args, s.Scenario, s.Log, coord.URL()
		coord.Out = out
		fmt.Fprintf(s.Log, "spreading the load over %d segments on Kubernetes; coordinator %s\n", s.N, coord.URL())
		dirs, infos, errs := k.Run(ctx)
		return dirs, infos, errs, nil
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(s.Log, "spreading the load over %d local segments; coordinator %s\n", s.N, coord.URL())
	dirs, infos, errs := segment.Local{Binary: bin, Args: s.Args, Out: out, N: s.N, Log: s.Log}.Run(ctx, coord.URL())
	return dirs, infos, errs, nil
}

// kubeDefaults checks what pods need and fills in the local cluster's image
// and address, and the network's net.json for the pods.
func (s *Segments) kubeDefaults(sc *scenario.Scenario) error {
	k := s.Kube
	if sc.Target.NetHome == "" && len(sc.Target.Endpoints) == 0 {
		return exitcode.BadInputf("--kubeconfig: the segments run in pods: give them a network they can reach (--net-home of a network from `net up --kubeconfig`, or --endpoint)")
	}
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
	if s.Listen == "" {
		if local == nil {
			return exitcode.BadInputf("--coordinator-addr: required for a cluster that is not tpslab's local one: host:port this machine can listen on and the pods can reach")
		}
		s.Listen = local.HostIP() + ":0"
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
	return nil
}

// CheckSegments makes, before anything starts, the checks each of n
// segments will make, and refuses what segments cannot share.
func CheckSegments(sc scenario.Scenario, n int) error {
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

// newOut is the merged run's directory, made new.
func newOut(sc scenario.Scenario) (string, error) {
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

// Verdict is the exit a merged run gives: segments that failed, payments
// lost, then thresholds.
func Verdict(res *report.Result, failed []string) error {
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

// isThresholdExit says a segment ended with the thresholds' exit code: not
// a failure of the segment (the merged result judges thresholds).
func isThresholdExit(err error) bool {
	var ee interface{ ExitCode() int }
	return errors.As(err, &ee) && ee.ExitCode() == int(exitcode.ThresholdsFailed)
}
