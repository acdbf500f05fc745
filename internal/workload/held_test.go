package workload

import (
	"math/rand"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// held answers as a map from sequence to transaction would, under random
// puts (mostly in order, some below the window; presigned ones held as
// marks into the queue, others as copies, a sequence sometimes switching
// between them) and deletes.
func TestHeldIsAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var h held
	m := map[uint64]sut.Tx{}
	next := uint64(100)
	const base = 50
	queue := make([]sut.Tx, 300_000)
	for k := range queue {
		n := base + uint64(k)
		queue[k] = sut.Tx{ID: sut.TxID{byte(n), byte(n >> 8), 'q'}, Bytes: []byte{byte(n)}}
	}
	for i := 0; i < 200_000; i++ {
		switch op := r.Intn(10); {
		case op < 5:
			n := next
			if r.Intn(20) == 0 && next > 10 {
				n = next - uint64(r.Intn(10)) - 1 // a rewound lane
			} else {
				next++
			}
			tx, queued := sut.Tx{ID: sut.TxID{byte(n), byte(n >> 8)}, Bytes: []byte{byte(n)}}, r.Intn(3) > 0
			if queued {
				tx = queue[n-base]
			}
			h.put(n, tx, queued)
			m[n] = tx
		default:
			n := next - uint64(r.Intn(64)) - 1
			h.del(n)
			delete(m, n)
		}
		if i%1000 == 0 {
			for n := next - 200; n < next+5; n++ {
				got, ok := h.get(n, func(n uint64) sut.Tx { return queue[n-base] })
				want, wok := m[n]
				if ok != wok || got.ID != want.ID {
					t.Fatalf("step %d: get(%d) = %v %v, map says %v %v", i, n, got.ID, ok, want.ID, wok)
				}
			}
		}
	}
}
