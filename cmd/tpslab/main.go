// Command tpslab measures the committed throughput of payment networks.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/exitcode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cli.Root().ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpslab:", err)
	}
	os.Exit(exitcode.Of(err))
}
