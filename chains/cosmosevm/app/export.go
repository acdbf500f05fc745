package app

import (
	"encoding/json"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
)

// ExportAppStateAndValidators exports the state at the latest height, for
// `tpsevmd export`.
func (a *App) ExportAppStateAndValidators(forZeroHeight bool, _, modulesToExport []string) (servertypes.ExportedApp, error) {
	ctx := a.NewContextLegacy(true, cmtproto.Header{Height: a.LastBlockHeight()})
	height := a.LastBlockHeight() + 1
	if forZeroHeight {
		height = 0
	}
	state, err := a.ModuleManager.ExportGenesisForModules(ctx, a.appCodec, modulesToExport)
	if err != nil {
		return servertypes.ExportedApp{}, err
	}
	appState, err := json.Marshal(state)
	if err != nil {
		return servertypes.ExportedApp{}, err
	}
	validators, err := staking.WriteValidators(ctx, a.StakingKeeper)
	return servertypes.ExportedApp{AppState: appState, Validators: validators, Height: height, ConsensusParams: a.GetConsensusParams(ctx)}, err
}
