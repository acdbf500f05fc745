package sdknet

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/sut/cometbft"
	"github.com/tpslab/tpslab/internal/sut/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
)

// NodeAudit is one node's view for `net check`.
type NodeAudit struct {
	Height  int64  `json:"height"`
	AppHash string `json:"app_hash"`
	Supply  string `json:"supply"`
}

// Check audits every running node: the test denom's supply equals the
// genesis supply (bank sends only move it), and every node that has a block
// at a height agrees on its app hash (the state before it).
func Check(ctx context.Context, n *testnet.Net) (map[string]NodeAudit, []string) {
	audits := map[string]NodeAudit{}
	var problems []string
	var minH int64 = -1
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			problems = append(problems, nd.Name+": not running")
			continue
		}
		cl := &cometbft.Client{URL: nd.RPC, HTTP: httpClient}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := cl.Status(cctx)
		if err != nil {
			cancel()
			problems = append(problems, fmt.Sprintf("%s: status: %v", nd.Name, err))
			continue
		}
		supply, err := cosmos.Supply(cctx, cl.ABCIQuery, n.Cosmos.Denom)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: supply query: %v", nd.Name, err))
			continue
		}
		a := NodeAudit{Height: int64(st.SyncInfo.LatestBlockHeight), Supply: supply}
		audits[nd.Name] = a
		if supply != n.Cosmos.Supply {
			problems = append(problems, fmt.Sprintf("%s: supply of %s is %s, genesis supply was %s", nd.Name, n.Cosmos.Denom, supply, n.Cosmos.Supply))
		}
		if minH < 0 || a.Height < minH {
			minH = a.Height
		}
	}
	if minH < 1 {
		return audits, problems
	}
	hashes := map[string]string{}
	for _, nd := range n.Nodes {
		if _, ok := audits[nd.Name]; !ok {
			continue
		}
		cl := &cometbft.Client{URL: nd.RPC, HTTP: httpClient}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := cl.Block(cctx, minH)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: block %d: %v", nd.Name, minH, err))
			continue
		}
		a := audits[nd.Name]
		a.AppHash = b.Header.AppHash
		audits[nd.Name] = a
		hashes[nd.Name] = b.Header.AppHash
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

func short(h string) string {
	if len(h) > 16 {
		return strings.ToUpper(h[:16]) + "…"
	}
	return h
}

var httpClient = &http.Client{Timeout: 30 * time.Second}
