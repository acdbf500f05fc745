package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/kinds"
)

// kindsCmd lists the registered kinds and what each declares.
func kindsCmd(reg *kinds.Registry) *cobra.Command {
	return &cobra.Command{
		Use: "kinds", Short: "List the kinds of system tpslab measures and what each can do", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tSTARTS\tNET\tLINKS\tFAULTS\tGOSSIP\tKUBE\tSETTINGS\tABOUT")
			yes := func(b bool) string {
				if b {
					return "yes"
				}
				return "-"
			}
			for _, k := range reg.All() {
				in := k.Info()
				_, starts := k.(kinds.Starter)
				settings := "-"
				if s := kinds.Sections(k); len(s) > 0 {
					settings = strings.Join(s, ":, ") + ":"
				}
				faults := "-"
				switch {
				case in.Faults && in.Links:
					faults = "all"
				case in.Faults:
					faults = "crash, pause"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, yes(starts), yes(kinds.IsNetwork(k)), yes(in.Links), faults,
					yes(in.Gossip), yes(in.Kubernetes), settings, in.About)
			}
			return tw.Flush()
		},
	}
}
