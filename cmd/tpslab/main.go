// Command tpslab measures the committed throughput of payment networks.
package main

import (
	"context"
	"os"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/interrupt"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/sysmon"
)

func main() {
	// The commands whose own CPU is measured run with the runtime's
	// monitor kept awake (internal/sysmon); `tpslab node`, a system under
	// test, does not.
	if len(os.Args) > 1 && (os.Args[1] == "run" || os.Args[1] == "find-max" || os.Args[1] == "sink") {
		sysmon.Awake()
	}
	cli.FitProcs = true
	ctx, stop := interrupt.Notify(context.Background())
	code := cli.Main(ctx, all.Registry(), os.Args[1:])
	stop()
	os.Exit(code)
}
