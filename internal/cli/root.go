// Package cli wires tpslab's commands (cobra) to the packages that do the work.
package cli

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/suggest"
)

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "dev"

// Root builds the command tree over the kinds of system reg registers.
func Root(reg *kinds.Registry) *cobra.Command {
	root := &cobra.Command{
		Use:           "tpslab",
		Short:         "Measure how many payments per second a network really settles",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cobra.AddTemplateFunc("tpslabVersion", versionString)
	root.SetVersionTemplate("tpslab version {{tpslabVersion}}\n")
	// Flag parse errors are bad input: one line, exit 2.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.BadInputf("%s: %v%s", commandName(c), err, flagSuggestion(c, err))
	})
	root.AddCommand(summaryCmd(), serveCmd(), netCmd(reg), nodeCmd(), linksCmd(), clusterCmd(), unpackCmd(), ledgerServiceCmd(), runCmd(reg), validateCmd(reg), sinkCmd(), reportCmd(), exportCmd(), runsCmd(), compareCmd(), findMaxCmd(reg), kindsCmd(reg), abCmd(reg), historyCmd(), recordCmd(reg), cacheCmd(), verifyCmd(reg), signCmd(), reproduceCmd(reg), whyCmd(reg), bisectCmd(reg))
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			sub.Args = wrapArgs(sub.Args)
			wrap(sub)
		}
	}
	wrap(root)
	return root
}

// Main runs the command line args (without the program's name) as the
// tpslab program does: an error is one line on stderr, and the result is
// the exit code. Tests drive it in-process.
func Main(ctx context.Context, reg *kinds.Registry, args []string) int {
	err := Execute(ctx, reg, args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpslab:", err)
	}
	return exitcode.Of(err)
}

// Execute runs the command line. An error cobra returns before any command
// began (an unknown subcommand, a malformed flag) is bad input: exit 2.
func Execute(ctx context.Context, reg *kinds.Registry, args []string) error {
	root := Root(reg)
	root.SetArgs(args)
	began := false
	root.PersistentPreRun = func(*cobra.Command, []string) { began = true }
	err := root.ExecuteContext(ctx)
	if err != nil && !began {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	return err
}

// versionString is Version, and for a build from a checkout ("dev") the
// commit Go stamped into it, with its date and whether it had changes.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if Version != "dev" || !ok {
		return Version
	}
	var rev, when, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", with changes not committed"
			}
		}
	}
	if rev == "" { // built with -buildvcs=false: ask the checkout
		var dirty bool
		if rev, dirty = runner.GitHead(); rev == "" {
			return Version + " (no commit known: built outside a git checkout)"
		}
		when = "the checkout's HEAD"
		if dirty {
			modified = ", which has changes not committed"
		}
	}
	return fmt.Sprintf("dev, commit %.12s (%s%s)", rev, when, modified)
}

// commandName is c's path without the program's name, which Main's
// "tpslab:" already says.
func commandName(c *cobra.Command) string {
	p := c.CommandPath()
	if rest, ok := strings.CutPrefix(p, "tpslab "); ok {
		return rest
	}
	return p
}

// flagSuggestion is "; did you mean --rate?" for an unknown flag close to
// one c takes (cobra suggests commands only).
func flagSuggestion(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := suggest.Closest(name, names); s != "" {
		return "; did you mean --" + s + "?"
	}
	return ""
}

// wrapArgs turns cobra's argument errors into exit-2 errors.
func wrapArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	if v == nil {
		return nil
	}
	return func(c *cobra.Command, args []string) error {
		if err := v(c, args); err != nil {
			return exitcode.BadInputf("%s: %s", commandName(c), strings.TrimSpace(err.Error()))
		}
		return nil
	}
}

// refuseIncomplete refuses a run that did not run its course (interrupted,
// halted, disk full, a partial merge) unless allow: its figures cover
// another load than the one planned (issue 51).
func refuseIncomplete(r *report.Result, allow bool) error {
	if allow {
		return nil
	}
	why := r.Incomplete()
	if why == "" {
		why = r.EndedEarly()
	}
	if why == "" {
		return nil
	}
	return exitcode.BadInputf("%s: %s, so its figures cover another load than the one planned; --allow-incomplete takes it anyway", r.Dir, why)
}
