// Package app is tpslab's Cosmos EVM chain: the Cosmos SDK modules of the
// reference SDK chain (auth, bank, staking, genutil, consensus) with Cosmos
// EVM's x/vm, x/feemarket and x/erc20 from github.com/cosmos/evm, and what
// those need (upgrade, IBC core and transfer, which the EVM ante handler and
// x/erc20 take). The EVM denom has 18 decimals, so wei are the bank's base
// unit and no x/precisebank is needed. Cosmos EVM's example daemon (evmd)
// is not published as a module, so this wiring is our own; it is a module of
// its own so that the tpslab binary does not carry the SDK or the EVM.
package app

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/ethereum/go-ethereum/common"
	"github.com/spf13/cast"

	"cosmossdk.io/log"
	storetypes "cosmossdk.io/store/types"
	"cosmossdk.io/x/upgrade"
	upgradekeeper "cosmossdk.io/x/upgrade/keeper"
	upgradetypes "cosmossdk.io/x/upgrade/types"

	evmante "github.com/cosmos/evm/ante"
	antetypes "github.com/cosmos/evm/ante/types"
	evmencoding "github.com/cosmos/evm/encoding"
	evmaddress "github.com/cosmos/evm/encoding/address"
	evmmempool "github.com/cosmos/evm/mempool"
	srvflags "github.com/cosmos/evm/server/flags"
	"github.com/cosmos/evm/x/erc20"
	erc20keeper "github.com/cosmos/evm/x/erc20/keeper"
	erc20types "github.com/cosmos/evm/x/erc20/types"
	"github.com/cosmos/evm/x/feemarket"
	feemarketkeeper "github.com/cosmos/evm/x/feemarket/keeper"
	feemarkettypes "github.com/cosmos/evm/x/feemarket/types"
	"github.com/cosmos/evm/x/vm"
	evmkeeper "github.com/cosmos/evm/x/vm/keeper"
	evmtypes "github.com/cosmos/evm/x/vm/types"
	ibctransfer "github.com/cosmos/ibc-go/v10/modules/apps/transfer"
	ibctransferkeeper "github.com/cosmos/ibc-go/v10/modules/apps/transfer/keeper"
	ibctransfertypes "github.com/cosmos/ibc-go/v10/modules/apps/transfer/types"
	ibc "github.com/cosmos/ibc-go/v10/modules/core"
	porttypes "github.com/cosmos/ibc-go/v10/modules/core/05-port/types"
	ibcexported "github.com/cosmos/ibc-go/v10/modules/core/exported"
	ibckeeper "github.com/cosmos/ibc-go/v10/modules/core/keeper"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	nodeservice "github.com/cosmos/cosmos-sdk/client/grpc/node"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/runtime"
	"github.com/cosmos/cosmos-sdk/server/api"
	serverconfig "github.com/cosmos/cosmos-sdk/server/config"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkmempool "github.com/cosmos/cosmos-sdk/types/mempool"
	"github.com/cosmos/cosmos-sdk/types/module"
	"github.com/cosmos/cosmos-sdk/version"
	"github.com/cosmos/cosmos-sdk/x/auth"
	authkeeper "github.com/cosmos/cosmos-sdk/x/auth/keeper"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/bank"
	bankkeeper "github.com/cosmos/cosmos-sdk/x/bank/keeper"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	"github.com/cosmos/cosmos-sdk/x/consensus"
	consensuskeeper "github.com/cosmos/cosmos-sdk/x/consensus/keeper"
	consensustypes "github.com/cosmos/cosmos-sdk/x/consensus/types"
	"github.com/cosmos/cosmos-sdk/x/genutil"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

const (
	// Name is the daemon's name; its default home is ~/.tpsevmd.
	Name = "tpsevmd"
	// Denom is the chain's one coin: staking, fees and the EVM's native
	// token, 18 decimals (1 atps = 1 wei).
	Denom = "atps"
	// DisplayDenom is Denom's display unit (10^18 atps).
	DisplayDenom = "tps"
)

