package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/signing"
	"github.com/tpslab/tpslab/internal/verify"
)

func verifyCmd(reg *kinds.Registry) *cobra.Command {
	var rpc, home, database, signer string
	c := &cobra.Command{
		Use:   "verify RUN_DIR [--rpc URL | --database URL | --net-home DIR]",
		Short: "Re-count a run's committed payments from the chain's blocks or the service's database, and check its files' digests",
		Long: `Re-counts the run's committed payments apart from the run's confirmer.
For a CometBFT chain: for every block evidence.jsonl names, it reads the
block and its results from the node at --rpc (any node of the chain; with
--net-home, the network's last node; without either, the last endpoint the
run named) and finds each payment there with result code 0. For an EVM
chain: the block by its hash, and each payment's receipt with status 1,
from its JSON-RPC. For a service that settles payments by its answer (the
ledger service): each payment's row in the database at --database (with
--net-home, the network's). It checks evidence.jsonl's running digest and
its count against result.json's first, so an edited file or a dropped line
is named. Exit 0 when every payment is found, 1 on a difference (the first
ones listed), 3 when the node or database lacks the blocks or is another
system, 2 for a run it cannot read.`,
		Example: `  tpslab verify runs/live --net-home /tmp/x
  tpslab verify runs/live --rpc http://127.0.0.1:26657
  tpslab verify runs/ledger --database postgres://tpslab@127.0.0.1:5432/ledger
  tpslab verify runs/live --signer ~/.ssh/tpslab-results.pub --net-home /tmp/x`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := readRun(args[0])
			if err != nil {
				return err
			}
			signedBy := ""
			if signer != "" { // the files first: a forged file needs no node to be caught
				pub, err := signing.ParseSigner(signer)
				if err != nil {
					return exitcode.Wrap(exitcode.BadInput, err)
				}
				n, err := signing.Check(args[0], pub)
				if err != nil {
					return exitcode.Wrap(exitcode.ThresholdsFailed, err)
				}
				signedBy = fmt.Sprintf("; its %d files are the ones %s signed", n, ssh.FingerprintSHA256(pub))
			}
			src, err := verifySource(reg, r, rpc, database, home)
			if err != nil {
				return err
			}
			o, err := verify.Run(cmd.Context(), args[0], src)
			if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
				at := src.RPC
				if at == "" {
					at = src.Store
				}
				how := "give --rpc URL of a node of the chain that holds the run's blocks"
				if src.Store != "" {
					how = "give --database URL of the service's database"
				}
				start := "`tpslab net start --home DIR` for one tpslab made"
				if home := netHomeOf(r); home != "" {
					start = "`tpslab net start --home " + home + "`"
				}
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("nothing answers at %s (%v): is the run's network down? Start it again (%s), or %s", at, op.Err, start, how))
			}
			if err != nil {
				return err
			}
			where := fmt.Sprintf("blocks %d..%d of chain %s (recounted from %s", o.First, o.Last, o.ChainID, src.RPC)
			if o.Windows > 0 {
				where = fmt.Sprintf("the database of chain %s, over %d seconds of answers (recounted from %s", o.ChainID, o.Windows, o.Store)
			}
			fmt.Printf("verified: %s of %s committed payments found in %s; %s's digests hold)%s; checked: %s; not checked: %s\n",
				report.Count(o.Found), report.Count(o.Committed), where, report.EvidenceFile, signedBy, strings.Join(o.Checked, ", "), strings.Join(o.NotChecked, ", "))
			return nil
		},
	}
	c.Flags().StringVar(&rpc, "rpc", "", "RPC URL of any node of the run's chain: CometBFT's, or an EVM chain's JSON-RPC")
	c.Flags().StringVar(&database, "database", "", "the service's database URL (the ledger service's PostgreSQL)")
	c.Flags().StringVar(&home, "net-home", "", "the network tpslab net up started (its last node, or its database, is read)")
	c.Flags().StringVar(&signer, "signer", "", "a public key (ssh-ed25519 AAAA…, or its .pub file): the run's files must be the ones it signed (tpslab sign)")
	return c
}

// verifySource is where the run's payments are re-counted from: the
// flags, else the network at home, else the run's last endpoint.
func verifySource(reg *kinds.Registry, r *report.Result, rpc, database, home string) (verify.Source, error) {
	src := verify.Source{RPC: rpc, Store: database, Recountable: reg.NamesWhere(func(k kinds.Kind) bool { return k.Info().Recount })}
	var rc kinds.Recounter
	var bc kinds.BlockRecounter
	if r.Network != nil {
		if k, err := reg.Lookup(r.Network.Kind); err == nil {
			rc, _ = k.(kinds.Recounter)
			bc, _ = k.(kinds.BlockRecounter)
		}
	}
	if home != "" && (src.RPC == "" || rc != nil && src.Store == "") {
		n, err := loadNet(home)
		if err != nil {
			return src, err
		}
		if len(n.Nodes) == 0 {
			return src, exitcode.BadInputf("--net-home: %s has no nodes", home)
		}
		if last := n.Nodes[len(n.Nodes)-1]; src.RPC == "" { // not the node the run read first
			src.RPC = last.RPC
			if bc != nil && last.LoadRPC != "" {
				src.RPC = last.LoadRPC // an EVM chain's JSON-RPC beside CometBFT's
			}
		}
		if rc != nil && src.Store == "" {
			src.Store = rc.RecountSource(n)
		}
	}
	if src.RPC == "" && rc == nil {
		if r.Network == nil || len(r.Network.Endpoints) == 0 {
			return src, exitcode.BadInputf("--rpc: not given and %s names no endpoint, expected --rpc URL of a node of the chain", r.Dir)
		}
		src.RPC = r.Network.Endpoints[len(r.Network.Endpoints)-1]
	}
	if bc != nil {
		url, chainID := src.RPC, r.Network.ChainID
		src.Block = func(ctx context.Context, l report.EvidenceLine) (int64, []string, error) {
			return bc.RecountBlock(ctx, url, chainID, l)
		}
	}
	if rc != nil {
		if src.Store == "" {
			return src, exitcode.BadInputf("--database: not given, expected the database URL of the %s run's service (or --net-home DIR)", r.Network.Kind)
		}
		chainID := r.Network.ChainID
		src.Rows = func(ctx context.Context, ids []string) (map[string]bool, error) {
			return rc.Recount(ctx, src.Store, chainID, ids)
		}
	}
	return src, nil
}

// netHomeOf is the target.net_home the run's scenario names, if any.
func netHomeOf(r *report.Result) string {
	sc, _ := r.Scenario.(map[string]any)
	t, _ := sc["target"].(map[string]any)
	h, _ := t["net_home"].(string)
	return h
}
