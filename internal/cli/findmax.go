package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/threshold"
)

func findMaxCmd(reg *kinds.Registry) *cobra.Command {
	var so scenarioOpts
	var slos []string
	var minRatio, maxGrowth float64
	var opt findmax.Options
	var step, warm time.Duration
	c := &cobra.Command{
		Use:   "find-max [SCENARIO.yaml]",
		Short: "Search for the highest offered rate that meets an objective, and say what limits it",
		Long: `Runs steps of constant offered load on one network: doubling from --start until
a step misses the objective, then bisecting until the bracket is within
--tolerance. A step meets the objective when every --slo holds, committed/offered
is at least --min-ratio and the mempool grows by at most --max-growth seconds of
load over the step. Each step's warm-up is excluded.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := so.resolve(args)
			if err != nil {
				return err
			}
			ths, err := threshold.ParseAll(slos)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, fmt.Errorf("--slo: %w", err))
			}
			switch {
			case opt.Start <= 0:
				return exitcode.BadInputf("--start: %g, expected a rate > 0", opt.Start)
			case opt.Factor <= 1:
				return exitcode.BadInputf("--factor: %g, expected > 1", opt.Factor)
			case opt.Tolerance <= 0 || opt.Tolerance >= 1:
				return exitcode.BadInputf("--tolerance: %g, expected between 0 and 1", opt.Tolerance)
			case step <= warm:
				return exitcode.BadInputf("--step: %s, expected longer than --step-warmup (%s)", step, warm)
			case sc.Load.Model != scenario.Open:
				return exitcode.BadInputf("load.model: %q, expected open: find-max offers rates", sc.Load.Model)
			}
			obj := findmax.Objective{Thresholds: ths, MinRatio: minRatio, MaxGrowth: maxGrowth}
			return findMax(cmd.Context(), reg, sc, obj, opt, step, warm, strings.Join(slos, ", ")+fmt.Sprintf(", committed/offered >= %.2f, mempool growth <= %.1f s", minRatio, maxGrowth))
		},
	}
	so.register(c.Flags(), reg)
	f := c.Flags()
	f.StringArrayVar(&slos, "slo", []string{"p99_commit<=2s"}, "objective a step must meet, repeatable (threshold syntax)")
	f.Float64Var(&minRatio, "min-ratio", 0.99, "committed/offered a step must reach")
	f.Float64Var(&maxGrowth, "max-growth", 1, "largest mempool growth over a step, in seconds of offered load")
	f.Float64Var(&opt.Start, "start", 250, "first offered rate")
	f.Float64Var(&opt.Factor, "factor", 2, "coarse ramp: multiply the rate by this until a step fails")
	f.Float64Var(&opt.Tolerance, "tolerance", 0.1, "stop when the bracket is this narrow (relative)")
	f.Float64Var(&opt.MaxRate, "max-rate", 100000, "never offer more than this")
	f.IntVar(&opt.MaxSteps, "max-steps", 12, "at most this many steps")
	f.DurationVar(&step, "step", 20*time.Second, "length of each step")
	f.DurationVar(&warm, "step-warmup", 5*time.Second, "start of each step excluded from its figures")
	return c
}

func findMax(ctx context.Context, ks *kinds.Registry, sc scenario.Scenario, obj findmax.Objective, opt findmax.Options, step, warm time.Duration, objective string) error {
	base := sc.Out
	if base == "" {
		base = runner.DefaultOut()
	}
	stop, err := runner.SharedNetwork(ctx, &sc, runner.Options{Log: os.Stderr, Kinds: ks, Command: "find-max"})
	if err != nil {
		return err
	}
	defer stop()
	probe, err := runner.TargetFor(&sc, ks)
	if err != nil {
		return err
	}
	defer probe.Close()
	start := time.Now()
	n := 0
	measure := func(ctx context.Context, rate float64) (findmax.Step, error) {
		n++
		waitForEmptyMempool(ctx, probe)
		rc := sc
		rc.Load.Rate, rc.Load.Stages, rc.Load.Steps = rate, nil, nil
		rc.Load.Duration, rc.Load.Warmup = scenario.Duration(step), scenario.Duration(warm)
		rc.Thresholds = nil
		rc.Out = filepath.Join(base, fmt.Sprintf("step-%02d-%.0f", n, rate))
		fmt.Fprintf(os.Stderr, "step %d: %.0f tx/s for %s\n", n, rate, step)
		res, err := runner.Run(ctx, rc, runner.Options{Log: discardLog{}, Version: Version, Kinds: ks, Command: "find-max"})
		if res == nil {
			return findmax.Step{}, err
		}
		if onDisk, rerr := report.ReadResult(res.Dir); rerr == nil {
			report.WriteHTMLFile(onDisk)
			res = onDisk
		}
		st := obj.Judge(rate, res)
		verdict := "met"
		if !st.OK {
			verdict = "missed: " + strings.Join(st.Why, "; ")
		}
		fmt.Fprintf(os.Stderr, "  committed %.1f tx/s, p99 commit %.0f ms: %s\n", st.Committed, st.P99, verdict)
		return st, nil
	}
	out, err := findmax.Search(ctx, opt, measure)
	took := time.Since(start).Round(time.Second)
	if err != nil && len(out.Steps) == 0 {
		return err
	}
	fmt.Println()
	findmax.PrintKnee(os.Stdout, out.Steps)
	hi := "not reached"
	if out.Bracket[1] > 0 {
		hi = fmt.Sprintf("%.0f", out.Bracket[1])
	}
	fmt.Printf("\nsustainable rate: %.0f tx/s (bracket %.0f .. %s tx/s) under %s\n", out.Sustainable, out.Bracket[0], hi, objective)
	fmt.Printf("stopped: %s; search took %s over %d steps\n", out.Stopped, took, len(out.Steps))
	fmt.Println("what limits it:")
	for _, h := range out.Hints {
		fmt.Println("  -", h)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(base, "find-max.json"), map[string]any{"schema_version": 1, "objective": objective, "took_s": took.Seconds(), "outcome": out}); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(base, "find-max.html"))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := findmax.WriteHTML(f, out, objective, took.String()); err != nil {
		return err
	}
	fmt.Printf("results: %s (find-max.json, find-max.html, one run directory per step)\n", base)
	if errors.Is(ctx.Err(), context.Canceled) {
		return exitcode.Wrap(exitcode.TargetFailed, errors.New("interrupted"))
	}
	return nil
}

type discardLog struct{}

func (discardLog) Write(b []byte) (int, error) { return len(b), nil }

// waitForEmptyMempool lets a backlog from the previous step clear (up to 60 s)
// so it does not count against the next.
func waitForEmptyMempool(ctx context.Context, tgt sut.Target) {
	t, ok := tgt.(sut.Mempool)
	if !ok {
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := t.MempoolTxs(c)
		cancel()
		if err != nil || n < 10 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
