package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
)

// readRun reads a run directory, refusing what it cannot trust (exit 2).
func readRun(dir string) (*report.Result, error) { return readRunWith(dir, report.ReadResult) }

// readRunForCharts reads it with its series and blocks streamed and merged
// for report.html: a day-long run's series is not held whole.
func readRunForCharts(dir string) (*report.Result, error) {
	return readRunWith(dir, func(d string) (*report.Result, error) { return report.ReadResultForCharts(d, report.ChartPoints) })
}

func readRunWith(dir string, read func(string) (*report.Result, error)) (*report.Result, error) {
	r, err := read(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("%s: not a run directory (no result.json in it)", dir)
	}
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return r, nil
}

func reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Write RUN_DIR/report.html: one self-contained page with the charts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := readRunForCharts(args[0])
			if err != nil {
				return err
			}
			path, err := report.WriteHTMLFile(r)
			if err != nil {
				return err
			}
			fmt.Println(path)
			return nil
		},
	}
}

func exportCmd() *cobra.Command {
	var asCSV bool
	c := &cobra.Command{
		Use:   "export RUN_DIR --csv",
		Short: "Print a run's per-second series as CSV",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !asCSV {
				return exitcode.BadInputf("export: --csv is the only format, expected --csv")
			}
			r, err := readRun(args[0])
			if err != nil {
				return err
			}
			if len(r.Series) == 0 {
				return exitcode.BadInputf("export: %s has no per-second series (series.jsonl missing or empty), expected a run that ran its load", args[0])
			}
			return report.WriteCSV(os.Stdout, r)
		},
	}
	c.Flags().BoolVar(&asCSV, "csv", false, "CSV of the time series")
	return c
}

func runsCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "runs",
		Short: "List run directories, repetition sets (--repeat) and A/B outputs (ab) with their one-line verdicts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, _ := os.ReadDir(dir)
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTARTED\tVERDICT")
			refused := 0
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				d := filepath.Join(dir, e.Name())
				if _, err := os.Stat(filepath.Join(d, "result.json")); err == nil {
					r, err := report.ReadResult(d)
					if err != nil {
						refused++
						fmt.Fprintf(tw, "%s\t\trefused: %v\n", d, err)
						continue
					}
					if r.NeverLoaded() {
						continue // no figures: not a run
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", d, r.StartedAt.Format("2006-01-02 15:04"), r.Verdict())
					continue
				}
				if set, ok := readSet(d); ok {
					fmt.Fprintf(tw, "%s\n", set.line())
					continue
				}
				a, aok := readSet(filepath.Join(d, "a"))
				b, bok := readSet(filepath.Join(d, "b"))
				if aok && bok {
					fmt.Fprintf(tw, "%s\t\tA/B (ab): tpslab compare %s %s\n", d, a.Dir, b.Dir)
					fmt.Fprintf(tw, "  %s\n  %s\n", a.line(), b.line())
				}
			}
			tw.Flush()
			if refused > 0 {
				return exitcode.BadInputf("runs: %d result(s) in %s could not be trusted (see the table)", refused, dir)
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "runs", "directory holding run directories")
	return c
}

// repSet is a repetition set (dir/rep-N) as runs and serve list it.
type repSet struct {
	Dir     string
	Started time.Time // the earliest repetition's start
	About   string    // how many, the range of committed rates, how many kept up
}

func (s repSet) line() string {
	return fmt.Sprintf("%s\t%s\t%s", s.Dir, s.Started.Format("2006-01-02 15:04"), s.About)
}

// readSet reads the repetition set in dir; false when dir holds none.
func readSet(dir string) (repSet, bool) {
	reps, _ := filepath.Glob(filepath.Join(dir, "rep-*", "result.json"))
	if len(reps) == 0 {
		return repSet{}, false
	}
	lo, hi, kept, n := math.Inf(1), math.Inf(-1), 0, 0
	var started time.Time
	for _, m := range reps {
		r, err := report.ReadResult(filepath.Dir(m))
		if err != nil || r.NeverLoaded() {
			continue
		}
		n++
		if started.IsZero() || r.StartedAt.Before(started) {
			started = r.StartedAt
		}
		lo, hi = math.Min(lo, r.Summary.CommittedTPS), math.Max(hi, r.Summary.CommittedTPS)
		if r.Outcome() == report.OutcomeKeptUp {
			kept++
		}
	}
	if n == 0 {
		return repSet{}, false
	}
	return repSet{Dir: dir, Started: started, About: fmt.Sprintf("%d repetitions (rep-1..rep-%d): committed %.0f..%.0f tx/s, %d of %d kept up; record or report one of them, compare the set", n, len(reps), lo, hi, kept, n)}, true
}