func init() {
	sdk.DefaultBondDenom = Denom
}

// DefaultNodeHome is the default home of a node.
var DefaultNodeHome = func() string {
	h, err := os.UserHomeDir()
	if err != nil {
		h = os.TempDir()
	}
	return filepath.Join(h, "."+Name)
}()

// moduleAccountPerms are the module accounts and what each may do.
var moduleAccountPerms = map[string][]string{
	authtypes.FeeCollectorName:     nil,
	stakingtypes.BondedPoolName:    {authtypes.Burner, authtypes.Staking},
	stakingtypes.NotBondedPoolName: {authtypes.Burner, authtypes.Staking},
	ibctransfertypes.ModuleName:    {authtypes.Minter, authtypes.Burner},
	evmtypes.ModuleName:            {authtypes.Minter, authtypes.Burner},
	feemarkettypes.ModuleName:      nil,
	erc20types.ModuleName:          {authtypes.Minter, authtypes.Burner},
}

// ModuleBasics are the modules' codecs, genesis and commands, without keepers
// (the command line needs them before any application exists).
func ModuleBasics() module.BasicManager {
	return module.NewBasicManager(
		auth.AppModuleBasic{}, bank.AppModuleBasic{}, staking.AppModuleBasic{},
		genutil.NewAppModuleBasic(genutiltypes.DefaultMessageValidator),
		consensus.AppModuleBasic{}, upgrade.AppModuleBasic{},
		ibc.AppModuleBasic{}, ibctransfer.AppModuleBasic{},
		vm.AppModuleBasic{}, feemarket.AppModuleBasic{}, erc20.AppModuleBasic{},
	)
}

// Encoding is the chain's codecs and transaction configuration, with every
// module's types registered.
func Encoding(evmChainID uint64) evmencoding.Config {
	enc := evmencoding.MakeConfig(evmChainID)
	basics := ModuleBasics()
	basics.RegisterLegacyAminoCodec(enc.Amino)
	basics.RegisterInterfaces(enc.InterfaceRegistry)
	return enc
}

// App is the chain's ABCI application.
type App struct {
	*baseapp.BaseApp

	legacyAmino       *codec.LegacyAmino
	appCodec          codec.Codec
	interfaceRegistry codectypes.InterfaceRegistry
	txConfig          client.TxConfig
	clientCtx         client.Context

	pendingTxListeners []evmante.PendingTxListener

	AccountKeeper         authkeeper.AccountKeeper
	BankKeeper            bankkeeper.Keeper
	StakingKeeper         *stakingkeeper.Keeper
	ConsensusParamsKeeper consensuskeeper.Keeper
	UpgradeKeeper         *upgradekeeper.Keeper
	IBCKeeper             *ibckeeper.Keeper
	TransferKeeper        ibctransferkeeper.Keeper
	FeeMarketKeeper       feemarketkeeper.Keeper
	EVMKeeper             *evmkeeper.Keeper
	Erc20Keeper           erc20keeper.Keeper

	ModuleManager *module.Manager
	basics        module.BasicManager
}

var _ servertypes.Application = (*App)(nil)

