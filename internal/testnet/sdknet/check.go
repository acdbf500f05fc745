package sdknet

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
)

// NodeAudit is one node's view for `net check`.
type NodeAudit struct {
	Height  int64  `json:"height"`
	AppHash string `json:"app_hash"`
	Supply  string `json:"supply"`
}

// Check audits every running node at the lowest height they all have: the
// test denom's supply is the genesis supply plus what x/mint minted up to
// that height, read from each block's mint event (bank sends only move
// coins, and the fee market collects fees rather than burning them), and
// the nodes agree on the app hash there.
func Check(ctx context.Context, n *testnet.Net) (map[string]NodeAudit, []string) {
	audits := map[string]NodeAudit{}
	var problems []string
	var minH int64 = -1
	clients := map[string]*cometbft.Client{}
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			problems = append(problems, nd.Name+": not running")
			continue
		}
		cl := &cometbft.Client{URL: nd.RPC, HTTP: httpClient}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := cl.Status(cctx)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: status: %v", nd.Name, err))
			continue
		}
		clients[nd.Name] = cl
		audits[nd.Name] = NodeAudit{Height: int64(st.SyncInfo.LatestBlockHeight)}
		if h := int64(st.SyncInfo.LatestBlockHeight); minH < 0 || h < minH {
			minH = h
		}
	}
	if minH < 1 {
		return audits, problems
	}
	// A node reports a block as its latest a moment before its application
	// has committed it ("cannot query with height in the future"): audit the
	// one before, which every node has committed.
	if minH > 1 {
		minH--
	}
	want, ok := new(big.Int).SetString(Of(n).Supply, 10)
	if !ok {
		return audits, append(problems, fmt.Sprintf("net.json: genesis_supply %q is not an integer", Of(n).Supply))
	}
	var minted *big.Int
	if Of(n).Minting {
		for _, cl := range clients {
			var err error
			if minted, err = Minted(ctx, cl, minH); err != nil {
				return audits, append(problems, fmt.Sprintf("minted up to height %d: %v", minH, err))
			}
			want.Add(want, minted)
			break
		}
	}
	hashes := map[string]string{}
	for _, nd := range n.Nodes {
		cl, ok := clients[nd.Name]
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		supply, err := cosmos.Supply(cctx, func(ctx context.Context, path string, data []byte) ([]byte, error) {
			return cl.ABCIQueryAt(ctx, path, data, minH)
		}, Of(n).Denom)
		var b cometbft.RawBlock
		if err == nil {
			b, err = cl.Block(cctx, minH)
		}
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: height %d: %v", nd.Name, minH, err))
			continue
		}
		a := audits[nd.Name]
		a.Supply, a.AppHash = supply, b.Header.AppHash
		audits[nd.Name] = a
		hashes[nd.Name] = b.Header.AppHash
		if supply != want.String() {
			why := fmt.Sprintf("genesis supply was %s", Of(n).Supply)
			if minted != nil {
				why = fmt.Sprintf("genesis supply %s plus %s minted is %s", Of(n).Supply, minted, want)
			}
			problems = append(problems, fmt.Sprintf("%s: supply of %s at height %d is %s; %s", nd.Name, Of(n).Denom, minH, supply, why))
		}
	}
	var ref, refNode string
	for name, h := range hashes {
		if ref == "" {
			ref, refNode = h, name
			continue
		}
		if h != ref {
			problems = append(problems, fmt.Sprintf("app hash differs at height %d: %s has %s, %s has %s", minH, refNode, short(ref), name, short(h)))
		}
	}
	return audits, problems
}

// Minted sums the amounts of x/mint's mint events in blocks 1..h (it
// mints its mint_denom, which genesis set to the network's denom), eight
// blocks at a time.
func Minted(ctx context.Context, cl *cometbft.Client, h int64) (*big.Int, error) {
	sums := make([]*big.Int, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for w := range sums {
		sums[w] = new(big.Int)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := int64(w) + 1; x <= h && errs[w] == nil; x += int64(len(sums)) {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				evs, err := cl.BlockEvents(cctx, x)
				cancel()
				if err != nil {
					errs[w] = fmt.Errorf("block %d: %w", x, err)
					break
				}
				for _, e := range evs {
					if e.Type != "mint" {
						continue
					}
					for _, a := range e.Attributes {
						if a.Key != "amount" {
							continue
						}
						v, ok := new(big.Int).SetString(a.Value, 10)
						if !ok {
							errs[w] = fmt.Errorf("block %d: mint amount %q is not an integer", x, a.Value)
							break
						}
						sums[w].Add(sums[w], v)
					}
				}
			}
		}()
	}
	wg.Wait()
	total := new(big.Int)
	for w, s := range sums {
		if errs[w] != nil {
			return nil, errs[w]
		}
		total.Add(total, s)
	}
	return total, nil
}

func short(h string) string {
	if len(h) > 16 {
		return strings.ToUpper(h[:16]) + "…"
	}
	return h
}

var httpClient = &http.Client{Timeout: 30 * time.Second}
