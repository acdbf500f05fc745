// Package confirm matches what a confirmer reports (blocks, finality,
// reorgs, per-transaction answers) to the payments a run sent, by
// transaction id: it decides committed, failed in block, or expired, and
// records each block whole.
package confirm

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/sut"
)

// Pending is a payment sent and not yet resolved.
type Pending struct {
	Intended time.Duration // since the load began
	Sent     time.Duration
	Sender   int32 // -1 when the workload has no senders
	Nonce    uint64
	Invalid  string // the sort of a deliberately invalid payment; "" for a payment
	Kind     string // its kind in a mix; "" without one
	// Unanswered: an invalid payment whose answer was lost; unless a block
	// shows it, what became of it is unknown, never "taken".
	Unanswered bool
}

// Outcome is how a pending payment ended.
type Outcome int

const (
	Committed Outcome = iota
	FailedInBlock
	Expired
	// InFlightAtEnd: unresolved when the run ended, its commit timeout not
	// yet passed; the run cannot say what it became.
	InFlightAtEnd
)

// Resolution is passed to the tracker's callback for every resolved payment.
type Resolution struct {
	Pending
	ID      sut.TxID
	Outcome Outcome
	Reason  string // why, when FailedInBlock
	Detail  string // the system's words for it
}

const shardCount = 64

type shard struct {
	mu sync.Mutex
	m  table
	// oldest is at most the earliest Sent in m (noExpiry when m was empty
	// at the last scan): Expire skips a shard with nothing old enough
	// rather than walk every payment in flight each time.
	oldest  time.Duration
	touched uint64 // what TrackAll read ahead, kept so the reads stay
}

// noExpiry is an oldest for a shard that holds nothing.
const noExpiry = time.Duration(1<<63 - 1)

// included is a payment in a block that is not final yet (depth-k chains).
type included struct {
	Pending
	height int64
	seen   time.Duration
	ok     bool
	reason string
	detail string
}

// lateWindow bounds the memory kept for late commits: expired payments are
// remembered in two generations of this many, so at least the last
// lateWindow expired payments are recognised if a block commits them later
// (about 100 bytes each), and a long run against a system that commits
// nothing stays flat.
const lateWindow = 100_000

// Tracker holds pending payments, sharded by id to keep workers and the
// block reader off one lock. It implements sut.Events.
type Tracker struct {
	shards   [shardCount]shard
	expMu    sync.Mutex
	expired  map[sut.TxID]Pending // kept to recognise late commits
	expOld   map[sut.TxID]Pending // the generation before (see lateWindow)
	incMu    sync.Mutex
	included map[sut.TxID]included
	waiting  map[int64]measure.BlockStat // blocks included, not final yet
	resolve  func(Resolution)
	start    time.Time
	rec      *measure.Shard
	prevTime time.Time
	// OnBlock, when set, is told of every block after it is recorded.
	OnBlock func(st measure.BlockStat)
}

// New makes a tracker; resolve is called once per resolved payment, start is
// time zero of the load, rec records blocks and commits.
func New(resolve func(Resolution), start time.Time, rec *measure.Shard) *Tracker {
	t := &Tracker{expired: map[sut.TxID]Pending{}, included: map[sut.TxID]included{}, waiting: map[int64]measure.BlockStat{},
		resolve: resolve, start: start, rec: rec}
	for i := range t.shards {
		t.shards[i].oldest = noExpiry
		t.shards[i].m.fill = 32 + 19*i/(shardCount-1) // resizes staggered (table.fill)
	}
	return t
}

func (t *Tracker) shard(id sut.TxID) *shard { return &t.shards[id[0]%shardCount] }

// Track registers a payment before it is submitted, so a block that commits
// it can never arrive first. It is false, and changes nothing, when the
// same bytes are tracked for another payment.
func (t *Tracker) Track(id sut.TxID, p Pending) bool {
	s := t.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.m.add(&id, p) {
		return false // the same bytes are another payment's, still in flight
	}
	s.oldest = min(s.oldest, p.Sent)
	return true
}

// Batch is payments to track together (TrackAll): a worker keeps one and
// reuses it.
type Batch struct {
	IDs     []sut.TxID
	Pending []Pending
	OK      []bool  // after TrackAll: whether IDs[i] was tracked (as Track)
	order   []int32 // positions in IDs, grouped by shard
}

// Reset empties b for the next batch.
func (b *Batch) Reset() { b.IDs, b.Pending = b.IDs[:0], b.Pending[:0] }

