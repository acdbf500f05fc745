package kinds

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
)

// ConsensusCapacities are a CometBFT chain's block limits as its
// consensus parameters state them at the latest height: block.max_bytes
// (against the bytes of the transactions in each block) and block.max_gas
// (against the gas tpslab's payments used in it; -1, no cap, is left out).
// Nothing is returned when the node does not answer.
func ConsensusCapacities(ctx context.Context, rpc string) []report.Capacity {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := &cometbft.Client{URL: rpc, HTTP: http.DefaultClient}
	st, err := c.Status(ctx)
	if err != nil {
		return nil
	}
	var cp struct {
		ConsensusParams struct {
			Block struct {
				MaxBytes cometbft.Int64 `json:"max_bytes"`
				MaxGas   cometbft.Int64 `json:"max_gas"`
			} `json:"block"`
		} `json:"consensus_params"`
	}
	// At the latest height: without one the node may answer for the next,
	// which it has no parameters for yet.
	at := map[string]string{"height": strconv.FormatInt(int64(st.SyncInfo.LatestBlockHeight), 10)}
	if err := c.Call(ctx, "consensus_params", at, &cp); err != nil {
		return nil
	}
	var out []report.Capacity
	if b := int64(cp.ConsensusParams.Block.MaxBytes); b > 0 {
		out = append(out, report.Capacity{Name: report.BlockBytes, Class: report.CauseBlocks, Capacity: float64(b), Unit: "bytes",
			From: "consensus block.max_bytes", Use: "blocks.bytes", About: "blocks' bytes"})
	}
	if g := int64(cp.ConsensusParams.Block.MaxGas); g > 0 {
		out = append(out, report.Capacity{Name: report.BlockGas, Class: report.CauseBlocks, Capacity: float64(g), Unit: "gas",
			From: "consensus block.max_gas", Use: "blocks.gas", About: "blocks' gas (tpslab's payments)"})
	}
	return out
}
