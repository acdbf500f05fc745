// Package app is tpslab's reference Cosmos SDK chain: the real SDK modules a
// bank-send payment network needs (auth, bank, staking, genutil, consensus,
// the tx configuration), wired with depinject, nothing mocked. It is its
// own Go module so that the tpslab binary does not carry the SDK.
package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	dbm "github.com/cosmos/cosmos-db"

	runtimev1alpha1 "cosmossdk.io/api/cosmos/app/runtime/v1alpha1"
	appv1alpha1 "cosmossdk.io/api/cosmos/app/v1alpha1"
	authmodulev1 "cosmossdk.io/api/cosmos/auth/module/v1"
	bankmodulev1 "cosmossdk.io/api/cosmos/bank/module/v1"
	consensusmodulev1 "cosmossdk.io/api/cosmos/consensus/module/v1"
	genutilmodulev1 "cosmossdk.io/api/cosmos/genutil/module/v1"
	stakingmodulev1 "cosmossdk.io/api/cosmos/staking/module/v1"
	txconfigv1 "cosmossdk.io/api/cosmos/tx/config/v1"
	"cosmossdk.io/core/appconfig"
	"cosmossdk.io/depinject"
	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/runtime"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	_ "github.com/cosmos/cosmos-sdk/x/auth" // registers the module with depinject
	authkeeper "github.com/cosmos/cosmos-sdk/x/auth/keeper"
	_ "github.com/cosmos/cosmos-sdk/x/auth/tx/config" // the tx configuration and default ante handler
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	_ "github.com/cosmos/cosmos-sdk/x/bank"
	bankkeeper "github.com/cosmos/cosmos-sdk/x/bank/keeper"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	_ "github.com/cosmos/cosmos-sdk/x/consensus"
	consensuskeeper "github.com/cosmos/cosmos-sdk/x/consensus/keeper"
	consensustypes "github.com/cosmos/cosmos-sdk/x/consensus/types"
	"github.com/cosmos/cosmos-sdk/x/genutil"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"
	_ "github.com/cosmos/cosmos-sdk/x/staking"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

// Name is the daemon's name; its default home is ~/.tpsd.
const Name = "tpsd"

// DefaultNodeHome is the default home of a node.
var DefaultNodeHome = func() string {
	h, err := os.UserHomeDir()
	if err != nil {
		h = os.TempDir()
	}
	return filepath.Join(h, "."+Name)
}()

var moduleAccountPerms = []*authmodulev1.ModuleAccountPermission{
	{Account: authtypes.FeeCollectorName},
	{Account: stakingtypes.BondedPoolName, Permissions: []string{authtypes.Burner, stakingtypes.ModuleName}},
	{Account: stakingtypes.NotBondedPoolName, Permissions: []string{authtypes.Burner, stakingtypes.ModuleName}},
}

// Config is the application's module configuration.
var Config = depinject.Configs(appconfig.Compose(&appv1alpha1.Config{
	Modules: []*appv1alpha1.ModuleConfig{
		{
			Name: runtime.ModuleName,
			Config: appconfig.WrapAny(&runtimev1alpha1.Module{
				AppName:       Name,
				BeginBlockers: []string{stakingtypes.ModuleName},
				EndBlockers:   []string{stakingtypes.ModuleName},
				// genutil after staking, so that gentxs find the pools funded.
				InitGenesis: []string{authtypes.ModuleName, banktypes.ModuleName, stakingtypes.ModuleName, genutiltypes.ModuleName, consensustypes.ModuleName},
				OverrideStoreKeys: []*runtimev1alpha1.StoreKeyConfig{
					{ModuleName: authtypes.ModuleName, KvStoreKey: "acc"},
				},
			}),
		},
		{Name: authtypes.ModuleName, Config: appconfig.WrapAny(&authmodulev1.Module{Bech32Prefix: "cosmos", ModuleAccountPermissions: moduleAccountPerms})},
		{Name: banktypes.ModuleName, Config: appconfig.WrapAny(&bankmodulev1.Module{
			BlockedModuleAccountsOverride: []string{authtypes.FeeCollectorName, stakingtypes.BondedPoolName, stakingtypes.NotBondedPoolName},
		})},
		{Name: stakingtypes.ModuleName, Config: appconfig.WrapAny(&stakingmodulev1.Module{})},
		{Name: "tx", Config: appconfig.WrapAny(&txconfigv1.Config{})},
		{Name: genutiltypes.ModuleName, Config: appconfig.WrapAny(&genutilmodulev1.Module{})},
		{Name: consensustypes.ModuleName, Config: appconfig.WrapAny(&consensusmodulev1.Module{})},
	},
}),
	// genutil's command line needs its own module basic (with the gentx
	// message validator), as in the SDK's simapp.
	depinject.Supply(map[string]module.AppModuleBasic{
		genutiltypes.ModuleName: genutil.NewAppModuleBasic(genutiltypes.DefaultMessageValidator),
	}),
)

// App is the chain's ABCI application.
type App struct {
	*runtime.App
	legacyAmino       *codec.LegacyAmino
	appCodec          codec.Codec
	txConfig          client.TxConfig
	interfaceRegistry codectypes.InterfaceRegistry

	AccountKeeper         authkeeper.AccountKeeper
	BankKeeper            bankkeeper.Keeper
	StakingKeeper         *stakingkeeper.Keeper
	ConsensusParamsKeeper consensuskeeper.Keeper
}

var _ servertypes.Application = (*App)(nil)

// New builds the application on db.
func New(logger log.Logger, db dbm.DB, traceStore io.Writer, loadLatest bool, appOpts servertypes.AppOptions, baseAppOptions ...func(*baseapp.BaseApp)) *App {
	app := &App{}
	var builder *runtime.AppBuilder
	if err := depinject.Inject(depinject.Configs(Config, depinject.Supply(appOpts, logger)),
		&builder, &app.appCodec, &app.legacyAmino, &app.txConfig, &app.interfaceRegistry,
		&app.AccountKeeper, &app.BankKeeper, &app.StakingKeeper, &app.ConsensusParamsKeeper,
	); err != nil {
		panic(fmt.Errorf("wire the application: %w", err))
	}
	app.App = builder.Build(db, traceStore, baseAppOptions...)
	if err := app.Load(loadLatest); err != nil {
		panic(err)
	}
	return app
}

// AppCodec is the application's codec.
func (a *App) AppCodec() codec.Codec { return a.appCodec }

// TxConfig is the application's transaction configuration.
func (a *App) TxConfig() client.TxConfig { return a.txConfig }
