package dispatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
)

// late answers each payment synchronously only after its commit timeout
// has passed (the tracker has counted it expired), as an overloaded
// ledger service did, or after a block has already settled it; its
// answers cycle through the three cases.
type late struct {
	*ordered
	e    *Engine
	mu   sync.Mutex
	n    int
	want [3]int64 // committed late, refused late, settled by a block first
}

func (l *late) Submitter(int) sut.Submitter { return l }
func (l *late) Submit(_ context.Context, tx sut.Tx) sut.Receipt {
	l.take(tx)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.n % 3
	l.n++
	l.want[c]++
	if c == 2 {
		l.e.Tracker.Block(&sut.Block{Height: int64(l.n), Seen: time.Now(), Final: true, Txs: []sut.TxResult{{ID: tx.ID, OK: true}}})
		return sut.Receipt{Status: sut.Committed}
	}
	l.e.Tracker.Expire(l.e.Since() + time.Second) // every payment sent so far is past its timeout
	if c == 0 {
		return sut.Receipt{Status: sut.Committed}
	}
	return sut.Receipt{Status: sut.Rejected, Reason: "insufficient_funds"}
}

// An answer that comes after the payment's commit timeout settles it late
// (a commit moves it from expired to committed, a refusal to rejected),
// and one that comes after a block settled it is not counted twice: the
// identities hold (an overloaded ledger service's run broke them:
// accepted 926 + unacked 34 != committed 957 + expired 118).
func TestAnswersAfterExpiryKeepTheIdentities(t *testing.T) {
	target := &late{ordered: &ordered{next: map[uint32]uint64{}}}
	e := &Engine{Target: target, Connections: 1}
	target.e = e
	rec := startSigned(t, e, 50)
	ctx := context.Background()
	e.RunOpen(ctx, ctx, schedule.NewArrivals(schedule.Constant(300, time.Second), false, 1), 0)
	e.Tracker.End(e.Since())
	iv := rec.Collect(false)
	c := iv.Counts
	if err := c.Check(); err != nil {
		t.Error(err)
	}
	w := target.want
	if c.Sent != w[0]+w[1]+w[2] || c.Committed != w[0]+w[2] || c.LateCommits != w[0] || c.LateRefusals != w[1] || c.Expired != 0 || c.Rejected["insufficient_funds"] != w[1] {
		t.Errorf("sent %d, committed %d (late %d), late refusals %d, expired %d, rejected %v; want %d committed late, %d refused late, %d settled by a block first",
			c.Sent, c.Committed, c.LateCommits, c.LateRefusals, c.Expired, c.Rejected, w[0], w[1], w[2])
	}
}
