package cli

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// groupKey is the flag annotation naming its section in --help.
const groupKey = "tpslab_group"

// The sections of a long command's --help, common ones first, as k6's run
// --help groups its options; a kind's own flags follow under its name.
var groupOrder = []string{"search", "ab", "load", "workload", "target", "network", "run", "output", "segments"}

var groupTitles = map[string]string{
	"search":   "Search (find-max)",
	"ab":       "Builds A and B",
	"load":     "Load (how payments are offered)",
	"workload": "Workload (what each payment is)",
	"target":   "Target (where the payments go)",
	"network":  "Network (the one tpslab starts)",
	"run":      "Run",
	"output":   "Output",
	"segments": "Segments and Kubernetes",
}

// groupOfPath is the section of the flag setting the scenario field path:
// its first part for the common sections, "kind:NAME" for a kind's own.
func groupOfPath(path string) string {
	head, _, dotted := strings.Cut(path, ".")
	switch {
	case !dotted:
		return "run"
	case head == "load" || head == "workload" || head == "target" || head == "network":
		return head
	}
	return "kind:" + head
}

// setGroup files the named flags of fs under group.
func setGroup(fs *pflag.FlagSet, group string, names ...string) {
	for _, n := range names {
		if fs.Lookup(n) != nil {
			fs.SetAnnotation(n, groupKey, []string{group})
		}
	}
}

// groupedHelp makes c's --help list its flags by section, with its
// examples first.
func groupedHelp(c *cobra.Command) {
	c.SetUsageFunc(func(c *cobra.Command) error {
		out := c.OutOrStderr()
		fmt.Fprintf(out, "Usage:\n  %s\n", c.UseLine())
		if c.HasExample() {
			fmt.Fprintf(out, "\nExamples:\n%s\n", c.Example)
		}
		sets := map[string]*pflag.FlagSet{}
		var kindGroups []string
		add := func(f *pflag.Flag) {
			g := "other"
			if a := f.Annotations[groupKey]; len(a) > 0 {
				g = a[0]
			}
			if sets[g] == nil {
				sets[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
				if strings.HasPrefix(g, "kind:") {
					kindGroups = append(kindGroups, g)
				}
			}
			sets[g].AddFlag(f)
		}
		c.LocalFlags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		sort.Strings(kindGroups)
		width := 0
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			width = w
		}
		for _, g := range append(append(append([]string{}, groupOrder...), kindGroups...), "other") {
			fs := sets[g]
			if fs == nil {
				continue
			}
			title := groupTitles[g]
			if k, ok := strings.CutPrefix(g, "kind:"); ok {
				title = fmt.Sprintf("%s settings (%s.* in a scenario file)", k, k)
			} else if g == "other" {
				title = "Flags"
			}
			fmt.Fprintf(out, "\n%s:\n%s", title, fs.FlagUsagesWrapped(width))
		}
		return nil
	})
}
