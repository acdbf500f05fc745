package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
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