// Add puts one more payment in b.
func (b *Batch) Add(id sut.TxID, p Pending) {
	b.IDs = append(b.IDs, id)
	b.Pending = append(b.Pending, p)
}

// TrackAll tracks b's payments as Track does, in order. It takes each
// shard's lock once for the batch's ids in it, and reads their index
// positions before probing for any, so the cache misses overlap: one at a
// time, with millions pending, the probe was 12-15% of the generator's CPU
// at 400k payments/s.
func (t *Tracker) TrackAll(b *Batch) {
	n := len(b.IDs)
	b.OK = slices.Grow(b.OK[:0], n)[:n]
	b.order = slices.Grow(b.order[:0], n)[:n]
	var start [shardCount + 1]int32
	for i := range b.IDs {
		start[b.IDs[i][0]%shardCount+1]++
	}
	for k := 1; k <= shardCount; k++ {
		start[k] += start[k-1]
	}
	next := start
	for i := range b.IDs {
		k := b.IDs[i][0] % shardCount
		b.order[next[k]] = int32(i)
		next[k]++
	}
	for k := range t.shards {
		group := b.order[start[k]:start[k+1]]
		if len(group) == 0 {
			continue
		}
		s := &t.shards[k]
		s.mu.Lock()
		s.touched += s.m.touch(b.IDs, group)
		for _, i := range group {
			b.OK[i] = s.m.add(&b.IDs[i], b.Pending[i])
			if b.OK[i] {
				s.oldest = min(s.oldest, b.Pending[i].Sent)
			}
		}
		s.mu.Unlock()
	}
}

// Unanswered marks a tracked payment's answer as lost.
func (t *Tracker) Unanswered(id sut.TxID) {
	s := t.shard(id)
	s.mu.Lock()
	s.m.unanswered(&id)
	s.mu.Unlock()
}

// expiredInvalid records an invalid payment that no block showed: refused
// when the target had accepted it and it never committed, unknown when its
// answer was lost.
func (t *Tracker) expiredInvalid(p Pending) {
	if p.Unanswered {
		t.rec.Invalid("unknown", p.Invalid, "")
	} else {
		t.rec.Invalid("refused", p.Invalid, "expired")
	}
}

// Untrack forgets payment p, whose answer settled it (committed, failed
// or refused) or replaced it (signed again); an entry of the same bytes
// that another payment made stays (two payments can reach one presigned
// sequence; the one in flight keeps it). It says where p was: tracked (still
// pending), late (its commit timeout had passed: counted expired, its answer
// came after), or neither (a block or a confirmer resolved it first).
func (t *Tracker) Untrack(id sut.TxID, p Pending) (tracked, late bool) {
	s := t.shard(id)
	s.mu.Lock()
	if q, ok := s.m.get(&id); ok && q == p {
		s.m.remove(&id)
		tracked = true
	}
	s.mu.Unlock()
	if tracked {
		return true, false
	}
	t.expMu.Lock()
	defer t.expMu.Unlock()
	for _, m := range []map[sut.TxID]Pending{t.expired, t.expOld} {
		if q, ok := m[id]; ok && q == p {
			delete(m, id)
			return false, true
		}
	}
	return false, false
}

// Len is the number of payments sent and not yet final.
func (t *Tracker) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += s.m.n
		s.mu.Unlock()
	}
	t.incMu.Lock()
	n += len(t.included)
	t.incMu.Unlock()
	return n
}

// take removes id from the pending payments, or from the expired ones (a
// late commit); found is false when the payment is not ours.
func (t *Tracker) take(id sut.TxID) (p Pending, found, late bool) {
	s := t.shard(id)
	s.mu.Lock()
	p, found = s.m.remove(&id)
	s.mu.Unlock()
	if found {
		return p, true, false
	}
	t.expMu.Lock()
	p, found = t.expired[id]
	if found {
		delete(t.expired, id)
	} else if p, found = t.expOld[id]; found {
		delete(t.expOld, id)
	}
	t.expMu.Unlock()
	return p, found, found
}

func (t *Tracker) since(at time.Time) time.Duration { return at.Sub(t.start) }

