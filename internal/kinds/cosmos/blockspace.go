package cosmos

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	sdk "github.com/tpslab/tpslab/internal/targets/cosmos"
)

// BlockSpace says, before the load, whether the chain's blocks can hold
// what is offered: consensus block.max_gas (and a fee market's maximum
// block utilization) over the gas each payment reserves, against the peak
// offered rate times the recent block interval; and whether blocks may take
// more gas than the fee market allows, so that payments fail inside them.
// It returns a warning ("" when all is well, or the chain sets no cap) and
// how many payments a block holds (0: no cap), for the verdict to weigh
// against the intervals the chain makes under load.
func BlockSpace(ctx context.Context, rpc string, sc *scenario.Scenario, gasPerPayment uint64) (string, int64, error) {
	peak, model := offeredPeak(sc.Load)
	if peak <= 0 || gasPerPayment == 0 {
		return "", 0, nil
	}
	c := &cometbft.Client{URL: rpc, HTTP: http.DefaultClient}
	var cp struct {
		ConsensusParams struct {
			Block struct {
				MaxGas cometbft.Int64 `json:"max_gas"`
			} `json:"block"`
		} `json:"consensus_params"`
	}
	// At the latest height: without one the node may answer for the next,
	// which it has no parameters for yet ("could not find consensus params
	// for height #79", issue 51).
	st, err := c.Status(ctx)
	if err != nil {
		return "", 0, err
	}
	at := map[string]string{"height": strconv.FormatInt(int64(st.SyncInfo.LatestBlockHeight), 10)}
	if err := c.Call(ctx, "consensus_params", at, &cp); err != nil {
		return "", 0, err
	}
	maxGas := int64(cp.ConsensusParams.Block.MaxGas)
	var warns []string
	limit, what := maxGas, fmt.Sprintf("consensus block.max_gas %d", maxGas)
	if fm, found, err := sdk.ReadFeeMarket(ctx, c.ABCIQuery); err == nil && found && fm.Enabled && fm.MaxBlockUtilization > 0 {
		u := int64(fm.MaxBlockUtilization)
		if maxGas <= 0 || maxGas > u {
			warns = append(warns, fmt.Sprintf("block space: consensus block.max_gas is %d but the fee market allows %d gas a block (max_block_utilization): "+
				"proposers can fill blocks past it, and the payments past it fail inside the block (\"block utilization ... cannot exceed\"); set block.max_gas to it (net up --max-block-gas)", maxGas, u))
		}
		if limit <= 0 || u < limit {
			limit, what = u, fmt.Sprintf("the fee market's max_block_utilization %d", u)
		}
	}
	if limit <= 0 {
		return strings.Join(warns, "; "), 0, nil // no cap (-1)
	}
	perBlock := limit / int64(gasPerPayment)
	interval, err := blockInterval(ctx, c)
	if err != nil || interval <= 0 {
		return "", perBlock, err
	}
	offered := peak * interval.Seconds()
	if float64(perBlock) < offered {
		// The rate that fits, with a tenth spare for blocks that come late.
		fits := 0.9 * float64(perBlock) / interval.Seconds()
		warns = append(warns, fmt.Sprintf("block space: blocks can hold at most %d payments (%s / %d gas each payment reserves), "+
			"but at %.0f tx/s%s with a block every %.2f s about %.0f are offered per block: the chain cannot commit the offered rate; "+
			"about %.0f tx/s fits (--rate %.0f), or raise block.max_gas, or give workload.gas closer to what a payment uses",
			perBlock, what, gasPerPayment, peak, model, interval.Seconds(), offered, fits, math.Floor(fits/10)*10))
	}
	return strings.Join(warns, "; "), perBlock, nil
}

// offeredPeak is the highest rate the load offers: the open model's peak,
// or the closed model's users over their pacing (or think time, when
// unpaced: an upper bound, each user waiting for its answer too).
func offeredPeak(l scenario.Load) (float64, string) {
	if l.Model == scenario.Open {
		return peakRate(l.Profile()), ""
	}
	if p := l.Pacing.D(); p > 0 {
		return float64(l.Users) / p.Seconds(), fmt.Sprintf(" (%d users, one payment each every %s)", l.Users, p)
	}
	if th := l.Think.D(); th > 0 {
		return float64(l.Users) / th.Seconds(), fmt.Sprintf(" (at most: %d users thinking %s between payments)", l.Users, th)
	}
	return 0, ""
}

// peakRate is the profile's highest rate, sampled every 100 ms.
func peakRate(p schedule.Profile) float64 {
	peak := 0.0
	for t := time.Duration(0); t <= p.Duration(); t += 100 * time.Millisecond {
		peak = max(peak, p.RateAt(t))
	}
	return peak
}

// blockInterval is the mean time between the last 10 blocks' headers
// (block 1 left out: its time can be the genesis time). A fresh chain is
// given up to 5 s to make the few blocks it needs.
func blockInterval(ctx context.Context, c *cometbft.Client) (time.Duration, error) {
	var st cometbft.Status
	for deadline := time.Now().Add(5 * time.Second); ; {
		var err error
		if st, err = c.Status(ctx); err != nil {
			return 0, err
		}
		if st.SyncInfo.LatestBlockHeight >= 4 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	h := int64(st.SyncInfo.LatestBlockHeight)
	if h < 4 {
		return 0, nil
	}
	back := min(int64(10), h-2)
	b, err := c.Block(ctx, h-back)
	if err != nil {
		return 0, err
	}
	return st.SyncInfo.LatestBlockTime.Sub(b.Header.Time) / time.Duration(back), nil
}
