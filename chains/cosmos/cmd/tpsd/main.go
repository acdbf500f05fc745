// Command tpsd runs tpslab's reference Cosmos SDK chain. It has the SDK's
// standard command line (init, genesis add-genesis-account / gentx /
// collect-gentxs, start, keys, tx, query), so `tpslab net up --kind cosmos`
// drives it exactly as it drives a user's own SDK daemon (--binary).
package main

import (
	"fmt"
	"os"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/tpslab/tpslab/chains/cosmos/app"
	"github.com/tpslab/tpslab/chains/cosmos/cli"
)

func main() {
	if err := svrcmd.Execute(cli.NewRootCmd(), "", app.DefaultNodeHome); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
