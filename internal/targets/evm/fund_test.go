package evm

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

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
		f := &funding{c: c, sub: node, funder: w[0], nonce: 613}
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
