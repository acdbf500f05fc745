package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/history"
)

func historyCmd() *cobra.Command {
	var store string
	h := &cobra.Command{
		Use:   "history",
		Short: "Keep runs' figures over time per series, and find where they changed",
		Long: `A history keeps each added run's headline figures under a named series
(by default its scenario, kind and machine: figures from different machines do
not compare) in one JSON-lines file. show prints a series' trend with its
change points (e-divisive, docs/history.md); check exits 1 when the newest
entry is a regression beyond the noise the history itself shows.`,
	}
	h.PersistentFlags().StringVar(&store, "store", "runs/history.jsonl", "the history file (JSON lines)")

	v := &historyView{store: &store}
	h.AddCommand(historyAddCmd(&store), v.cmd(historyShowCmd(v)), v.cmd(historyCheckCmd(v)))
	return h
}

// historyView is what show and check share: the store, the figure followed
// and how the analysis is written.
type historyView struct {
	store                   *string
	metric, htmlOut, format string
	last                    int
}

// cmd adds the view's flags to c.
func (v *historyView) cmd(c *cobra.Command) *cobra.Command {
	c.Flags().StringVar(&v.metric, "metric", "committed_tps", "the figure to follow (committed_tps, p50_commit, p99_commit, reject_rate, ...)")
	c.Flags().StringVar(&v.htmlOut, "html", "", "also write the trend, change points marked, to this HTML file")
	c.Flags().IntVar(&v.last, "last", 20, "markdown: how many of the newest entries the table shows")
	addFormatFlag(c, &v.format)
	return c
}

// analyze reads a series and finds its change points.
func (v *historyView) analyze(ctx context.Context, name string) (history.Analysis, error) {
	if err := checkFormat(v.format); err != nil {
		return history.Analysis{}, err
	}
	entries, err := history.Store{Path: *v.store}.Series(name)
	if err != nil {
		return history.Analysis{}, exitcode.Wrap(exitcode.BadInput, err)
	}
	if len(entries) == 0 {
		return history.Analysis{}, exitcode.BadInputf("series %q: no entries in %s, expected one of the series `tpslab history show` lists", name, *v.store)
	}
	a, err := history.Analyze(ctx, name, entries, v.metric)
	if err != nil {
		return a, exitcode.Wrap(exitcode.BadInput, err)
	}
	if ctx.Err() != nil {
		return a, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("history: interrupted while analysing %d entries of %q; nothing judged", len(entries), name))
	}
	return a, nil
}

// print writes an analysis as --format and --html say.
func (v *historyView) print(a history.Analysis) error {
	if v.format == "markdown" {
		a.Markdown(os.Stdout, v.last)
	} else {
		a.Print(os.Stdout)
	}
	if v.htmlOut == "" {
		return nil
	}
	f, err := os.Create(v.htmlOut)
	if err != nil {
		return exitcode.BadInputf("--html: %v", err)
	}
	defer f.Close()
	if err := a.WriteHTML(f); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "html: %s\n", v.htmlOut)
	return nil
}

func historyAddCmd(store *string) *cobra.Command {
	var label, series string
	var allowIncomplete bool
	add := &cobra.Command{
		Use: "add RUN_DIR", Short: "Add a finished run to its series", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := readRun(args[0])
			if err != nil {
				return err
			}
			if err := refuseIncomplete(r, allowIncomplete); err != nil {
				return err
			}
			if label == "" {
				out, gerr := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
				if gerr != nil {
					return exitcode.BadInputf("--label: empty and the working directory is not a git checkout, expected --label COMMIT")
				}
				label = strings.TrimSpace(string(out))
			}
			e, err := history.FromResult(r, series, label)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, err)
			}
			cut, err := history.Store{Path: *store}.Add(e)
			if err != nil {
				return err
			}
			if cut != "" {
				fmt.Fprintf(os.Stderr, "history: %s ended in a cut line (%d bytes, a write that did not finish); removed it before adding\n", *store, len(cut))
			}
			fmt.Printf("added %s as %q to series %q in %s\n", args[0], e.Label, e.Series, *store)
			return nil
		},
	}
	add.Flags().StringVar(&label, "label", "", "the entry's label, e.g. a commit (default: git rev-parse --short HEAD)")
	add.Flags().StringVar(&series, "series", "", "the series (default: SCENARIO/KIND/MACHINE)")
	add.Flags().BoolVar(&allowIncomplete, "allow-incomplete", false, "add a run that ended early (interrupted, halted, disk full) or a partial merge too")
	return add
}

func historyShowCmd(v *historyView) *cobra.Command {
	show := &cobra.Command{
		Use: "show [SERIES]", Short: "Print a series' trend and change points (no SERIES: list the series)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				names, err := history.Store{Path: *v.store}.Names()
				if err != nil {
					return exitcode.Wrap(exitcode.BadInput, err)
				}
				keys := make([]string, 0, len(names))
				for k := range names {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Printf("%s\t%d entries\n", k, names[k])
				}
				return nil
			}
			a, err := v.analyze(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return v.print(a)
		},
	}
	return show
}

func historyCheckCmd(v *historyView) *cobra.Command {
	var strict bool
	check := &cobra.Command{
		Use: "check SERIES", Short: "Exit 1 when the newest entry is a regression beyond the history's noise", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := v.analyze(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := v.print(a); err != nil {
				return err
			}
			if a.Newest == nil {
				if strict {
					return exitcode.BadInputf("series %q: %d entries, expected at least 4 to judge the newest (--strict)", args[0], len(a.Values))
				}
				// A fresh CI job's first runs: nothing to judge yet is no failure.
				fmt.Printf("series %s: not enough entries yet (%d of the 4 needed to judge the newest): nothing judged\n", args[0], len(a.Values))
				return nil
			}
			if a.Newest.Regression {
				return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("regression: %s", a.Newest.Why))
			}
			return nil
		},
	}
	check.Flags().BoolVar(&strict, "strict", false, "exit 2 when the series has fewer than 4 entries (without it: a line says so, exit 0)")
	return check
}
