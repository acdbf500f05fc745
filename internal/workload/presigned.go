package workload

import "github.com/tpslab/tpslab/internal/sut"

// presigned holds the payments signed ahead, laid out in the order the
// dispatcher will take them: Presign draws the senders' picks beforehand
// (the same chooser, the same seed) and Reserve follows them. Kept by
// sender, as before, every payment read two cold cache lines (its entry and
// its bytes, in 2000 places at once) and reading them ahead was 12% of the
// generator's CPU at 400k payments/s; in send order they stream.
type presigned struct {
	txs  []sut.Tx   // in the order of the picks, then each sender's headroom
	at   [][]uint32 // at[s][k]: where in txs sender s's sequence base+k is
	kind []uint8    // with a mix: txs[i]'s kind, an index into mix
}

// has says whether sender s's k-th presigned payment exists.
func (q *presigned) has(s int, k uint64) bool { return k < uint64(len(q.at[s])) }

// get is sender s's k-th presigned payment.
func (q *presigned) get(s int, k uint64) *sut.Tx { return &q.txs[q.at[s][k]] }

// place is what one position of txs holds: sender s's k-th payment.
type place struct {
	s int32
	k uint32
}

// layout places each sender's counts[s] payments: in the order of the
// picks (a pick past its sender's count is left to live signing), then what
// is left of each count, sender by sender. It returns the store, empty, and
// each position's place.
func layout(picks []int32, counts []int, withKind bool) (*presigned, []place) {
	total := 0
	for _, c := range counts {
		total += c
	}
	q := &presigned{txs: make([]sut.Tx, total), at: make([][]uint32, len(counts))}
	if withKind {
		q.kind = make([]uint8, total)
	}
	for s, c := range counts {
		q.at[s] = make([]uint32, c)
	}
	places := make([]place, 0, total)
	seen := make([]uint32, len(counts))
	put := func(s int32) {
		k := seen[s]
		q.at[s][k] = uint32(len(places))
		places = append(places, place{s: s, k: k})
		seen[s]++
	}
	for _, s := range picks {
		if int(seen[s]) < counts[s] {
			put(s)
		}
	}
	for s, c := range counts {
		for int(seen[s]) < c {
			put(int32(s))
		}
	}
	return q, places
}

// bySender is each sender's presigned payments by sequence from its base
// (what a carry keeps).
func (q *presigned) bySender(s int) []sut.Tx {
	out := make([]sut.Tx, len(q.at[s]))
	for k, i := range q.at[s] {
		out[k] = q.txs[i]
	}
	return out
}
