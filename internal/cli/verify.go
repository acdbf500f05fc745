package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/verify"
)

func verifyCmd(reg *kinds.Registry) *cobra.Command {
	var rpc, home string
	c := &cobra.Command{
		Use:   "verify RUN_DIR [--rpc URL | --net-home DIR]",
		Short: "Re-count a run's committed payments from the chain's own blocks, and check its files' digests",
		Long: `Re-counts the run's committed payments from the chain, apart from the run's
confirmer: for every block evidence.jsonl names, it reads the block and its
results from the node at --rpc (any node of the chain; with --net-home, the
network's last node; without either, the last endpoint the run named) and
finds each payment there with result code 0. It checks evidence.jsonl's
running digest and its count against result.json's first, so an edited
file or a dropped line is named. Exit 0 when every payment is found, 1 on a
difference (the first ones listed), 3 when the node lacks the blocks
(pruned, or another chain), 2 for a run it cannot read.`,
		Example: `  tpslab verify runs/live --net-home /tmp/x
  tpslab verify runs/live --rpc http://127.0.0.1:26657`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := rpc
			if url == "" && home != "" {
				n, err := loadNet(home)
				if err != nil {
					return err
				}
				if len(n.Nodes) == 0 {
					return exitcode.BadInputf("--net-home: %s has no nodes", home)
				}
				url = n.Nodes[len(n.Nodes)-1].RPC // not the node the run read first
			}
			if url == "" {
				r, err := readRun(args[0])
				if err != nil {
					return err
				}
				if r.Network == nil || len(r.Network.Endpoints) == 0 {
					return exitcode.BadInputf("--rpc: not given and %s names no endpoint, expected --rpc URL of a node of the chain", args[0])
				}
				url = r.Network.Endpoints[len(r.Network.Endpoints)-1]
			}
			o, err := verify.Run(cmd.Context(), args[0], url, reg.NamesWhere(func(k kinds.Kind) bool { return k.Info().Recount }))
			if err != nil {
				return err
			}
			fmt.Printf("verified: %s of %s committed payments found in blocks %d..%d of chain %s (recounted from %s; %s's digests hold)\n",
				report.Count(o.Found), report.Count(o.Committed), o.First, o.Last, o.ChainID, url, report.EvidenceFile)
			return nil
		},
	}
	c.Flags().StringVar(&rpc, "rpc", "", "CometBFT RPC URL of any node of the run's chain")
	c.Flags().StringVar(&home, "net-home", "", "the network tpslab net up started (its last node is read)")
	return c
}
