package app

import (
	"encoding/json"

	evmtypes "github.com/cosmos/evm/x/vm/types"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/types/module"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
)

// GenesisBasics are ModuleBasics whose default genesis (what `init` writes)
// is this chain's: the bank knows atps has 18 decimals (x/vm reads its EVM
// coin from that metadata at InitGenesis), and x/vm's denom is atps with no
// static precompiles (none are wired).
func GenesisBasics() module.BasicManager {
	basics := ModuleBasics()
	basics[banktypes.ModuleName] = withGenesis{basics[banktypes.ModuleName], func(cdc codec.JSONCodec) json.RawMessage {
		g := banktypes.DefaultGenesisState()
		g.DenomMetadata = []banktypes.Metadata{{
			Description: "tpslab's test coin", Base: Denom, Display: DisplayDenom, Name: DisplayDenom, Symbol: "TPS",
			DenomUnits: []*banktypes.DenomUnit{{Denom: Denom, Exponent: 0}, {Denom: DisplayDenom, Exponent: 18}},
		}}
		return cdc.MustMarshalJSON(g)
	}}
	basics[evmtypes.ModuleName] = withGenesis{basics[evmtypes.ModuleName], func(cdc codec.JSONCodec) json.RawMessage {
		g := evmtypes.DefaultGenesisState()
		g.Params.EvmDenom = Denom
		g.Params.ExtendedDenomOptions = &evmtypes.ExtendedDenomOptions{ExtendedDenom: Denom}
		g.Params.ActiveStaticPrecompiles = nil
		return cdc.MustMarshalJSON(g)
	}}
	return basics
}

// withGenesis is a module basic with another default genesis.
type withGenesis struct {
	module.AppModuleBasic
	def func(codec.JSONCodec) json.RawMessage
}

func (w withGenesis) DefaultGenesis(cdc codec.JSONCodec) json.RawMessage { return w.def(cdc) }

func (w withGenesis) ValidateGenesis(cdc codec.JSONCodec, c client.TxEncodingConfig, bz json.RawMessage) error {
	return w.AppModuleBasic.(module.HasGenesisBasics).ValidateGenesis(cdc, c, bz)
}
