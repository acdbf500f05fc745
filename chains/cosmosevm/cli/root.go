// Package cli is the command line of tpsevmd: the SDK's standard commands,
// with Cosmos EVM's start (CometBFT, the SDK servers and the Ethereum
// JSON-RPC).
package cli

import (
	"errors"
	"io"
	"os"

	cmtcfg "github.com/cometbft/cometbft/config"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/spf13/cobra"

	"cosmossdk.io/log"

	evmconfig "github.com/cosmos/evm/config"
	evmserver "github.com/cosmos/evm/server"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/config"
	"github.com/cosmos/cosmos-sdk/client/debug"
	"github.com/cosmos/cosmos-sdk/client/keys"
	"github.com/cosmos/cosmos-sdk/client/rpc"
	"github.com/cosmos/cosmos-sdk/server"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	authcmd "github.com/cosmos/cosmos-sdk/x/auth/client/cli"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	genutilcli "github.com/cosmos/cosmos-sdk/x/genutil/client/cli"

	"github.com/tpslab/tpslab/chains/cosmosevm/app"
)

// NewRootCmd builds the command line.
func NewRootCmd() *cobra.Command {
	enc := app.Encoding(app.DefaultEVMChainID)
	basics := app.GenesisBasics()
	clientCtx := client.Context{}.
		WithCodec(enc.Codec).
		WithInterfaceRegistry(enc.InterfaceRegistry).
		WithTxConfig(enc.TxConfig).
		WithLegacyAmino(enc.Amino).
		WithInput(os.Stdin).
		WithAccountRetriever(authtypes.AccountRetriever{}).
		WithHomeDir(app.DefaultNodeHome).
		WithViper("")
	root := &cobra.Command{
		Use:           app.Name,
		Short:         "tpslab's Cosmos EVM chain (auth, bank, staking, x/vm, x/feemarket, x/erc20)",
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.OutOrStdout())
			cmd.SetErr(cmd.ErrOrStderr())
			ctx := clientCtx.WithCmdContext(cmd.Context())
			ctx, err := client.ReadPersistentCommandFlags(ctx, cmd.Flags())
			if err != nil {
				return err
			}
			if ctx, err = config.ReadFromClientConfig(ctx); err != nil {
				return err
			}
			if err := client.SetCmdClientContextHandler(ctx, cmd); err != nil {
				return err
			}
			// app.toml with Cosmos EVM's sections (evm, json-rpc).
			template, cfg := evmconfig.InitAppConfig(app.Denom, app.DefaultEVMChainID)
			return server.InterceptConfigsPreRunHandler(cmd, template, cfg, cmtcfg.DefaultConfig())
		},
	}
	root.AddCommand(genutilcli.InitCmd(basics, app.DefaultNodeHome), debug.Cmd())
	evmserver.AddCommands(root, evmserver.NewDefaultStartOptions(newApp, app.DefaultNodeHome), exportApp, func(*cobra.Command) {})
	root.AddCommand(
		server.StatusCommand(),
		genutilcli.Commands(enc.TxConfig, basics, app.DefaultNodeHome),
		queryCommand(),
		txCommand(),
		keys.Commands(),
	)
	return root
}

func queryCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "query", Aliases: []string{"q"}, Short: "Querying subcommands", RunE: client.ValidateCmd}
	cmd.AddCommand(rpc.QueryEventForTxCmd(), server.QueryBlockCmd(), authcmd.QueryTxsByEventsCmd(), server.QueryBlocksCmd(), authcmd.QueryTxCmd(), server.QueryBlockResultsCmd())
	return cmd
}

func txCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tx", Short: "Transactions subcommands", RunE: client.ValidateCmd}
	cmd.AddCommand(authcmd.GetSignCommand(), authcmd.GetBroadcastCommand(), authcmd.GetEncodeCommand(), authcmd.GetDecodeCommand())
	return cmd
}

func newApp(logger log.Logger, db dbm.DB, traceStore io.Writer, appOpts servertypes.AppOptions) evmserver.Application {
	return app.New(logger, db, traceStore, true, appOpts, server.DefaultBaseappOptions(appOpts)...)
}

func exportApp(logger log.Logger, db dbm.DB, traceStore io.Writer, height int64, _ bool, _ []string, appOpts servertypes.AppOptions, modulesToExport []string) (servertypes.ExportedApp, error) {
	a := app.New(logger, db, traceStore, height == -1, appOpts)
	if a == nil {
		return servertypes.ExportedApp{}, errors.New("no application")
	}
	if height != -1 {
		if err := a.LoadHeight(height); err != nil {
			return servertypes.ExportedApp{}, err
		}
	}
	return a.ExportAppStateAndValidators(false, nil, modulesToExport)
}
