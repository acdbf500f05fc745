package confirm

import (
	"encoding/binary"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// table is one shard's pending payments by id. Written by hand rather
// than a Go map because a Go map keeps each 104-byte entry inside its
// slots: with millions pending (a system that commits slowly, or never,
// like the sink) every insert missed the cache on large slots and growth
// copied every entry, 450 ns a payment at 4M pending against 205 ns for
// this shape (BenchmarkTrackPending). Here the index is compact (one
// 8-byte word a position: 4 bytes of the id and a slot number, so a probe
// misses the cache once, not once for each half; linear probing) and
// entries stay put in
// fixed chunks, reused through a free list (kept, as a map keeps its
// memory, so a chain's blocks do not allocate). An entry is 64 bytes
// without pointers: its two names are numbers into names, so the garbage
// collector never scans the chunks.
type table struct {
	idx    []uint64 // per position: key (id bytes 8..12; sha256: uniform) << 32 | slot (from 1); 0: empty
	n      int      // entries
	chunks [][]slot
	free   []uint32 // slots to reuse
	next   uint32   // the next never used slot
	// fill is the load, in 64ths, past which the index doubles (0: 45,
	// about 0.7). Shards differ, from 0.5 to 0.8: ids spread evenly, so
	// with one threshold all 64 shards doubled at once, and at 6M pending
	// that rehash stalled the sender 200 ms.
	fill int
	// names are the kinds and invalid sorts held, by number (0: "");
	// past the 255th, a name is kept in many by slot.
	names []string
	many  map[uint32][2]string
}

type slot struct {
	id             sut.TxID
	intended, sent time.Duration
	nonce          uint64
	sender         int32
	invalid, kind  uint8 // numbers into names; manyNames: in many
	unanswered     bool
}

const manyNames = 255

// name is s's number in names, added if new.
func (t *table) name(s string) uint8 {
	if s == "" {
		return 0
	}
	if len(t.names) == 0 {
		t.names = append(t.names, "")
	}
	for i, n := range t.names {
		if n == s {
			return uint8(i)
		}
	}
	if len(t.names) == manyNames {
		return manyNames
	}
	t.names = append(t.names, s)
	return uint8(len(t.names) - 1)
}

// put writes p into slot s.
func (t *table) put(s uint32, id *sut.TxID, p Pending) {
	inv, kind := t.name(p.Invalid), t.name(p.Kind)
	*t.slot(s) = slot{id: *id, intended: p.Intended, sent: p.Sent, nonce: p.Nonce, sender: p.Sender, invalid: inv, kind: kind, unanswered: p.Unanswered}
	if inv == manyNames || kind == manyNames {
		if t.many == nil {
			t.many = map[uint32][2]string{}
		}
		t.many[s] = [2]string{p.Invalid, p.Kind}
	}
}

// pending reads slot s.
func (t *table) pending(s uint32) Pending {
	sl := t.slot(s)
	p := Pending{Intended: sl.intended, Sent: sl.sent, Sender: sl.sender, Nonce: sl.nonce, Unanswered: sl.unanswered}
	if sl.invalid == manyNames || sl.kind == manyNames {
		n := t.many[s]
		p.Invalid, p.Kind = n[0], n[1]
		return p
	}
	if sl.invalid != 0 {
		p.Invalid = t.names[sl.invalid]
	}
	if sl.kind != 0 {
		p.Kind = t.names[sl.kind]
	}
	return p
}

const (
	chunkSlots = 256
	minIndex   = 64
)

func keyOf(id *sut.TxID) uint32 { return binary.LittleEndian.Uint32(id[8:12]) }

// at is the slot an index word holds (0: empty); home is its key's
// first position under mask.
func at(e uint64) uint32          { return uint32(e) }
func home(e uint64, mask int) int { return int(e>>32) & mask }

func (t *table) slot(s uint32) *slot { return &t.chunks[(s-1)/chunkSlots][(s-1)%chunkSlots] }

// find is the index position holding id, or the empty one where it goes.
func (t *table) find(id *sut.TxID) (int, bool) {
	if len(t.idx) == 0 {
		return -1, false
	}
	mask := len(t.idx) - 1
	k := keyOf(id)
	for i := int(k) & mask; ; i = (i + 1) & mask {
		switch e := t.idx[i]; {
		case e == 0:
			return i, false
		case uint32(e>>32) == k && t.slot(at(e)).id == *id:
			return i, true
		}
	}
}

// touch reads the home position of each of ids[group], so a batch's cache
// misses overlap before any probe waits on one; the sum keeps the reads.
func (t *table) touch(ids []sut.TxID, group []int32) (sum uint64) {
	if len(t.idx) == 0 {
		return 0
	}
	mask := len(t.idx) - 1
	for _, i := range group {
		sum += t.idx[int(keyOf(&ids[i]))&mask]
	}
	return sum
}

// get is id's pending payment, if held.
func (t *table) get(id *sut.TxID) (Pending, bool) {
	i, ok := t.find(id)
	if !ok {
		return Pending{}, false
	}
	return t.pending(at(t.idx[i])), true
}

// unanswered marks id's payment's answer lost, if held.
func (t *table) unanswered(id *sut.TxID) {
	if i, ok := t.find(id); ok {
		t.slot(at(t.idx[i])).unanswered = true
	}
}

// add holds p under id; false when id is held already.
func (t *table) add(id *sut.TxID, p Pending) bool {
	fill := t.fill
	if fill == 0 {
		fill = 45
	}
	if (t.n+1)*64 > len(t.idx)*fill {
		t.resize(max(minIndex, 2*len(t.idx)))
	}
	i, ok := t.find(id)
	if ok {
		return false
	}
	var s uint32
	if k := len(t.free); k > 0 {
		s, t.free = t.free[k-1], t.free[:k-1]
	} else {
		t.next++
		s = t.next
		if int(s-1)/chunkSlots == len(t.chunks) {
			t.chunks = append(t.chunks, make([]slot, chunkSlots))
		}
	}
	t.put(s, id, p)
	t.idx[i] = uint64(keyOf(id))<<32 | uint64(s)
	t.n++
	return true
}

// remove drops id; ok is false when it was not held.
func (t *table) remove(id *sut.TxID) (p Pending, ok bool) {
	i, ok := t.find(id)
	if !ok {
		return p, false
	}
	s := at(t.idx[i])
	p = t.pending(s)
	if t.many != nil {
		delete(t.many, s)
	}
	t.free = append(t.free, s)
	t.n--
	// Backward shift: the entries after i that would not be found past a
	// gap move into it, so no tombstones are needed.
	mask := len(t.idx) - 1
	for j := i; ; {
		j = (j + 1) & mask
		if t.idx[j] == 0 {
			break
		}
		h := home(t.idx[j], mask)
		if (i <= j && i < h && h <= j) || (i > j && (i < h || h <= j)) {
			continue // still reachable from its home
		}
		t.idx[i] = t.idx[j]
		i = j
	}
	t.idx[i] = 0
	if len(t.idx) > minIndex && t.n*8 < len(t.idx) {
		t.resize(len(t.idx) / 2)
	}
	return p, true
}

// resize rebuilds the index with size positions (a power of two).
func (t *table) resize(size int) {
	old := t.idx
	t.idx = make([]uint64, size)
	mask := size - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := home(e, mask)
		for t.idx[i] != 0 {
			i = (i + 1) & mask
		}
		t.idx[i] = e
	}
}

// each calls f for every held payment; f may not change the table.
func (t *table) each(f func(id sut.TxID, p Pending)) {
	for _, e := range t.idx {
		if s := at(e); s != 0 {
			f(t.slot(s).id, t.pending(s))
		}
	}
}
