package evm

import (
	"context"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tpslab/tpslab/internal/sut"
)

// laggingNode answers as a Cosmos EVM validator that has not yet seen the
// funder's earlier calls: nonce too high, until it catches up after behind
// tries; then an earlier try's bytes are already known.
type laggingNode struct {
	behind, tries int
	known         bool
}

func (n *laggingNode) Submit(context.Context, sut.Tx) sut.Receipt {
	n.tries++
	switch {
	case n.tries <= n.behind:
		return sut.Receipt{Status: sut.Rejected, Reason: "nonce_too_high", Detail: "tx nonce: 613, account accountNonce: 478"}
	case n.known:
		return sut.Receipt{Status: sut.Rejected, Reason: "already_known"}
	}
	return sut.Receipt{Status: sut.Pending}
}

// A funding call refused as nonce too high is sent again until the node
// takes it, as the load path does (issue 52, case 11: funding on 4 Cosmos
// EVM validators ended the run before its load, 1 try in 2). The refusal
// depends on gossip between validators, so a node that refuses on cue
// stands in for it.
func TestFundingWaitsOutNonceTooHigh(t *testing.T) {
	w := DeriveWallets("fund", 2)
	c := NewCodec(big.NewInt(9000), nil, 21_000, Fees{FeeCap: big.NewInt(1), TipCap: big.NewInt(1)}, w, nil)
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	for _, node := range []*laggingNode{{behind: 3}, {behind: 2, known: true}} {
		f := &funding{c: c, sub: node, funder: w[0], nonce: 613, start: 613}
		if err := f.send(context.Background(), &to, big.NewInt(1), nil, 21_000); err != nil {
			t.Errorf("behind %d tries (known %v): %v", node.behind, node.known, err)
		}
		if f.nonce != 614 || node.tries != node.behind+1 {
			t.Errorf("behind %d: nonce %d after %d tries, expected 614 after %d", node.behind, f.nonce, node.tries, node.behind+1)
		}
	}
	f := &funding{c: c, sub: submitFunc(func() sut.Receipt { return sut.Receipt{Status: sut.Rejected, Reason: "insufficient_funds"} }), funder: w[0]}
	if err := f.send(context.Background(), &to, big.NewInt(1), nil, 21_000); err == nil || f.nonce != 0 {
		t.Errorf("a refusal other than nonce too high: %v, nonce %d; expected an error at once", err, f.nonce)
	}
}

type submitFunc func() sut.Receipt

func (s submitFunc) Submit(context.Context, sut.Tx) sut.Receipt { return s() }

// droppingNode took the funder's calls 0..2, then dropped 1 and 2 (a
// recheck refused 1, and every later one with it): it refuses 3 as nonce
// too high, and its pending nonce says 1; it takes 3 after 1 and 2 again.
type droppingNode struct {
	sent    []uint64
	dropped bool
}

func (n *droppingNode) Submit(_ context.Context, tx sut.Tx) sut.Receipt {
	var t types.Transaction
	if err := t.UnmarshalBinary(tx.Bytes); err != nil {
		return sut.Receipt{Status: sut.Rejected, Reason: "bad"}
	}
	n.sent = append(n.sent, t.Nonce())
	if t.Nonce() == 3 && !n.dropped {
		n.dropped = true
		return sut.Receipt{Status: sut.Rejected, Reason: "nonce_too_high", Detail: "tx nonce: 3, account accountNonce: 1"}
	}
	return sut.Receipt{Status: sut.Pending}
}

// Calls the node dropped after taking them are signed and sent again from
// the nonce it expects (evmd on a busy machine: "tx nonce: 208, account
// accountNonce: 108" for a minute, then the run ended before its load).
func TestFundingResendsDroppedCalls(t *testing.T) {
	rpc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
	}))
	defer rpc.Close()
	old := fundingResync
	fundingResync = 0
	defer func() { fundingResync = old }()
	w := DeriveWallets("fund", 2)
	c := NewCodec(big.NewInt(9000), nil, 21_000, Fees{FeeCap: big.NewInt(1), TipCap: big.NewInt(1)}, w, &Client{URL: rpc.URL, HTTP: rpc.Client()})
	node := &droppingNode{}
	f := &funding{c: c, sub: node, funder: w[0]}
	for i := 0; i < 4; i++ {
		to := common.BigToAddress(big.NewInt(int64(100 + i)))
		if err := f.send(context.Background(), &to, big.NewInt(1), nil, 21_000); err != nil {
			t.Fatal(err)
		}
	}
	if want := []uint64{0, 1, 2, 3, 1, 2, 3}; f.nonce != 4 || !slices.Equal(node.sent, want) {
		t.Errorf("sent nonces %v, ended at %d; expected %v, 4", node.sent, f.nonce, want)
	}
}
