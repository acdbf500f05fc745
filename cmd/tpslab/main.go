// Command tpslab measures the committed throughput of payment networks.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/interrupt"
)

func main() {
	ctx, stop := interrupt.Notify(context.Background())
	err := cli.Execute(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpslab:", err)
	}
	os.Exit(exitcode.Of(err))
}
