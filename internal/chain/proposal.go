package chain

import (
	"cmp"
	"context"
	"slices"

	abci "github.com/cometbft/cometbft/abci/types"
)

// PrepareProposal puts each sender's payments in sequence order. CometBFT's
// mempool can hold them out of order: a node that gets a sender's payments n
// and n+1 from two peers at once checks them in one order (the application's
// CheckTx runs under the mempool connection's lock) but may add them to its
// list in the other (the insertion runs after that lock is released). Reaped
// as listed, n+1 would fail in the block ("sequence too high") and n succeed
// after it. The Cosmos SDK's nonce mempool orders a proposal the same way.
// Each sender keeps the slots its payments were reaped into, so the mix of
// senders in the block is as reaped; then the block is cut at MaxTxBytes.
func (a *App) PrepareProposal(_ context.Context, req *abci.RequestPrepareProposal) (*abci.ResponsePrepareProposal, error) {
	txs := OrderBySequence(req.Txs)
	var total int64
	for i, tx := range txs {
		total += int64(len(tx))
		if total > req.MaxTxBytes {
			txs = txs[:i]
			break
		}
	}
	return &abci.ResponsePrepareProposal{Txs: txs}, nil
}

// OrderBySequence returns txs with each sender's payments sorted by sequence
// within the positions that sender's payments hold; anything that does not
// decode stays where it is. It reorders in place and allocates only when a
// sender has more than one payment.
func OrderBySequence(txs [][]byte) [][]byte {
	type pos struct {
		at  int
		seq uint64
	}
	var bySender map[[PubKeySize]byte][]pos
	for i, tx := range txs {
		p, err := Decode(tx)
		if err != nil {
			continue
		}
		if bySender == nil {
			bySender = make(map[[PubKeySize]byte][]pos, len(txs))
		}
		k := [PubKeySize]byte(p.Sender)
		bySender[k] = append(bySender[k], pos{i, p.Sequence})
	}
	bySeq := func(x, y pos) int { return cmp.Compare(x.seq, y.seq) }
	var inOrder [][]byte
	for _, ps := range bySender { // ps is in position order
		if len(ps) < 2 || slices.IsSortedFunc(ps, bySeq) {
			continue
		}
		sorted := slices.Clone(ps)
		slices.SortStableFunc(sorted, bySeq)
		inOrder = inOrder[:0]
		for _, p := range sorted {
			inOrder = append(inOrder, txs[p.at])
		}
		for k, p := range ps {
			txs[p.at] = inOrder[k]
		}
	}
	return txs
}