// New builds the application on db.
func New(logger log.Logger, db dbm.DB, traceStore io.Writer, loadLatest bool, appOpts servertypes.AppOptions, baseAppOptions ...func(*baseapp.BaseApp)) *App {
	evmChainID := cast.ToUint64(appOpts.Get(srvflags.EVMChainID))
	if evmChainID == 0 {
		evmChainID = DefaultEVMChainID
	}
	enc := Encoding(evmChainID)
	bApp := baseapp.NewBaseApp(Name, logger, db, enc.TxConfig.TxDecoder(), baseAppOptions...)
	bApp.SetCommitMultiStoreTracer(traceStore)
	bApp.SetVersion(version.Version)
	bApp.SetInterfaceRegistry(enc.InterfaceRegistry)
	bApp.SetTxEncoder(enc.TxConfig.TxEncoder())

	keys := storetypes.NewKVStoreKeys(authtypes.StoreKey, banktypes.StoreKey, stakingtypes.StoreKey,
		consensustypes.StoreKey, upgradetypes.StoreKey, ibcexported.StoreKey, ibctransfertypes.StoreKey,
		evmtypes.StoreKey, feemarkettypes.StoreKey, erc20types.StoreKey)
	tkeys := storetypes.NewTransientStoreKeys(evmtypes.TransientKey, feemarkettypes.TransientKey)

	app := &App{BaseApp: bApp, legacyAmino: enc.Amino, appCodec: enc.Codec, interfaceRegistry: enc.InterfaceRegistry, txConfig: enc.TxConfig}
	cdc := enc.Codec
	// No x/gov here: its module address is the authority, as on chains that
	// have it; nothing on this test chain changes parameters.
	authority := authtypes.NewModuleAddress("gov")
	authAddr := authority.String()
	prefix := sdk.GetConfig()

	app.ConsensusParamsKeeper = consensuskeeper.NewKeeper(cdc, runtime.NewKVStoreService(keys[consensustypes.StoreKey]), authAddr, runtime.EventService{})
	bApp.SetParamStore(app.ConsensusParamsKeeper.ParamsStore)
	app.AccountKeeper = authkeeper.NewAccountKeeper(cdc, runtime.NewKVStoreService(keys[authtypes.StoreKey]), authtypes.ProtoBaseAccount,
		moduleAccountPerms, evmaddress.NewEvmCodec(prefix.GetBech32AccountAddrPrefix()), prefix.GetBech32AccountAddrPrefix(), authAddr)
	app.BankKeeper = bankkeeper.NewBaseKeeper(cdc, runtime.NewKVStoreService(keys[banktypes.StoreKey]), app.AccountKeeper, blockedAddresses(), authAddr, logger)
	app.StakingKeeper = stakingkeeper.NewKeeper(cdc, runtime.NewKVStoreService(keys[stakingtypes.StoreKey]), app.AccountKeeper, app.BankKeeper, authAddr,
		evmaddress.NewEvmCodec(prefix.GetBech32ValidatorAddrPrefix()), evmaddress.NewEvmCodec(prefix.GetBech32ConsensusAddrPrefix()))
	app.UpgradeKeeper = upgradekeeper.NewKeeper(map[int64]bool{}, runtime.NewKVStoreService(keys[upgradetypes.StoreKey]), cdc,
		cast.ToString(appOpts.Get(flags.FlagHome)), bApp, authAddr)
	app.IBCKeeper = ibckeeper.NewKeeper(cdc, runtime.NewKVStoreService(keys[ibcexported.StoreKey]), nil, app.UpgradeKeeper, authAddr)

	app.FeeMarketKeeper = feemarketkeeper.NewKeeper(cdc, authority, keys[feemarkettypes.StoreKey], tkeys[feemarkettypes.TransientKey])
	// The EVM keeper comes before the ERC20 keeper, which takes it; it gets
	// the ERC20 keeper by reference, filled in below. No static precompiles
	// (staking, distribution, ...): the payments here are transfers.
	app.EVMKeeper = evmkeeper.NewKeeper(cdc, keys[evmtypes.StoreKey], tkeys[evmtypes.TransientKey], keys, authority,
		app.AccountKeeper, app.BankKeeper, app.StakingKeeper, app.FeeMarketKeeper, &app.ConsensusParamsKeeper, &app.Erc20Keeper,
		evmChainID, cast.ToString(appOpts.Get(srvflags.EVMTracer)))
	app.Erc20Keeper = erc20keeper.NewKeeper(keys[erc20types.StoreKey], cdc, authority, app.AccountKeeper, app.BankKeeper,
		app.EVMKeeper, app.StakingKeeper, &app.TransferKeeper)
	app.TransferKeeper = ibctransferkeeper.NewKeeper(cdc, runtime.NewKVStoreService(keys[ibctransfertypes.StoreKey]), nil,
		app.IBCKeeper.ChannelKeeper, app.IBCKeeper.ChannelKeeper, app.MsgServiceRouter(), app.AccountKeeper, app.BankKeeper, authAddr)
	router := porttypes.NewRouter()
	router.AddRoute(ibctransfertypes.ModuleName, ibctransfer.NewIBCModule(app.TransferKeeper))
	app.IBCKeeper.SetRouter(router)

	app.ModuleManager = module.NewManager(
		genutil.NewAppModule(app.AccountKeeper, app.StakingKeeper, app, enc.TxConfig),
		auth.NewAppModule(cdc, app.AccountKeeper, nil, nil),
		bank.NewAppModule(cdc, app.BankKeeper, app.AccountKeeper, nil),
		staking.NewAppModule(cdc, app.StakingKeeper, app.AccountKeeper, app.BankKeeper, nil),
		consensus.NewAppModule(cdc, app.ConsensusParamsKeeper),
		upgrade.NewAppModule(app.UpgradeKeeper, app.AccountKeeper.AddressCodec()),
		ibc.NewAppModule(app.IBCKeeper),
		ibctransfer.NewAppModule(app.TransferKeeper),
		vm.NewAppModule(app.EVMKeeper, app.AccountKeeper, app.BankKeeper, app.AccountKeeper.AddressCodec()),
		feemarket.NewAppModule(app.FeeMarketKeeper),
		erc20.NewAppModule(app.Erc20Keeper, app.AccountKeeper),
	)
	app.basics = module.NewBasicManagerFromManager(app.ModuleManager, map[string]module.AppModuleBasic{
		genutiltypes.ModuleName: genutil.NewAppModuleBasic(genutiltypes.DefaultMessageValidator),
	})
	app.ModuleManager.SetOrderPreBlockers(upgradetypes.ModuleName, authtypes.ModuleName, evmtypes.ModuleName)
	// The fee market's begin blocker sets the base fee the EVM's uses.
	app.ModuleManager.SetOrderBeginBlockers(ibcexported.ModuleName, ibctransfertypes.ModuleName, erc20types.ModuleName,
		feemarkettypes.ModuleName, evmtypes.ModuleName, stakingtypes.ModuleName)
	// The fee market's end blocker last: it reads the block's gas used.
	app.ModuleManager.SetOrderEndBlockers(stakingtypes.ModuleName, evmtypes.ModuleName, erc20types.ModuleName, feemarkettypes.ModuleName)
	// genutil after staking (the pools) and after the fee market (gentxs
	// pass the ante handler's minimum gas price check).
	order := []string{authtypes.ModuleName, banktypes.ModuleName, stakingtypes.ModuleName, ibcexported.ModuleName,
		evmtypes.ModuleName, feemarkettypes.ModuleName, erc20types.ModuleName, ibctransfertypes.ModuleName,
		genutiltypes.ModuleName, upgradetypes.ModuleName, consensustypes.ModuleName}
	app.ModuleManager.SetOrderInitGenesis(order...)
	app.ModuleManager.SetOrderExportGenesis(order...)
	if err := app.ModuleManager.RegisterServices(module.NewConfigurator(cdc, app.MsgServiceRouter(), app.GRPCQueryRouter())); err != nil {
		panic(fmt.Errorf("register the modules' services: %w", err))
	}

	app.MountKVStores(keys)
	app.MountTransientStores(tkeys)
	app.SetInitChainer(app.initChainer)
	app.SetPreBlocker(func(ctx sdk.Context, _ *abci.RequestFinalizeBlock) (*sdk.ResponsePreBlock, error) {
		return app.ModuleManager.PreBlock(ctx)
	})
	app.SetBeginBlocker(app.ModuleManager.BeginBlock)
	app.SetEndBlocker(app.ModuleManager.EndBlock)

	ante := evmante.HandlerOptions{
		Cdc: cdc, AccountKeeper: app.AccountKeeper, BankKeeper: app.BankKeeper, IBCKeeper: app.IBCKeeper,
		FeeMarketKeeper: app.FeeMarketKeeper, EvmKeeper: app.EVMKeeper,
		ExtensionOptionChecker: antetypes.HasDynamicFeeExtensionOption,
		SignModeHandler:        enc.TxConfig.SignModeHandler(), SigGasConsumer: evmante.SigVerificationGasConsumer,
		MaxTxGasWanted: cast.ToUint64(appOpts.Get(srvflags.EVMMaxTxGasWanted)), DynamicFeeChecker: true,
		PendingTxListener: app.onPendingTx,
	}
	if err := ante.Validate(); err != nil {
		panic(err)
	}
	app.SetAnteHandler(evmante.NewAnteHandler(ante))

	if loadLatest {
		if err := app.LoadLatestVersion(); err != nil {
			panic(fmt.Errorf("load the latest version: %w", err))
		}
	}
	return app
}

