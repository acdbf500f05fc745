// Package app is tpslab's reference Cosmos SDK chain: the real SDK modules a
// bank-send payment network needs (auth, bank, staking, genutil, consensus,
// the tx configuration), wired with depinject, nothing mocked, plus the
// Cosmos Hub's economics: x/mint and the fee market the Hub runs
// (github.com/skip-mev/feemarket), so load tests meet a rising gas price,
// burned or collected fees and a growing supply as they would on the Hub.
// It is its own Go module so that the tpslab binary does not carry the SDK.
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
	mintmodulev1 "cosmossdk.io/api/cosmos/mint/module/v1"
	stakingmodulev1 "cosmossdk.io/api/cosmos/staking/module/v1"
	txconfigv1 "cosmossdk.io/api/cosmos/tx/config/v1"
	"cosmossdk.io/core/appconfig"
	"cosmossdk.io/depinject"
	"cosmossdk.io/log"
	storetypes "cosmossdk.io/store/types"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/runtime"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	_ "github.com/cosmos/cosmos-sdk/x/auth" // registers the module with depinject
	authante "github.com/cosmos/cosmos-sdk/x/auth/ante"
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
	_ "github.com/cosmos/cosmos-sdk/x/mint"
	minttypes "github.com/cosmos/cosmos-sdk/x/mint/types"
	_ "github.com/cosmos/cosmos-sdk/x/staking"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/skip-mev/feemarket/x/feemarket"
	feemarketante "github.com/skip-mev/feemarket/x/feemarket/ante"
	feemarketkeeper "github.com/skip-mev/feemarket/x/feemarket/keeper"
	feemarketpost "github.com/skip-mev/feemarket/x/feemarket/post"
	feemarkettypes "github.com/skip-mev/feemarket/x/feemarket/types"
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
	{Account: minttypes.ModuleName, Permissions: []string{authtypes.Minter}},
	{Account: feemarkettypes.ModuleName, Permissions: []string{authtypes.Burner}},
	{Account: feemarkettypes.FeeCollectorName, Permissions: []string{authtypes.Burner}},
	{Account: stakingtypes.BondedPoolName, Permissions: []string{authtypes.Burner, stakingtypes.ModuleName}},
	{Account: stakingtypes.NotBondedPoolName, Permissions: []string{authtypes.Burner, stakingtypes.ModuleName}},
}

