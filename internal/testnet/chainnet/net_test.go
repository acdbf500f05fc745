package chainnet

import (
	"context"
	"crypto/sha256"
	"github.com/tpslab/tpslab/internal/testnet"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/testbin"
)

func TestNetworkLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "net")
	g := chain.Genesis{Seed: "it", Accounts: 500, Balance: 1_000_000}
	// Blocks under 1 MiB: the genesis' evidence bound follows them (issue
	// 64: "MaxBytesEvidence is greater than upper bound").
	settings := testnet.DefaultSettings()
	settings.MaxBlockBytes = 200_000
	o := Options{Validators: 4, Home: home, ChainID: "it-chain", Genesis: g, Settings: settings, Binary: testbin.Path(t)}
	start := time.Now()
	n, err := Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	t.Logf("the network committed blocks %s after net up began", time.Since(start).Round(time.Millisecond))
	if _, err := Up(ctx, o); err == nil || !strings.Contains(err.Error(), "--reset") {
		t.Fatalf("second up on a used home: %v", err)
	}

	// 3000 payments: 300 senders x 10 sequences, spread over all nodes.
	keys := chain.DeriveKeys(g.Seed, int(g.Accounts))
	want := map[[32]byte]bool{}
	clients := make([]*rpchttp.HTTP, len(n.Nodes))
	for i, nd := range n.Nodes {
		clients[i], _ = rpchttp.New(nd.RPC, "/websocket")
	}
	for seq := uint64(0); seq < 10; seq++ {
		for s := 0; s < 300; s++ {
			tx := chain.AppendPayment(nil, "it-chain", keys[s], chain.AddressOf(keys[(s+1)%len(keys)][32:]), 1+seq, seq, 64)
			res, err := clients[s%len(clients)].BroadcastTxSync(ctx, tx)
			if err != nil || res.Code != 0 {
				t.Fatalf("broadcast sender %d seq %d: %v %+v", s, seq, err, res)
			}
			want[sha256.Sum256(tx)] = true
		}
	}
	// Independent reading of the blocks: every payment committed with code 0.
	committed := waitCommitted(t, clients[0], want, 60*time.Second)
	if committed != len(want) {
		t.Fatalf("committed %d of %d payments", committed, len(want))
	}
	if cp, err := clients[0].ConsensusParams(ctx, nil); err != nil || cp.ConsensusParams.Block.MaxBytes != 200_000 {
		t.Errorf("consensus params: %+v, %v; want blocks of at most 200000 bytes", cp, err)
	}
	if r := n.Check(ctx); len(r.Problems) > 0 {
		t.Fatalf("net check: %v", r.Problems)
	}

	// Kill one validator: the other three (more than 2/3 of power) go on.
	if err := n.Kill(3); err != nil {
		t.Fatal(err)
	}
	h0, _ := testnet.Height(ctx, n.Nodes[0].RPC)
	if err := (&testnet.Net{Nodes: n.Nodes[:3], Home: home}).WaitForBlocks(ctx, h0+3, 20*time.Second); err != nil {
		t.Fatalf("three validators stopped committing: %v", err)
	}
	// Restart it: it catches up from its peers and its own stored state.
	if err := n.Restart(3, testbin.Path(t)); err != nil {
		t.Fatal(err)
	}
	h1, _ := testnet.Height(ctx, n.Nodes[0].RPC)
	if err := n.WaitForBlocks(ctx, h1+2, 30*time.Second); err != nil {
		t.Fatalf("restarted validator did not catch up: %v", err)
	}
	if r := n.Check(ctx); len(r.Problems) > 0 {
		t.Fatalf("net check after restart: %v", r.Problems)
	}
	if err := n.Down(); err != nil {
		t.Fatal(err)
	}
	if r := n.Running(); r != 0 {
		t.Fatalf("%d nodes still running after down", r)
	}
	if _, err := os.Stat(filepath.Join(home, "node0", "node.log")); err != nil {
		t.Fatal("no node log:", err)
	}
}

// waitCommitted scans blocks from height 1 and counts payments in want that
// committed with code 0.
func waitCommitted(t *testing.T, c *rpchttp.HTTP, want map[[32]byte]bool, timeout time.Duration) int {
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	found := 0
	for h := int64(1); found < len(want) && time.Now().Before(deadline); {
		b, err := c.Block(ctx, &h)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		res, err := c.BlockResults(ctx, &h)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for i, tx := range b.Block.Txs {
			if want[sha256.Sum256(tx)] && res.TxsResults[i].Code == 0 {
				found++
			}
		}
		h++
	}
	return found
}
