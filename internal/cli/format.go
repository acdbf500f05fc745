package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
)

// addFormatFlag is --summary-format: text (the terminal's) or markdown (a
// short table for a pull request comment).
func addFormatFlag(c *cobra.Command, format *string) {
	c.Flags().StringVar(format, "summary-format", "text", "text, or markdown: a short table for a pull request comment")
}

func checkFormat(f string) error {
	if f != "text" && f != "markdown" {
		return exitcode.BadInputf("--summary-format: %q, expected text or markdown", f)
	}
	return nil
}

func printComparison(c compare.Comparison, format string) {
	if format == "markdown" {
		c.Markdown(os.Stdout)
		return
	}
	c.Print(os.Stdout)
}

// outputFlags are how a run talks while it goes and when it ends.
type outputFlags struct {
	summary  string        // compact | full (--summary, TPSLAB_SUMMARY)
	progress time.Duration // a plain progress line this often when stderr is not a terminal
	quiet    bool
}

var output outputFlags

func (o *outputFlags) register(c *cobra.Command) {
	def := "compact"
	if v := os.Getenv("TPSLAB_SUMMARY"); v != "" {
		def = v
	}
	c.Flags().StringVar(&o.summary, "summary", def, "the end-of-run summary: compact (one screen) or full (every figure); default from TPSLAB_SUMMARY")
	c.Flags().DurationVar(&o.progress, "progress", 5*time.Second, "when stderr is not a terminal, a progress line this often (on a terminal: one line in place, every second)")
	c.Flags().BoolVar(&o.quiet, "quiet", false, "no progress lines")
}

func (o *outputFlags) check() error {
	if o.summary != "compact" && o.summary != "full" {
		return exitcode.BadInputf("--summary: %q, expected compact or full", o.summary)
	}
	if o.progress < time.Second {
		return exitcode.BadInputf("--progress: %s, expected 1s or more", o.progress)
	}
	return nil
}

// progressTo is where and how often live progress goes: in place every
// second on a terminal, a plain line every --progress otherwise, nowhere
// with --quiet.
func (o *outputFlags) progressTo() (w io.Writer, every time.Duration, inPlace bool) {
	if o.quiet {
		return nil, 0, false
	}
	if isTerminal(os.Stderr) {
		return os.Stderr, time.Second, true
	}
	return os.Stderr, o.progress, false
}

// terminalWidth is stdout's width, or $COLUMNS, or 100.
func terminalWidth() int { return terminalWidthOf(os.Stdout) }

// terminalWidthOf is f's width as a terminal, or $COLUMNS, or 100.
func terminalWidthOf(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
		return w
	}
	if w, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && w > 20 {
		return w
	}
	return 100
}

// printRunSummary prints a finished run in the chosen format; notes only
// when asked (a run printed its own as they came).
func printRunSummary(res *report.Result, format string, notes bool) {
	if format == "markdown" {
		report.Markdown(os.Stdout, res)
		return
	}
	report.PrintSummaryWith(os.Stdout, res, report.SummaryOptions{Full: output.summary == "full", Width: terminalWidth(), Notes: notes || output.summary == "full"})
}

// summaryCmd prints a finished run's summary again.
func summaryCmd() *cobra.Command {
	var format string
	var rejudge bool
	c := &cobra.Command{
		Use:   "summary RUN_DIR",
		Short: "Print a finished run's summary (one screen; --summary full for every figure)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if err := output.check(); err != nil {
				return err
			}
			r, err := readRun(args[0])
			if err != nil {
				return err
			}
			if rejudge {
				// Judged again with this version's thresholds, said as such:
				// the stored judgement is what the run printed at its end.
				old := r.Verdict()
				was := "none stored"
				if r.Judgement != nil {
					was = fmt.Sprintf("tpslab %s, thresholds v%d", r.Judgement.By, r.Judgement.Limits)
				}
				r.Seal(Version)
				fmt.Printf("rejudged with tpslab %s (thresholds v%d); the run's own judgement (%s) was:\n  %s\n", Version, report.T.Version, was, old)
			}
			printRunSummary(r, format, true)
			fmt.Printf("\nresult: %s\n", args[0])
			return nil
		},
	}
	addFormatFlag(c, &format)
	output.register(c)
	c.Flags().BoolVar(&rejudge, "rejudge", false, "judge the run again with this version's thresholds (the summary otherwise prints the judgement its end stored)")
	return c
}
