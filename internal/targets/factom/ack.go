package factom

import (
	"context"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// The leader's acknowledgement of an entry (ack's TransactionACK: the entry
// holds a place in the block being built) is asked of a sample of the
// payments: one in ackSample, at most ackPending asked at a time, each
// every ackPoll until acknowledged or for ackGiveUp (a factoid transaction
// is not found by its entry hash: it gets no stage).
const (
	ackSample  = 32
	ackPending = 16
	ackPoll    = 100 * time.Millisecond
	ackGiveUp  = 30 * time.Second
	// anyChain sends ack to its entry-hash path (any chain id but the
	// entry-credit, factoid and admin chains').
	anyChain = "0101010101010101010101010101010101010101010101010101010101010101"
)

// acks are the sampled payments: those asked about (since when) and those
// acknowledged (when), until their block stamps them.
type acks struct {
	mu      sync.Mutex
	pending map[sut.TxID]time.Time
	at      map[sut.TxID]time.Time
}

func (a *acks) watch(id sut.TxID) {
	a.mu.Lock()
	if len(a.pending) < ackPending {
		a.pending[id] = time.Now()
	}
	a.mu.Unlock()
}

// follow asks the node about each pending payment every ackPoll.
func (a *acks) follow(ctx context.Context, cl *Client) {
	t := time.NewTicker(ackPoll)
	defer t.Stop()
	var ids []sut.TxID
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids = ids[:0]
		a.mu.Lock()
		for id, since := range a.pending {
			if time.Since(since) > ackGiveUp {
				delete(a.pending, id)
				continue
			}
			ids = append(ids, id)
		}
		a.mu.Unlock()
		for _, id := range ids {
			var st struct {
				Entry struct {
					Status string `json:"status"`
				} `json:"entrydata"`
			}
			if err := cl.Call(ctx, "ack", map[string]string{"hash": id.String(), "chainid": anyChain}, &st); err != nil {
				continue
			}
			if s := st.Entry.Status; s == "TransactionACK" || s == "DBlockConfirmed" {
				a.mu.Lock()
				delete(a.pending, id)
				if s == "TransactionACK" && len(a.at) < 1<<16 {
					a.at[id] = time.Now()
				}
				a.mu.Unlock()
			}
		}
	}
}

// stamp gives the block's sampled payments the time the leader
// acknowledged them.
func (a *acks) stamp(b *sut.Block) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.at) == 0 {
		return
	}
	for i := range b.Txs {
		if t, ok := a.at[b.Txs[i].ID]; ok {
			b.Txs[i].Proposed = t
			delete(a.at, b.Txs[i].ID)
		}
	}
}