// Config is the application's module configuration.
var Config = depinject.Configs(appconfig.Compose(&appv1alpha1.Config{
	Modules: []*appv1alpha1.ModuleConfig{
		{
			Name: runtime.ModuleName,
			Config: appconfig.WrapAny(&runtimev1alpha1.Module{
				AppName: Name,
				// The fee market is not a depinject module here (its
				// provider leaves the denom resolver unset, and queries
				// then panic); New registers it, and the orders name it.
				BeginBlockers: []string{minttypes.ModuleName, stakingtypes.ModuleName, feemarkettypes.ModuleName},
				EndBlockers:   []string{stakingtypes.ModuleName, feemarkettypes.ModuleName},
				// genutil after staking, so that gentxs find the pools funded.
				InitGenesis: []string{authtypes.ModuleName, banktypes.ModuleName, stakingtypes.ModuleName, minttypes.ModuleName, genutiltypes.ModuleName, consensustypes.ModuleName, feemarkettypes.ModuleName},
				OverrideStoreKeys: []*runtimev1alpha1.StoreKeyConfig{
					{ModuleName: authtypes.ModuleName, KvStoreKey: "acc"},
				},
			}),
		},
		{Name: authtypes.ModuleName, Config: appconfig.WrapAny(&authmodulev1.Module{Bech32Prefix: "cosmos", ModuleAccountPermissions: moduleAccountPerms})},
		{Name: banktypes.ModuleName, Config: appconfig.WrapAny(&bankmodulev1.Module{
			BlockedModuleAccountsOverride: []string{authtypes.FeeCollectorName, stakingtypes.BondedPoolName, stakingtypes.NotBondedPoolName,
				minttypes.ModuleName, feemarkettypes.ModuleName, feemarkettypes.FeeCollectorName},
		})},
		{Name: minttypes.ModuleName, Config: appconfig.WrapAny(&mintmodulev1.Module{})},
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
	// x/mint's keeper answers its own StakingKeeper interface too: mint
	// reads the staking keeper's supply and bonded ratio.
	depinject.BindInterface("github.com/cosmos/cosmos-sdk/x/mint/types/types.StakingKeeper",
		"github.com/cosmos/cosmos-sdk/x/staking/keeper/*keeper.Keeper"),
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
	FeeMarketKeeper       *feemarketkeeper.Keeper
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
	if err := app.registerFeeMarket(); err != nil {
		panic(fmt.Errorf("wire the fee market: %w", err))
	}
	if err := app.Load(loadLatest); err != nil {
		panic(err)
	}
	return app
}

// AppCodec is the application's codec.
func (a *App) AppCodec() codec.Codec { return a.appCodec }

// TxConfig is the application's transaction configuration.
func (a *App) TxConfig() client.TxConfig { return a.txConfig }

// registerFeeMarket adds the fee market as the Cosmos Hub wires it: its store
// and module, its check in the ante chain in place of the SDK's fee
// deduction, and its deduction as the post handler. With the module's
// enabled parameter false, both fall back to the SDK's own fee rules.
func (a *App) registerFeeMarket() error {
	key := storetypes.NewKVStoreKey(feemarkettypes.StoreKey)
	if err := a.RegisterStores(key); err != nil {
		return err
	}
	a.FeeMarketKeeper = feemarketkeeper.NewKeeper(a.appCodec, key, a.AccountKeeper, feeDenomOnly{},
		authtypes.NewModuleAddress("gov").String())
	if err := a.RegisterModules(feemarket.NewAppModule(a.appCodec, *a.FeeMarketKeeper)); err != nil {
		return err
	}
	ante := sdk.ChainAnteDecorators(
		authante.NewSetUpContextDecorator(),
		authante.NewExtensionOptionsDecorator(nil),
		authante.NewValidateBasicDecorator(),
		authante.NewTxTimeoutHeightDecorator(),
		authante.NewValidateMemoDecorator(a.AccountKeeper),
		authante.NewConsumeGasForTxSizeDecorator(a.AccountKeeper),
		feemarketante.NewFeeMarketCheckDecorator(a.AccountKeeper, a.BankKeeper, nil, a.FeeMarketKeeper,
			authante.NewDeductFeeDecorator(a.AccountKeeper, a.BankKeeper, nil, nil)),
		authante.NewSetPubKeyDecorator(a.AccountKeeper),
		authante.NewValidateSigCountDecorator(a.AccountKeeper),
		authante.NewSigGasConsumeDecorator(a.AccountKeeper, authante.DefaultSigVerificationGasConsumer),
		authante.NewSigVerificationDecorator(a.AccountKeeper, a.txConfig.SignModeHandler()),
		authante.NewIncrementSequenceDecorator(a.AccountKeeper),
	)
	a.SetAnteHandler(ante)
	a.SetPostHandler(sdk.ChainPostDecorators(feemarketpost.NewFeeMarketDeductDecorator(a.AccountKeeper, a.BankKeeper, a.FeeMarketKeeper)))
	return nil
}

// feeDenomOnly accepts fees in the fee market's own denom only: a payment
// network under test has one currency, and the Hub's resolver for others
// needs its liquidity modules.
type feeDenomOnly struct{}

func (feeDenomOnly) ConvertToDenom(_ sdk.Context, coin sdk.DecCoin, denom string) (sdk.DecCoin, error) {
	if coin.Denom == denom {
		return coin, nil
	}
	return sdk.DecCoin{}, fmt.Errorf("fees are paid in %s, not %s", denom, coin.Denom)
}

func (feeDenomOnly) ExtraDenoms(sdk.Context) ([]string, error) { return nil, nil }
