package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/ledgersvc"
)

// ledgerServiceCmd runs one process of the reference ledger service (`net
// up --kind ledger` starts them).
func ledgerServiceCmd() *cobra.Command {
	var c ledgersvc.Config
	var home string
	cmd := &cobra.Command{
		Use:    "ledger-service --listen ADDR --db URL",
		Short:  "Run one process of the reference ledger service (started for you by `net up --kind ledger`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.Listen == "" || c.DatabaseURL == "" {
				return exitcode.BadInputf("ledger-service: --listen and --db are required")
			}
			fmt.Fprintf(os.Stderr, "ledger service on %s (home %s)\n", c.Listen, home)
			return exitcode.Wrap(exitcode.TargetFailed, ledgersvc.Run(cmd.Context(), c))
		},
	}
	f := cmd.Flags()
	f.StringVar(&home, "home", "", "the process's home (for its log)")
	f.StringVar(&c.Listen, "listen", "", "address to listen on")
	f.StringVar(&c.DatabaseURL, "db", "", "PostgreSQL URL")
	f.StringVar(&c.ChainID, "chain-id", "tpslab", "chain id the payments must carry")
	f.IntVar(&c.Connections, "db-connections", 16, "database connections")
	f.IntVar(&c.Batch, "batch", 1, "payments per database transaction")
	f.DurationVar(&c.BatchWait, "batch-wait", 0, "longest wait to fill a batch (0: 2ms)")
	f.StringVar(&c.Isolation, "isolation", "serializable", "serializable | row-locks")
	f.IntVar(&c.MaxQueue, "max-queue", 0, "payments waiting for the database before 429 (0: 10000)")
	return cmd
}
