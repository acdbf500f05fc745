package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
)

func compareCmd() *cobra.Command {
	var out, format, noiseFrom string
	var all, allowIncomplete bool
	c := &cobra.Command{
		Use:   "compare RUN_A RUN_B [RUN_C ...]",
		Short: "Compare runs (or sets of repetitions) metric by metric, with confidence intervals",
		Long: `Compare each later argument with the first. An argument is a run directory,
or a directory of repetitions as written by run --repeat N. With repetitions
the samples are their steady-state values; with a single run, its steady
seconds (weaker evidence, and the output says so).

Only the primary figures vote on the verdict: committed TPS, p50 and p99
commit, reject and expired rate, each tested at 5% divided by their number
(Bonferroni), and each change must exceed the noise floor: the largest
change between two runs of the same settings, within each set or in
--noise-from (10% when neither side has repetitions). The rest are shown,
not voted. Runs that ended early are refused (--allow-incomplete), and
sets offered different rates or settings are compared only with a warning
in the verdict.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			var sets []compare.Set
			for _, a := range args {
				s, err := compare.LoadWith(a, allowIncomplete)
				if err != nil {
					return exitcode.Wrap(exitcode.BadInput, err)
				}
				sets = append(sets, s)
			}
			var opts compare.Options
			if noiseFrom != "" {
				n, err := compare.Load(noiseFrom)
				if err != nil {
					return exitcode.BadInputf("--noise-from: %v", err)
				}
				if len(n.Runs) < 2 {
					return exitcode.BadInputf("--noise-from: %s holds %d run, expected 2 or more at the same settings (run --repeat N)", noiseFrom, len(n.Runs))
				}
				opts.Noise = &n
			}
			res := compare.RunWith(sets, opts)
			res.All = all
			printComparison(res, format)
			if out == "" {
				out = filepath.Join(args[len(args)-1], "compare.html") // beside the newest run, not in the working directory
			}
			f, err := os.Create(out)
			if err != nil {
				return exitcode.BadInputf("--out: %v", err)
			}
			defer f.Close()
			if err := res.WriteHTML(f); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "html: %s\n", out)
			for _, a := range res.Against {
				if a.Collapsed {
					return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%s collapsed to zero committed payments", a.Set.Name))
				}
			}
			return nil
		},
	}
	addFormatFlag(c, &format)
	c.Flags().BoolVar(&all, "all", false, "show every row, per-node telemetry without a significant change too")
	c.Flags().BoolVar(&allowIncomplete, "allow-incomplete", false, "compare runs that ended early (interrupted, halted, disk full) or partial merges too")
	c.Flags().StringVar(&noiseFrom, "noise-from", "", "a directory of repeated runs at the same settings (run --repeat N): the largest change between any two is each figure's noise floor")
	c.Flags().StringVar(&out, "out", "", "where to write the HTML comparison (default: compare.html in the last run's directory)")
	c.Example = `  # two runs: the later one against the first
  tpslab compare runs/before runs/after
  # repetitions on each side (run --repeat 5 --out DIR), a table for a pull request
  tpslab compare runs/base runs/change --summary-format markdown
  # every row, with the noise measured from repeated runs at the same settings
  tpslab compare runs/before runs/after --all --noise-from runs/base`
	return c
}