// DefaultEVMChainID is the EIP-155 chain id unless app.toml's
// evm.evm-chain-id says otherwise.
const DefaultEVMChainID = 262144

// blockedAddresses are the module accounts, which cannot receive bank sends.
func blockedAddresses() map[string]bool {
	blocked := map[string]bool{}
	for name := range moduleAccountPerms {
		blocked[authtypes.NewModuleAddress(name).String()] = true
	}
	return blocked
}

func (a *App) initChainer(ctx sdk.Context, req *abci.RequestInitChain) (*abci.ResponseInitChain, error) {
	var state map[string]json.RawMessage
	if err := json.Unmarshal(req.AppStateBytes, &state); err != nil {
		return nil, err
	}
	if err := a.UpgradeKeeper.SetModuleVersionMap(ctx, a.ModuleManager.GetVersionMap()); err != nil {
		return nil, err
	}
	return a.ModuleManager.InitGenesis(ctx, a.appCodec, state)
}

func (a *App) onPendingTx(hash common.Hash) {
	for _, l := range a.pendingTxListeners {
		l(hash)
	}
}

// RegisterPendingTxListener lets the JSON-RPC server hear of pending
// Ethereum transactions.
func (a *App) RegisterPendingTxListener(l func(common.Hash)) {
	a.pendingTxListeners = append(a.pendingTxListeners, l)
}

