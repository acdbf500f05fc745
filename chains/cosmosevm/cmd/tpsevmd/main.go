// Command tpsevmd runs tpslab's Cosmos EVM chain. It has the SDK's
// standard command line (init, genesis add-genesis-account / gentx /
// collect-gentxs, start, keys, tx, query), so `tpslab net up --kind cosmos-evm`
// drives it as it drives tpsd; `start` also serves the Ethereum JSON-RPC.
package main

import (
	"fmt"
	"os"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/tpslab/tpslab/chains/cosmosevm/app"
	"github.com/tpslab/tpslab/chains/cosmosevm/cli"
)

func main() {
	if err := svrcmd.Execute(cli.NewRootCmd(), "", app.DefaultNodeHome); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