// Block resolves every payment of ours in b and records the block whole,
// when the block is final. A block that is not final yet (depth-k chains)
// marks ours included, and is recorded whole when Final reaches it, so a
// block's payments always count in the second its block became final.
func (t *Tracker) Block(b *sut.Block) {
	seen := t.since(b.Seen)
	st := measure.BlockStat{Height: b.Height, Time: b.Time, Seen: seen.Seconds(), Txs: len(b.Txs), Bytes: b.Bytes, Hash: b.Hash}
	if !t.prevTime.IsZero() {
		st.IntervalMs = float64(b.Time.Sub(t.prevTime).Microseconds()) / 1000
	}
	t.prevTime = b.Time
	if !b.Final {
		t.incMu.Lock()
		for _, tx := range b.Txs {
			p, found, _ := t.take(tx.ID)
			if !found {
				continue
			}
			st.Ours++
			if tx.OK && p.Invalid == "" {
				st.OursOK++
				st.OK = append(st.OK, tx.ID)
			}
			if p.Invalid == "" {
				t.rec.Included(seen - p.Intended)
			}
			t.included[tx.ID] = included{Pending: p, height: b.Height, seen: seen, ok: tx.OK, reason: tx.Reason, detail: tx.Detail}
		}
		t.waiting[b.Height] = st
		t.incMu.Unlock()
		return
	}
	br := t.rec.Block()
	var done []Resolution
	for _, tx := range b.Txs {
		p, found, late := t.take(tx.ID)
		if !found {
			continue // not ours
		}
		st.Ours++
		r := Resolution{Pending: p, ID: tx.ID, Outcome: Committed}
		if !tx.OK {
			r.Outcome, r.Reason, r.Detail = FailedInBlock, tx.Reason, tx.Detail
		}
		if p.Invalid != "" {
			br.Invalid(p.Invalid, tx.OK, "in block: "+tx.Reason)
			done = append(done, r)
			continue
		}
		if tx.OK {
			st.OursOK++
			st.OursGas += tx.Gas
			st.OK = append(st.OK, tx.ID)
		}
		br.Committed(tx.OK, tx.Reason, seen-p.Intended, seen-p.Sent, late)
		switch {
		case late:
		case !tx.Proposed.IsZero():
			br.Proposed(max(t.since(tx.Proposed)-p.Intended, 0))
		case !b.Proposed.IsZero():
			br.Proposed(t.since(b.Proposed) - p.Intended)
		}
		if !tx.Gossiped.IsZero() && !late { // another node's wall clock: on one machine, ours
			br.Gossiped(max(t.since(tx.Gossiped)-p.Intended, 0))
		}
		if p.Kind != "" {
			br.ByKind(p.Kind, tx.OK, seen-p.Intended)
		}
		if !late {
			done = append(done, r)
		}
	}
	br.End(st)
	for _, r := range done {
		t.resolve(r)
	}
	if t.OnBlock != nil {
		t.OnBlock(st)
	}
}

// Final makes every waiting block at or below height upTo final, in order:
// each is recorded whole, as seen now, with what it included resolved.
func (t *Tracker) Final(upTo int64, at time.Time) {
	seen := t.since(at)
	t.incMu.Lock()
	var heights []int64
	for h := range t.waiting {
		if h <= upTo {
			heights = append(heights, h)
		}
	}
	sort.Slice(heights, func(i, j int) bool { return heights[i] < heights[j] })
	byHeight := map[int64][]sut.TxID{}
	for id, in := range t.included {
		if in.height <= upTo {
			byHeight[in.height] = append(byHeight[in.height], id)
		}
	}
	type final struct {
		st   measure.BlockStat
		done []Resolution
	}
	var finals []final
	for _, h := range heights {
		f := final{st: t.waiting[h]}
		delete(t.waiting, h)
		f.st.Seen = seen.Seconds()
		for _, id := range byHeight[h] {
			in := t.included[id]
			delete(t.included, id)
			r := Resolution{Pending: in.Pending, ID: id, Outcome: Committed}
			if !in.ok {
				r.Outcome, r.Reason, r.Detail = FailedInBlock, in.reason, in.detail
			}
			f.done = append(f.done, r)
		}
		finals = append(finals, f)
	}
	t.incMu.Unlock()
	for _, f := range finals {
		br := t.rec.Block()
		for _, r := range f.done {
			if r.Invalid != "" {
				br.Invalid(r.Invalid, r.Outcome == Committed, "in block: "+r.Reason)
				continue
			}
			br.Committed(r.Outcome == Committed, r.Reason, seen-r.Intended, seen-r.Sent, false)
			if r.Kind != "" {
				br.ByKind(r.Kind, r.Outcome == Committed, seen-r.Intended)
			}
		}
		br.End(f.st)
		for _, r := range f.done {
			t.resolve(r)
		}
		if t.OnBlock != nil {
			t.OnBlock(f.st)
		}
	}
}

