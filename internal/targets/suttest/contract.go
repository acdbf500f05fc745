// Package suttest is the contract every target kind must keep, as a
// test suite: a kind's tests run it against a stand-in and a real node.
package suttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// Case is one target under the contract.
type Case struct {
	Target sut.Target
	// Valid returns distinct transactions the system accepts.
	Valid func(i int) sut.Tx
	// Invalid is one the system must refuse; nil when it accepts anything
	// (the stand-in sink).
	Invalid *sut.Tx
	// Commits says the valid transactions end up committed (not the sink).
	Commits bool
}

// events records what a confirmer reports.
type events struct {
	mu       sync.Mutex
	heights  []int64
	txs      map[sut.TxID]bool
	finalAll bool
}

func (e *events) Block(b *sut.Block) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.heights = append(e.heights, b.Height)
	e.finalAll = e.finalAll && b.Final
	for _, t := range b.Txs {
		e.txs[t.ID] = t.OK
	}
}
func (e *events) Final(int64, time.Time) {}
func (e *events) Reorg(int64, time.Time) {}
func (e *events) Resolved(id sut.TxID, ok bool, _ string, _ time.Time) {
	e.mu.Lock()
	e.txs[id] = ok
	e.mu.Unlock()
}

// Run checks the contract.
func Run(t *testing.T, c Case) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := c.Target.Probe(ctx)
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if info.ChainID == "" || info.Height < 0 {
		t.Errorf("Probe: %+v, want a chain id and a height >= 0", info)
	}
	ev := &events{txs: map[sut.TxID]bool{}, finalAll: true}
	conf := c.Target.Confirmer()
	done := make(chan error, 1)
	cctx, stopConf := context.WithCancel(ctx)
	if conf != nil {
		go func() { done <- conf.Run(cctx, info.Height+1, ev) }()
	}
	// Several submitters, each used in turn, as workers use them.
	sent, answered := map[sut.TxID]bool{}, map[sut.TxID]bool{}
	subs := []sut.Submitter{c.Target.Submitter(0), c.Target.Submitter(1), c.Target.Submitter(7)}
	for i := 0; i < 9; i++ {
		tx := c.Valid(i)
		r := subs[i%len(subs)].Submit(ctx, tx)
		if r.Status != sut.Pending && r.Status != sut.Committed {
			t.Fatalf("Submit of valid transaction %d: %+v", i, r)
		}
		if r.Endpoint < 0 {
			t.Errorf("Submit: endpoint %d", r.Endpoint)
		}
		sent[tx.ID] = true
		if r.Status == sut.Committed {
			answered[tx.ID] = true // a synchronous ledger's answer is the commit
		} else if conf != nil {
			conf.Watch(tx.ID)
		}
	}
	if c.Invalid != nil {
		r := subs[0].Submit(ctx, *c.Invalid)
		if r.Status != sut.Rejected || r.Reason == "" {
			t.Errorf("Submit of an invalid transaction: %+v, want Rejected with a reason", r)
		}
	}
	submissions := int64(len(sent))
	if c.Invalid != nil {
		submissions++
	}
	submissions += checkBatch(ctx, t, c, conf, sent, answered)
	if c.Commits && conf == nil && len(answered) < len(sent) {
		t.Fatal("a target whose answers are not final must have a confirmer")
	}
	if conf != nil {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			ev.mu.Lock()
			n, blocks := 0, len(ev.heights)
			for id := range sent {
				if ev.txs[id] || answered[id] {
					n++
				}
			}
			ev.mu.Unlock()
			if (c.Commits && n == len(sent)) || (!c.Commits && blocks >= 2) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		stopConf()
		if err := <-done; err != nil {
			t.Errorf("Confirmer.Run after its context ended: %v", err)
		}
		ev.mu.Lock()
		for i := 1; i < len(ev.heights); i++ {
			if ev.heights[i] != ev.heights[i-1]+1 {
				t.Errorf("blocks out of order or skipped: %v", ev.heights)
				break
			}
		}
		if len(ev.heights) > 0 && ev.heights[0] != info.Height+1 {
			t.Errorf("first block %d, asked from %d", ev.heights[0], info.Height+1)
		}
		if c.Commits {
			for id := range sent {
				if !ev.txs[id] && !answered[id] {
					t.Errorf("transaction %s was never reported committed", id)
				}
			}
		}
		ev.mu.Unlock()
	}
	stopConf()
	if m, ok := c.Target.(sut.Mempool); ok {
		if n, err := m.MempoolTxs(ctx); err != nil || n < 0 {
			t.Errorf("MempoolTxs: %d, %v", n, err)
		}
	}
	if e, ok := c.Target.(sut.Endpoints); ok {
		var total int64
		for _, s := range e.EndpointStats() {
			total += s.Sent
		}
		if total != submissions {
			t.Errorf("endpoint stats count %d submissions, %d were made", total, submissions)
		}
	}
	if err := c.Target.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// checkBatch: a target that batches answers each payment of a batch on its
// own, a refusal in the middle leaving the others accepted. It returns the
// submissions it made.
func checkBatch(ctx context.Context, t *testing.T, c Case, conf sut.Confirmer, sent, answered map[sut.TxID]bool) int64 {
	b, ok := c.Target.(sut.Batcher)
	if !ok || b.BatchLanes() == 0 {
		return 0
	}
	bs, ok := c.Target.Submitter(0).(sut.BatchSubmitter)
	if !ok {
		t.Fatal("a target with batch lanes whose submitter 0 cannot send batches")
	}
	txs := []sut.Tx{c.Valid(9), c.Valid(10), c.Valid(11), c.Valid(12)}
	bad := -1
	if c.Invalid != nil {
		bad = 2
		txs = append(txs[:bad], append([]sut.Tx{*c.Invalid}, txs[bad:]...)...)
	}
	out := make([]sut.Receipt, len(txs))
	bs.SubmitBatch(ctx, txs, out)
	for k, r := range out {
		switch {
		case k == bad:
			if r.Status != sut.Rejected || r.Reason == "" {
				t.Errorf("SubmitBatch: the invalid transaction at %d: %+v, want Rejected with a reason", k, r)
			}
		case r.Status != sut.Pending && r.Status != sut.Committed:
			t.Errorf("SubmitBatch: valid transaction %d of %d: %+v", k, len(txs), r)
		default:
			sent[txs[k].ID] = true
			if r.Status == sut.Committed {
				answered[txs[k].ID] = true
			} else if conf != nil {
				conf.Watch(txs[k].ID)
			}
		}
	}
	return int64(len(txs))
}
