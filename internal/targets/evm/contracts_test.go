package evm_test

import (
	"context"
	"encoding/hex"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/testnet"
)

// example reads an example scenario over sc, its artifacts' paths made
// absolute, with edits (old, new pairs) applied.
func example(t *testing.T, sc *scenario.Scenario, name string, edits ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join("..", "..", "..", "examples", "contracts"))
	y := strings.ReplaceAll(string(b), "artifact: contracts/", "artifact: "+abs+"/")
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(y, edits[i]) {
			t.Fatalf("%s has no %q", name, edits[i])
		}
		y = strings.Replace(y, edits[i], edits[i+1], 1)
	}
	if err := scenario.Apply(sc, []byte(y)); err != nil {
		t.Fatal(err)
	}
	// The example's own load, shortened: exactness holds at any length.
	sc.Load.Duration, sc.Load.Warmup = scenario.Duration(5e9), scenario.Duration(1e9)
}

// bySelector counts our senders' transactions in blocks [from, to] by the
// 4-byte selector of their call: those with status 1, and those reverted.
func bySelector(t *testing.T, rpc string, from, to int64, senders map[string]bool) (ok, reverted map[string]int64) {
	t.Helper()
	cl := &evm.Client{URL: rpc, HTTP: http.DefaultClient}
	ok, reverted = map[string]int64{}, map[string]int64{}
	for h := from; h <= to; h++ {
		var b struct {
			Transactions []struct {
				Hash, From, Input string
			} `json:"transactions"`
		}
		if err := cl.Call(context.Background(), &b, "eth_getBlockByNumber", "0x"+big.NewInt(h).Text(16), true); err != nil {
			t.Fatal(err)
		}
		rs, err := cl.Receipts(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		status := map[string]uint64{}
		for _, r := range rs {
			status[strings.ToLower(r.TxHash)] = uint64(r.Status)
		}
		for _, tx := range b.Transactions {
			if !senders[strings.ToLower(tx.From)] || len(tx.Input) < 10 {
				continue
			}
			if status[strings.ToLower(tx.Hash)] == 1 {
				ok[tx.Input[:10]]++
			} else {
				reverted[tx.Input[:10]]++
			}
		}
	}
	return ok, reverted
}

func selector(sig string) string { return "0x" + hex.EncodeToString(crypto.Keccak256([]byte(sig))[:4]) }

// A contract's calls as the load, from the examples: an ERC-721 deployed
// from its artifact and minted, one call in ten reverting on purpose, and
// a Uniswap-V2-style pair swapped after a set-up that deploys the tokens
// and the pair, gives it liquidity and each sender tokens and approvals.
// Each kind's committed count equals the status-1 receipts of its function
// in the blocks; the reverts equal the failed, by the contract's reason.
func contractsOn(t *testing.T, n *testnet.Net) {
	nft := evmScenario(t, n.Home, "payment", "live")
	example(t, &nft, "evm-nft-mint.yaml",
		`    - {kind: mint, contract: nft, function: mint, args: ["{recipient}"]}`,
		`    - {kind: mint, contract: nft, function: mint, args: ["{recipient}"]}
    - {kind: mint_taken, contract: nft, function: mintId, args: ["{recipient}", "1000000000"]}`,
		`    - {kind: mint, weight: 1}`, `    - {kind: mint, weight: 9}
    - {kind: mint_taken, weight: 1}`)
	res, err := run(t, nft)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	ok, reverted := bySelector(t, n.RPCEndpoints()[0], res.Chain.FirstHeight, res.Chain.LastHeight, senders(300))
	mint, mintID := selector("mint(address)"), selector("mintId(address,uint256)")
	if s.CommittedByKind["mint"] != ok[mint] || ok[mint] == 0 || s.FailedByKind["mint_taken"] != reverted[mintID] || reverted[mintID] == 0 ||
		s.Failed["reverted: NFT: token already minted"] != reverted[mintID] || ok[mintID] != 0 || reverted[mint] != 0 {
		t.Errorf("nft: committed by kind %v, failed by kind %v (%v); the blocks: ok %v, reverted %v", s.CommittedByKind, s.FailedByKind, s.Failed, ok, reverted)
	}

	swap := evmScenario(t, n.Home, "payment", "live")
	example(t, &swap, "evm-swap.yaml")
	if res, err = run(t, swap); err != nil {
		t.Fatal(err)
	}
	s = res.Summary
	ok, reverted = bySelector(t, n.RPCEndpoints()[0], res.Chain.FirstHeight, res.Chain.LastHeight, senders(300))
	sw := selector("swap(uint256,bool,uint256,address)")
	if s.CommittedByKind["swap"] != ok[sw] || ok[sw] == 0 || len(reverted) != 0 || s.FailedTotal != 0 {
		t.Errorf("swap: committed by kind %v, failed %v; the blocks: ok %v, reverted %v", s.CommittedByKind, s.Failed, ok, reverted)
	}
	t.Logf("swap: %v; notes %q", s.CommittedByKind, res.Notes)

	// A function the ABI lacks, and an argument its type cannot take: one
	// line, exit 2, before any work.
	for _, c := range []struct{ old, new, want string }{
		{"function: swap,", "function: swapp,", `evm.calls[0].function: "swapp", expected a function of its ABI`},
		{`"{choice:true|false}"`, `"{choice:yes|no}"`, `evm.calls[0].args[1] (bool zeroForOne): `},
	} {
		bad := evmScenario(t, n.Home, "payment", "live")
		example(t, &bad, "evm-swap.yaml", c.old, c.new)
		_, err := run(t, bad)
		if exitcode.Of(err) != exitcode.BadInput || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (exit %d), want one line with %q, exit 2", c.new, err, exitcode.Of(err), c.want)
		}
	}
}