// Reorg puts every payment included at height from or above back to
// pending: the blocks that held them were replaced.
func (t *Tracker) Reorg(from int64, _ time.Time) {
	var n int64
	t.incMu.Lock()
	for id, in := range t.included {
		if in.height >= from {
			delete(t.included, id)
			t.Track(id, in.Pending)
			n++
		}
	}
	for h := range t.waiting {
		if h >= from {
			delete(t.waiting, h)
		}
	}
	t.incMu.Unlock()
	t.rec.Reorg(n)
}

// Resolved settles one payment a per-transaction confirmer followed.
func (t *Tracker) Resolved(id sut.TxID, ok bool, reason string, at time.Time) {
	p, found, late := t.take(id)
	if !found {
		return
	}
	seen := t.since(at)
	switch {
	case p.Invalid != "" && ok:
		t.rec.Invalid("committed", p.Invalid, "")
	case p.Invalid != "":
		t.rec.Invalid("refused", p.Invalid, "in block: "+reason)
	default:
		t.rec.Settled(id, ok, reason, seen-p.Intended, seen-p.Sent, late)
		if p.Kind != "" {
			t.rec.SettledKind(p.Kind, ok, seen-p.Intended)
		}
	}
	if late {
		return
	}
	r := Resolution{Pending: p, ID: id, Outcome: Committed}
	if !ok {
		r.Outcome, r.Reason = FailedInBlock, reason
	}
	t.resolve(r)
}

// Expire resolves as expired every payment sent before cutoff.
func (t *Tracker) Expire(cutoff time.Duration) { t.sweep(cutoff, Expired) }

// End resolves what is still pending when the run ends: expired if it was
// sent before cutoff (its commit timeout passed), else in flight at the
// end (a block after the drain may still hold it; issue 51).
func (t *Tracker) End(cutoff time.Duration) {
	t.sweep(cutoff, Expired)
	t.sweep(noExpiry, InFlightAtEnd)
}

// sweep resolves every payment sent before cutoff as o (Expired or
// InFlightAtEnd); an invalid one is refused or unknown either way.
func (t *Tracker) sweep(cutoff time.Duration, o Outcome) {
	var n int64
	for i := range t.shards {
		s := &t.shards[i]
		var gone []Resolution
		s.mu.Lock()
		if s.oldest >= cutoff {
			s.mu.Unlock()
			continue
		}
		oldest := noExpiry
		s.m.each(func(id sut.TxID, p Pending) {
			if p.Sent < cutoff {
				gone = append(gone, Resolution{Pending: p, ID: id, Outcome: o})
			} else {
				oldest = min(oldest, p.Sent)
			}
		})
		for i := range gone {
			s.m.remove(&gone[i].ID)
		}
		s.oldest = oldest
		s.mu.Unlock()
		if len(gone) == 0 {
			continue
		}
		valid := gone[:0]
		for _, r := range gone {
			if r.Invalid != "" {
				t.expiredInvalid(r.Pending)
				t.resolve(r)
				continue
			}
			valid = append(valid, r)
		}
		gone = valid
		t.expMu.Lock()
		for _, r := range gone {
			if o != Expired {
				break // nothing commits after the end: no late commit to recognise
			}
			t.expired[r.ID] = r.Pending
			if len(t.expired) >= lateWindow {
				t.expOld, t.expired = t.expired, make(map[sut.TxID]Pending)
			}
		}
		t.expMu.Unlock()
		for _, r := range gone {
			t.resolve(r)
		}
		n += int64(len(gone))
	}
	// Included in a block that never became final in time.
	var gone []Resolution
	t.incMu.Lock()
	for id, in := range t.included {
		if in.Sent < cutoff {
			gone = append(gone, Resolution{Pending: in.Pending, ID: id, Outcome: o})
			delete(t.included, id)
		}
	}
	t.incMu.Unlock()
	for _, r := range gone {
		if r.Invalid != "" {
			t.expiredInvalid(r.Pending)
		} else {
			n++
		}
		t.resolve(r)
	}
	switch {
	case n == 0:
	case o == Expired:
		t.rec.Expired(n)
	default:
		t.rec.InFlightEnd(n)
	}
}
