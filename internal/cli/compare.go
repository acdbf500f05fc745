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
	var out, format string
	var all bool
	c := &cobra.Command{
		Use:   "compare RUN_A RUN_B [RUN_C ...]",
		Short: "Compare runs (or sets of repetitions) metric by metric, with confidence intervals",
		Long: `Compare each later argument with the first. An argument is a run directory,
or a directory of repetitions as written by run --repeat N. With repetitions
the samples are their steady-state values; with a single run, its steady
seconds (weaker evidence, and the output says so).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			var sets []compare.Set
			for _, a := range args {
				s, err := compare.Load(a)
				if err != nil {
					return exitcode.Wrap(exitcode.BadInput, err)
				}
				sets = append(sets, s)
			}
			res := compare.Run(sets)
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
	c.Flags().StringVar(&out, "out", "", "where to write the HTML comparison (default: compare.html in the last run's directory)")
	return c
}
