package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/scenario"
)

// BlockSpace says, before the load, whether the chain's blocks can hold
// what is offered: consensus block.max_gas over the gas each payment
// reserves, against the peak offered rate times the recent block interval.
// It returns a warning ("" when they can, or when the chain sets no cap)
// and the figures it read.
func BlockSpace(ctx context.Context, rpc string, sc *scenario.Scenario, gasPerPayment uint64) (string, error) {
	if sc.Load.Model != scenario.Open || gasPerPayment == 0 {
		return "", nil
	}
	var cp struct {
		Result struct {
			ConsensusParams struct {
				Block struct {
					MaxGas string `json:"max_gas"`
				} `json:"block"`
			} `json:"consensus_params"`
		} `json:"result"`
	}
	if err := getJSON(ctx, rpc+"/consensus_params", &cp); err != nil {
		return "", err
	}
	maxGas, err := strconv.ParseInt(cp.Result.ConsensusParams.Block.MaxGas, 10, 64)
	if err != nil || maxGas <= 0 {
		return "", nil // no cap (-1), or none said
	}
	perBlock := maxGas / int64(gasPerPayment)
	interval, err := blockInterval(ctx, rpc)
	if err != nil || interval <= 0 {
		return "", err
	}
	peak := peakRate(sc.Load.Profile())
	offered := peak * interval.Seconds()
	if float64(perBlock) >= offered {
		return "", nil
	}
	return fmt.Sprintf("block space: blocks can hold at most %d payments (consensus block.max_gas %d / %d gas each payment reserves), "+
		"but at %.0f tx/s with a block every %.2f s about %.0f are offered per block: the chain cannot commit the offered rate "+
		"(raise block.max_gas, or give workload.gas closer to what a payment uses)", perBlock, maxGas, gasPerPayment, peak, interval.Seconds(), offered), nil
}

// peakRate is the profile's highest rate, sampled every 100 ms.
func peakRate(p interface {
	Duration() time.Duration
	RateAt(time.Duration) float64
}) float64 {
	peak := 0.0
	for t := time.Duration(0); t <= p.Duration(); t += 100 * time.Millisecond {
		peak = max(peak, p.RateAt(t))
	}
	return peak
}

// blockInterval is the mean time between the last 10 blocks' headers
// (block 1 left out: its time can be the genesis time). A fresh chain is
// given up to 5 s to make the few blocks it needs.
func blockInterval(ctx context.Context, rpc string) (time.Duration, error) {
	var st struct {
		Result struct {
			SyncInfo struct {
				Height string    `json:"latest_block_height"`
				Time   time.Time `json:"latest_block_time"`
			} `json:"sync_info"`
		} `json:"result"`
	}
	var h int64
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := getJSON(ctx, rpc+"/status", &st); err != nil {
			return 0, err
		}
		var err error
		if h, err = strconv.ParseInt(st.Result.SyncInfo.Height, 10, 64); err != nil {
			return 0, err
		}
		if h >= 4 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if h < 4 {
		return 0, nil
	}
	back := min(int64(10), h-2)
	var b struct {
		Result struct {
			Block struct {
				Header struct {
					Time time.Time `json:"time"`
				} `json:"header"`
			} `json:"block"`
		} `json:"result"`
	}
	if err := getJSON(ctx, fmt.Sprintf("%s/block?height=%d", rpc, h-back), &b); err != nil {
		return 0, err
	}
	return st.Result.SyncInfo.Time.Sub(b.Result.Block.Header.Time) / time.Duration(back), nil
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/"), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, res.StatusCode)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