// GetMempool is the application-side mempool: none (a typed nil, which
// the JSON-RPC server takes as "no EVM mempool"). CometBFT's mempool
// orders the transactions, as for the other SDK chain, and a nonce gap is
// refused at CheckTx.
func (a *App) GetMempool() sdkmempool.ExtMempool {
	return (*evmmempool.ExperimentalEVMMempool)(nil)
}

// SetClientCtx keeps the client context the server made.
func (a *App) SetClientCtx(c client.Context) { a.clientCtx = c }

// AppCodec is the application's codec.
func (a *App) AppCodec() codec.Codec { return a.appCodec }

// TxConfig is the application's transaction configuration.
func (a *App) TxConfig() client.TxConfig { return a.txConfig }

// LoadHeight loads the state at a height (export).
func (a *App) LoadHeight(height int64) error { return a.LoadVersion(height) }

// RegisterAPIRoutes registers the modules' REST routes (gRPC gateway).
func (a *App) RegisterAPIRoutes(apiSvr *api.Server, _ serverconfig.APIConfig) {
	clientCtx := apiSvr.ClientCtx
	authtx.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	cmtservice.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	nodeservice.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	a.basics.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
}

// RegisterTxService registers the transaction service (simulate, broadcast).
func (a *App) RegisterTxService(clientCtx client.Context) {
	authtx.RegisterTxService(a.GRPCQueryRouter(), clientCtx, a.Simulate, a.interfaceRegistry)
}

// RegisterTendermintService registers the CometBFT queries.
func (a *App) RegisterTendermintService(clientCtx client.Context) {
	cmtservice.RegisterTendermintService(clientCtx, a.GRPCQueryRouter(), a.interfaceRegistry, a.Query)
}

// RegisterNodeService registers the node's own queries.
func (a *App) RegisterNodeService(clientCtx client.Context, cfg serverconfig.Config) {
	nodeservice.RegisterNodeService(clientCtx, a.GRPCQueryRouter(), cfg)
}
