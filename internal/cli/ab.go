package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
)

func abCmd(reg *kinds.Registry) *cobra.Command {
	var so scenarioOpts
	var o campaign.ABOptions
	var maxRegression float64
	var format string
	c := &cobra.Command{
		Use:   "ab --binary-a PATH --binary-b PATH [SCENARIO.yaml]",
		Short: "Run one scenario on two builds of the nodes, interleaved, and compare them",
		Long: `Run the scenario on a fresh network of build A and of build B (the node
program: tpslab from another checkout for the built-in ledger, an SDK daemon
for cosmos, geth for evm), each from the same genesis, --repeat times each,
interleaved A B, B A, A B... so that the machine's drift falls on both.
Then compare B with A: committed TPS, commit latency and rejections decide
the verdict, with 95% intervals from Student's t over the pairs (A, B of the
same round), as ratios B/A. At least 3 pairs are needed for a verdict (the
default --repeat 3); more narrow the intervals. Exit 1 when B is
significantly worse than A by more than --max-regression percent.

ab compares the nodes' programs: tpslab's own generator is the same for
both. To measure a change to tpslab itself, run each checkout's tpslab on
the same settings and compare the runs (tpslab compare).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := so.resolve(args)
			if err != nil {
				return err
			}
			if err := checkFormat(format); err != nil {
				return err
			}
			if err := o.Validate(sc); err != nil {
				return err
			}
			k, err := reg.Lookup(sc.Target.Kind)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, err)
			}
			if _, ok := k.(kinds.Starter); !ok {
				return exitcode.BadInputf("target.kind: %s: tpslab starts no network of it, expected a kind it starts (%s)", k.Info().Name, strings.Join(reg.NamesWhere(func(k kinds.Kind) bool { _, ok := k.(kinds.Starter); return ok }), ", "))
			}
			if maxRegression < 0 {
				return exitcode.BadInputf("--max-regression: %g, expected a percentage of 0 or more", maxRegression)
			}
			o.Out = sc.Out
			if o.Out == "" {
				o.Out = runner.DefaultOut()
			}
			o.Log = os.Stderr
			if o.Repeat < 3 {
				fmt.Fprintf(os.Stderr, "ab: --repeat %d gives %d pair(s) of runs: intervals over fewer than 3 pairs are too wide to name a difference (the runs and their figures are still written)\n", o.Repeat, o.Repeat)
			}
			o.Run = func(ctx context.Context, rc scenario.Scenario, node string) error {
				return runQuiet(ctx, reg, rc, node, "ab")
			}
			started := time.Now()
			c, err := campaign.AB(cmd.Context(), sc, o)
			if len(c.Against) == 0 {
				return err
			}
			fmt.Fprintf(os.Stderr, "\nA: %s\nB: %s\n%d repetitions each, interleaved, in %s\n", o.A, o.B, o.Repeat, o.Out)
			printComparison(c, format)
			if f, herr := os.Create(filepath.Join(o.Out, "compare.html")); herr == nil {
				c.WriteHTML(f)
				f.Close()
				fmt.Fprintf(os.Stderr, "html: %s\n", filepath.Join(o.Out, "compare.html"))
			}
			regs := campaign.Regressions(c, maxRegression)
			var what []string
			for _, r := range regs {
				what = append(what, fmt.Sprintf("%s %+.1f%%", r.Metric, r.ChangePct))
			}
			// For tpslab runs and serve: the comparison's verdict beside it.
			if werr := report.WriteJSON(filepath.Join(o.Out, abFile), abSummary{A: o.A, B: o.B, Repeat: o.Repeat, Verdict: c.Against[0].Verdict, Regressions: what, Started: started}); werr != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", abFile, werr)
			}
			if len(regs) > 0 {
				return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("B is worse than A beyond --max-regression %g%%: %s", maxRegression, strings.Join(what, ", ")))
			}
			return err
		},
	}
	so.register(c.Flags(), reg)
	c.Flags().StringVar(&o.A, "binary-a", "", "node program of build A (the baseline)")
	c.Flags().StringVar(&o.B, "binary-b", "", "node program of build B (the change)")
	c.Flags().IntVar(&o.Repeat, "repeat", 3, "repetitions of each build, interleaved")
	c.Flags().Float64Var(&maxRegression, "max-regression", 5, "exit 1 when B is significantly worse than A in committed TPS, commit latency or rejections by more than this many percent")
	addFormatFlag(c, &format)
	setGroup(c.Flags(), "ab", "binary-a", "binary-b", "repeat", "max-regression")
	c.Example = `  # the built-in ledger: tpslab built from two checkouts, 3 pairs
  tpslab ab --binary-a /tmp/base/tpslab --binary-b /tmp/change/tpslab --duration 20s
  # two builds of an SDK daemon on a 1-validator chain, 5 pairs
  tpslab ab --target cosmos --validators 1 --binary-a ./tpsd-main --binary-b ./tpsd-pr --repeat 5`
	groupedHelp(c)
	return c
}

// runQuiet runs one repetition on a fresh network of node, prints its
// verdict in a line and writes its report.
func runQuiet(ctx context.Context, reg *kinds.Registry, sc scenario.Scenario, node, command string) error {
	res, err := runner.Run(ctx, sc, runner.Options{Out: sc.Out, Log: io.Discard, Version: Version, Kinds: reg, Command: command, NodeBinary: node})
	if res != nil {
		fmt.Fprintf(os.Stderr, "  %s: %s\n", res.Dir, res.Verdict())
		campaign.WriteReport(res.Dir)
	}
	return err
}
