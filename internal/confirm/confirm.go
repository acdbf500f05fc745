// Package confirm matches committed blocks to the payments a run sent: by
// transaction id it decides committed, failed in block, or expired.
package confirm

import (
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/target"
)

// Pending is a payment sent and not yet resolved.
type Pending struct {
	Intended time.Duration // since the load began
	Sent     time.Duration
	Sender   int32 // -1 when the workload has no senders
}

// Outcome is how a pending payment ended.
type Outcome int

const (
	Committed Outcome = iota
	FailedInBlock
	Expired
)

// Resolution is passed to the tracker's callback for every resolved payment.
type Resolution struct {
	Pending
	Outcome Outcome
	Reason  string // result-code name when FailedInBlock
}

const shardCount = 64

type shard struct {
	mu sync.Mutex
	m  map[[32]byte]Pending
}

// Tracker holds pending payments, sharded by id to keep senders and the block
// reader off one lock.
type Tracker struct {
	shards  [shardCount]shard
	expMu   sync.Mutex
	expired map[[32]byte]Pending // kept to recognise late commits
	resolve func(Resolution)
	reason  func(space string, code uint32) string
}

// New makes a tracker; resolve is called once per resolved payment, reason
// names a non-zero result code.
func New(resolve func(Resolution), reason func(space string, code uint32) string) *Tracker {
	t := &Tracker{expired: map[[32]byte]Pending{}, resolve: resolve, reason: reason}
	for i := range t.shards {
		t.shards[i].m = map[[32]byte]Pending{}
	}
	return t
}

func (t *Tracker) shard(id [32]byte) *shard { return &t.shards[id[0]%shardCount] }

// Track registers a payment before it is submitted, so a block that commits
// it can never arrive first.
func (t *Tracker) Track(id [32]byte, p Pending) {
	s := t.shard(id)
	s.mu.Lock()
	s.m[id] = p
	s.mu.Unlock()
}

// Untrack forgets a payment the node rejected.
func (t *Tracker) Untrack(id [32]byte) {
	s := t.shard(id)
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// Len is the number of pending payments.
func (t *Tracker) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Block resolves every pending payment in b and records the block. seen is
// when it was observed, since the load began. It returns how many of the
// block's transactions were ours.
func (t *Tracker) Block(b target.Block, seen time.Duration, prevTime time.Time, rec *measure.Shard) int {
	br := rec.Block()
	ours, ok := 0, 0
	for i, id := range b.TxIDs {
		s := t.shard(id)
		s.mu.Lock()
		p, found := s.m[id]
		if found {
			delete(s.m, id)
		}
		s.mu.Unlock()
		late := false
		if !found {
			t.expMu.Lock()
			p, found = t.expired[id]
			if found {
				delete(t.expired, id)
				late = true
			}
			t.expMu.Unlock()
			if !found {
				continue // not ours
			}
		}
		ours++
		r := Resolution{Pending: p, Outcome: Committed}
		if b.Codes[i] != 0 {
			r.Outcome, r.Reason = FailedInBlock, t.reason(b.Spaces[i], b.Codes[i])
		} else {
			ok++
		}
		br.Committed(r.Outcome == Committed, r.Reason, seen-p.Intended, seen-p.Sent, late)
		if !late {
			t.resolve(r)
		}
	}
	st := measure.BlockStat{Height: b.Height, Time: b.Time, Seen: seen.Seconds(), Txs: len(b.TxIDs), Ours: ours, OursOK: ok, Bytes: b.Bytes}
	if !prevTime.IsZero() {
		st.IntervalMs = float64(b.Time.Sub(prevTime).Microseconds()) / 1000
	}
	br.End(st)
	return ours
}

// Expire resolves as expired every payment sent before cutoff.
func (t *Tracker) Expire(cutoff time.Duration, rec *measure.Shard) {
	var n int64
	for i := range t.shards {
		s := &t.shards[i]
		var gone []Pending
		var ids [][32]byte
		s.mu.Lock()
		for id, p := range s.m {
			if p.Sent < cutoff {
				gone = append(gone, p)
				ids = append(ids, id)
				delete(s.m, id)
			}
		}
		s.mu.Unlock()
		t.expMu.Lock()
		for k, id := range ids {
			t.expired[id] = gone[k]
		}
		t.expMu.Unlock()
		for _, p := range gone {
			t.resolve(Resolution{Pending: p, Outcome: Expired})
		}
		n += int64(len(gone))
	}
	if n > 0 {
		rec.Expired(n)
	}
}
