// Package cli is the command line of tpsd: the SDK's standard commands over the
// application's own wiring.
package cli

import (
	"errors"
	"io"
	"os"

	cmtcfg "github.com/cometbft/cometbft/config"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/spf13/cobra"

	"cosmossdk.io/depinject"
	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/config"
	"github.com/cosmos/cosmos-sdk/client/debug"
	"github.com/cosmos/cosmos-sdk/client/keys"
	"github.com/cosmos/cosmos-sdk/client/rpc"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/server"
	serverconfig "github.com/cosmos/cosmos-sdk/server/config"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	authcmd "github.com/cosmos/cosmos-sdk/x/auth/client/cli"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	genutilcli "github.com/cosmos/cosmos-sdk/x/genutil/client/cli"

	"github.com/skip-mev/feemarket/x/feemarket"
	feemarkettypes "github.com/skip-mev/feemarket/x/feemarket/types"

	"github.com/tpslab/tpslab/chains/cosmos/app"
)

// NewRootCmd builds the command line from the application's own wiring.
func NewRootCmd() *cobra.Command {
	var (
		basics    module.BasicManager
		clientCtx client.Context
	)
	// The SDK's autocli (cosmossdk.io/client/v2) is not reachable from here,
	// so module commands are not generated: the standard genesis, keys,
	// start and tx commands are all the network tooling drives.
	if err := depinject.Inject(
		depinject.Configs(app.Config,
			depinject.Supply(log.NewNopLogger()),
			depinject.Provide(ProvideClientContext),
		),
		&basics, &clientCtx,
	); err != nil {
		panic(err)
	}
	// The fee market is registered by hand (see app.registerFeeMarket), so
	// its genesis section is added to what init writes here.
	basics[feemarkettypes.ModuleName] = feemarket.AppModuleBasic{}
	root := &cobra.Command{
		Use:           app.Name,
		Short:         "tpslab's reference Cosmos SDK chain (auth, bank, staking, mint, fee market)",
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
			srv := serverconfig.DefaultConfig()
			srv.MinGasPrices = "0stake" // a test chain: fees are settable per run, not required
			return server.InterceptConfigsPreRunHandler(cmd, serverconfig.DefaultConfigTemplate, srv, cmtcfg.DefaultConfig())
		},
	}
	root.AddCommand(
		genutilcli.InitCmd(basics, app.DefaultNodeHome),
		debug.Cmd(),
	)
	server.AddCommands(root, app.DefaultNodeHome, newApp, exportApp, func(*cobra.Command) {})
	root.AddCommand(
		server.StatusCommand(),
		genutilcli.Commands(clientCtx.TxConfig, basics, app.DefaultNodeHome),
		queryCommand(),
		txCommand(),
		keys.Commands(),
	)
	return root
}

// ProvideClientContext builds the client context from the application's codecs.
func ProvideClientContext(appCodec codec.Codec, registry codectypes.InterfaceRegistry, txConfig client.TxConfig, amino *codec.LegacyAmino) client.Context {
	ctx := client.Context{}.
		WithCodec(appCodec).
		WithInterfaceRegistry(registry).
		WithTxConfig(txConfig).
		WithLegacyAmino(amino).
		WithInput(os.Stdin).
		WithAccountRetriever(authtypes.AccountRetriever{}).
		WithHomeDir(app.DefaultNodeHome).
		WithViper("")
	ctx, err := config.ReadDefaultValuesFromDefaultClientConfig(ctx)
	if err != nil {
		panic(err)
	}
	return ctx
}

func queryCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "query", Aliases: []string{"q"}, Short: "Querying subcommands", RunE: client.ValidateCmd}
	cmd.AddCommand(rpc.QueryEventForTxCmd(), server.QueryBlockCmd(), authcmd.QueryTxsByEventsCmd(), server.QueryBlocksCmd(), authcmd.QueryTxCmd(), server.QueryBlockResultsCmd())
	return cmd
}

func txCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tx", Short: "Transactions subcommands", RunE: client.ValidateCmd}
	cmd.AddCommand(authcmd.GetSignCommand(), authcmd.GetSignBatchCommand(), authcmd.GetMultiSignCommand(), authcmd.GetValidateSignaturesCommand(),
		authcmd.GetBroadcastCommand(), authcmd.GetEncodeCommand(), authcmd.GetDecodeCommand(), authcmd.GetSimulateCmd())
	return cmd
}

func newApp(logger log.Logger, db dbm.DB, traceStore io.Writer, appOpts servertypes.AppOptions) servertypes.Application {
	return app.New(logger, db, traceStore, true, appOpts, server.DefaultBaseappOptions(appOpts)...)
}

func exportApp(logger log.Logger, db dbm.DB, traceStore io.Writer, height int64, forZeroHeight bool, jailAllowedAddrs []string, appOpts servertypes.AppOptions, modulesToExport []string) (servertypes.ExportedApp, error) {
	a := app.New(logger, db, traceStore, height == -1, appOpts)
	if height != -1 {
		if err := a.LoadHeight(height); err != nil {
			return servertypes.ExportedApp{}, err
		}
	}
	if a == nil {
		return servertypes.ExportedApp{}, errors.New("no application")
	}
	return a.ExportAppStateAndValidators(forZeroHeight, jailAllowedAddrs, modulesToExport)
}
