package evm

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// Recount re-counts one evidence line of an EVM run, apart from the run's
// confirmer (tpslab verify): block height must be on the node at url with
// the hash the run recorded, and each id (a transaction hash, hex without
// 0x) must have a receipt there with status 1. err is a node that lacks
// the block or serves another chain; diffs are the payments not found.
func Recount(ctx context.Context, url, chainID string, height int64, hash string, ids []string) (found int64, diffs []string, err error) {
	cl := &Client{URL: url, HTTP: &http.Client{Timeout: 30 * time.Second}}
	if want, ok := new(big.Int).SetString(chainID, 10); ok {
		id, err := cl.ChainID(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %v", url, err)
		}
		if id.Cmp(want) != 0 {
			return 0, nil, fmt.Errorf("%s serves chain %s; the run's was %s", url, id, chainID)
		}
	}
	h, err := cl.Block(ctx, height)
	if err != nil || h.Hash == "" {
		return 0, nil, fmt.Errorf("block %d is not on %s (pruned, or another chain): %v", height, url, err)
	}
	if hash != "" && !strings.EqualFold(h.Hash, hash) {
		return 0, nil, fmt.Errorf("block %d on %s is another block (hash %s, the run counted %s): another chain", height, url, h.Hash, hash)
	}
	rs, err := cl.Receipts(ctx, height)
	if err != nil {
		return 0, nil, fmt.Errorf("block %d's receipts are not on %s: %v", height, url, err)
	}
	status := make(map[string]uint64, len(rs))
	for _, r := range rs {
		status[strings.ToLower(strings.TrimPrefix(r.TxHash, "0x"))] = uint64(r.Status)
	}
	for _, id := range ids {
		switch st, in := status[strings.ToLower(id)]; {
		case !in:
			diffs = append(diffs, fmt.Sprintf("%s not in block %d", id, height))
		case st != 1:
			diffs = append(diffs, fmt.Sprintf("%s in block %d with status %d", id, height, st))
		default:
			found++
		}
	}
	return found, diffs, nil
}
