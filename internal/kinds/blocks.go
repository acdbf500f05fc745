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
			From: "consensus block.max_bytes", Use: "blocks.bytes", About: "blocks' bytes", Relax: "network.max_block_bytes"})
	}
	if g := int64(cp.ConsensusParams.Block.MaxGas); g > 0 {
		out = append(out, report.Capacity{Name: report.BlockGas, Class: report.CauseBlocks, Capacity: float64(g), Unit: "gas",
			From: "consensus block.max_gas", Use: "blocks.gas", About: "blocks' gas (tpslab's payments)", Relax: "network.max_block_gas"})
	}
	return out
}

// MempoolCapacities are the mempool limits of each node of a CometBFT
// network tpslab started (net.json's settings, written into every node's
// config.toml), against the fullest node's mempool: a mempool that stays
// full is a chain that takes payments out more slowly than they come.
// None for endpoints tpslab did not start: their limits are not known.
func MempoolCapacities(sys *System) []report.Capacity {
	if sys.Net == nil {
		return nil
	}
	st := sys.Net.Settings
	var out []report.Capacity
	if st.MempoolSize > 0 {
		out = append(out, report.Capacity{Name: "mempool_txs", Class: report.CauseBlocks, Capacity: float64(st.MempoolSize), Unit: "transactions",
			From: "mempool.size, each node's", Use: ".mempool_txs", Each: true, About: "the fullest node's mempool", Relax: "network.mempool_size"})
	}
	if st.MempoolMaxBytes > 0 {
		out = append(out, report.Capacity{Name: "mempool_bytes", Class: report.CauseBlocks, Capacity: float64(st.MempoolMaxBytes), Unit: "bytes",
			From: "mempool.max_txs_bytes, each node's", Use: ".mempool_bytes", Each: true, About: "the fullest node's mempool bytes", Relax: "network.mempool_max_bytes"})
	}
	return out
}
