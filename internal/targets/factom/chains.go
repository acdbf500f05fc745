package factom

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/FactomProject/factom"
)

// CreateChains creates n chains paid by ec, named by run, and waits (up to
// wait) until a directory block holds each: entries then go to them.
func CreateChains(ctx context.Context, cl *Client, ec *factom.ECAddress, run string, n int, wait time.Duration) ([]string, error) {
	var ids []string
	for i := 0; i < n; i++ {
		ch := factom.NewChainFromStrings("the chain of tpslab's payments", "tpslab", run, fmt.Sprint(i))
		commit, err := factom.ComposeChainCommit(ch, ec)
		if err != nil {
			return nil, err
		}
		reveal, _ := factom.ComposeChainReveal(ch)
		for _, r := range []any{commit, reveal} {
			b, _ := json.Marshal(r)
			if err := cl.post(ctx, b, nil); err != nil {
				return nil, fmt.Errorf("create chain %d: %w", i, err)
			}
		}
		ids = append(ids, ch.ChainID)
	}
	deadline := time.Now().Add(wait)
	for _, id := range ids {
		for {
			var h struct {
				Head      string `json:"chainhead"`
				InProcess bool   `json:"chaininprocesslist"`
			}
			err := cl.Call(ctx, "chain-head", map[string]string{"chainid": id}, &h)
			if err == nil && h.Head != "" && !h.InProcess {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nil, fmt.Errorf("chain %s is in no directory block after %s (%v)", id, wait, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return ids, nil
}
