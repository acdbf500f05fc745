package workload

import "github.com/tpslab/tpslab/internal/sut"

// held is one sender's sent, not yet final transactions by sequence, kept
// for resubmission: a window over consecutive sequences rather than a map,
// because a lane's sequences are handed out in order and settle mostly in
// order — a map's insert and delete per payment were a fifth of the
// generator's CPU at 20,000 payments/s (go tool pprof).
//
// A presigned payment is held as a mark only: its bytes stay in the
// presigned queue and are read from there when resubmitted. Against a
// system that commits slowly, millions are held at once, and an 80-byte
// copy of each was memory written (and faulted in) per payment.
type held struct {
	head uint64   // the sequence of mark[0]
	mark []uint8  // by sequence from head: heldNone, heldQueued or heldCopy
	txs  []sut.Tx // parallel to mark once a copy is held; nil until then
}

const (
	heldNone uint8 = iota
	heldQueued
	heldCopy
)

// put holds tx with sequence nonce: as a mark when queued (tx is the
// lane's presigned payment of that sequence), else a copy of tx.
func (h *held) put(nonce uint64, tx sut.Tx, queued bool) {
	switch {
	case len(h.mark) == 0:
		h.head, h.mark = nonce, h.mark[:0]
		if h.txs != nil {
			h.txs = h.txs[:0]
		}
	case nonce < h.head: // a rewound lane sends a lower sequence again
		n := h.head - nonce
		h.mark = append(make([]uint8, n, uint64(len(h.mark))+n), h.mark...)
		if h.txs != nil {
			h.txs = append(make([]sut.Tx, n, uint64(len(h.txs))+n), h.txs...)
		}
		h.head = nonce
	}
	k := nonce - h.head
	for k >= uint64(len(h.mark)) {
		h.mark = append(h.mark, heldNone)
		if h.txs != nil {
			h.txs = append(h.txs, sut.Tx{})
		}
	}
	if queued {
		h.mark[k] = heldQueued
		if h.txs != nil {
			h.txs[k] = sut.Tx{} // drop an earlier copy's bytes
		}
		return
	}
	if h.txs == nil {
		h.txs = make([]sut.Tx, len(h.mark))
	}
	h.mark[k], h.txs[k] = heldCopy, tx
}

// has says whether sequence nonce is held.
func (h *held) has(nonce uint64) bool {
	return nonce >= h.head && nonce-h.head < uint64(len(h.mark)) && h.mark[nonce-h.head] != heldNone
}

// get returns the transaction held for sequence nonce; a mark's is
// queued(nonce), the presigned payment.
func (h *held) get(nonce uint64, queued func(nonce uint64) sut.Tx) (sut.Tx, bool) {
	if !h.has(nonce) {
		return sut.Tx{}, false
	}
	k := nonce - h.head
	if h.mark[k] == heldCopy {
		return h.txs[k], true
	}
	return queued(nonce), true
}

func (h *held) del(nonce uint64) {
	if !h.has(nonce) {
		return
	}
	k := nonce - h.head
	h.mark[k] = heldNone
	if h.txs != nil {
		h.txs[k] = sut.Tx{}
	}
	i := 0
	for i < len(h.mark) && h.mark[i] == heldNone {
		i++
	}
	j := len(h.mark)
	for j > i && h.mark[j-1] == heldNone {
		j--
	}
	h.mark, h.head = h.mark[i:j], h.head+uint64(i)
	if h.txs != nil {
		h.txs = h.txs[i:j]
	}
	if len(h.mark) == 0 && (cap(h.mark) > 1<<16 || cap(h.txs) > 1024) {
		h.mark, h.txs = nil, nil // a burst's backing arrays are not kept
	}
}
