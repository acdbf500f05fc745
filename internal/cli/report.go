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
		Short: "List runs, repetition sets (--repeat), find-max searches and A/B comparisons (ab) with their results",
		Long: `List what a runs folder holds, as tpslab serve lists it: each run with its
verdict, each repetition set, each find-max search with its sustainable rate,
each ab comparison with its verdict (a campaign's own runs are not listed
apart). STATUS is ok (kept up, confirmed, no regression), warn (fell behind,
not confirmed) or fail (nothing committed, a halt, a regression).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tWHAT\tSTARTED\tSTATUS\tRESULT")
			refused := 0
			read := func(d string) (entry, bool) {
				r, err := report.ReadResult(d)
				if err != nil {
					refused++
					return entry{What: "run", Status: "fail", Result: fmt.Sprintf("refused: %v", err)}, true
				}
				if r.NeverLoaded() {
					return entry{}, false // no figures: not a run
				}
				return runEntry(r), true
			}
			for _, e := range campaigns(dir, read) {
				started := ""
				if !e.Started.IsZero() {
					started = e.Started.Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", filepath.Join(dir, e.Name), e.What, started, e.Status, e.Result)
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
	Status  string    // ok when every repetition kept up, else warn
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
	status := "ok"
	if kept < n {
		status = "warn"
	}
	return repSet{Dir: dir, Started: started, Status: status, About: fmt.Sprintf("%d repetitions (rep-1..rep-%d): committed %.0f..%.0f tx/s, %d of %d kept up; record or report one of them, compare the set", n, len(reps), lo, hi, kept, n)}, true
}
