// Package campaign runs what takes several runs: repetitions of a scenario,
// find-max's steps, the builds of an A/B comparison, and writes what they
// leave beside the runs (each run's report.html, find-max.json and .html).
// The command line only wires flags to it.
package campaign

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
)

// WriteReport writes RUN_DIR/report.html from what the run left on disk,
// its series streamed and merged so that a long run's page stays small.
func WriteReport(dir string) (string, error) {
	r, err := report.ReadResultForCharts(dir, report.ChartPoints)
	if err != nil {
		return "", err
	}
	return report.WriteHTMLFile(r)
}

// Repeat runs sc n times into OUT/rep-1 .. OUT/rep-n through one, on one
// network started for all of them when sameNetwork (o describes how it is
// started), else on whatever each run starts. The first failure that is not
// a threshold's stops it; threshold failures are returned at the end.
func Repeat(ctx context.Context, sc scenario.Scenario, n int, sameNetwork bool, o runner.Options, log io.Writer,
	one func(ctx context.Context, sc scenario.Scenario) error) (base string, err error) {
	base = sc.Out
	if base == "" {
		base = runner.DefaultOut()
	}
	if sameNetwork {
		stop, err := runner.SharedNetwork(ctx, &sc, o)
		if err != nil {
			return base, err
		}
		defer stop()
	}
	var thresholdErr error
	for i := 1; i <= n; i++ {
		rc := sc
		rc.Out = filepath.Join(base, fmt.Sprintf("rep-%d", i))
		fmt.Fprintf(log, "repetition %d of %d\n", i, n)
		err := one(ctx, rc)
		if exitcode.Of(err) == exitcode.ThresholdsFailed {
			thresholdErr = err
			continue
		}
		if err != nil {
			return base, err
		}
	}
	return base, thresholdErr
}

// Interleave runs each variant repeat times, every round in an order
// rotated by one (a b c, b c a, c a b, …), so that a drift of the machine
// over the session falls on every variant alike. A run that failed its
// thresholds still counts; any other failure stops it.
func Interleave(ctx context.Context, log io.Writer, what string, variants []string, repeat int, run func(ctx context.Context, variant string, rep int) error) error {
	n, total := 0, repeat*len(variants)
	for round := 0; round < repeat; round++ {
		for i := range variants {
			v := variants[(i+round)%len(variants)]
			n++
			fmt.Fprintf(log, "%s: run %d of %d: %s, repetition %d\n", what, n, total, v, round+1)
			if err := run(ctx, v, round+1); err != nil && exitcode.Of(err) != exitcode.ThresholdsFailed {
				return fmt.Errorf("%s, repetition %d: %w", v, round+1, err)
			}
			if ctx.Err() != nil {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("interrupted"))
			}
		}
	}
	return nil
}
