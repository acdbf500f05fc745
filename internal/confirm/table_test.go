package confirm

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// checkTable runs ops against the table and a Go map side by side: every
// answer, the count and the full contents must agree. Ids come from a
// small space whose index keys collide on purpose (ids that differ only
// outside bytes 8..16), so probing past a same-key entry is exercised.
func checkTable(t *testing.T, ops []byte) {
	var tb table
	ref := map[sut.TxID]Pending{}
	idOf := func(b byte) sut.TxID {
		var id sut.TxID
		id[0] = b      // the id
		id[8] = b % 32 // its key: 8 ids share each
		return id
	}
	for n, op := range ops {
		id := idOf(op)
		p := Pending{Sent: time.Duration(n), Nonce: uint64(n), Sender: int32(n%5 - 1), Kind: string(rune('a' + n%3)), Unanswered: n%7 == 0}
		if n%4 == 0 {
			p.Invalid = "bad_signature"
		}
		switch n % 3 {
		case 0, 1: // add twice as often as remove, so the index grows
			_, had := ref[id]
			if got := tb.add(&id, p); got == had {
				t.Fatalf("op %d: add %x: %v, held before %v", n, id[:1], got, had)
			}
			if !had {
				ref[id] = p
			}
		case 2:
			want, had := ref[id]
			got, ok := tb.remove(&id)
			if ok != had || got != want {
				t.Fatalf("op %d: remove %x: %+v %v, want %+v %v", n, id[:1], got, ok, want, had)
			}
			delete(ref, id)
		}
		if tb.n != len(ref) {
			t.Fatalf("op %d: %d held, want %d", n, tb.n, len(ref))
		}
	}
	seen := 0
	tb.each(func(id sut.TxID, p Pending) {
		if want, ok := ref[id]; !ok || want != p {
			t.Fatalf("each: %x %+v, want %+v %v", id[:1], p, want, ok)
		}
		if q, ok := tb.get(&id); !ok || q != p {
			t.Fatalf("get %x: %v %v", id[:1], q, ok)
		}
		seen++
	})
	if seen != len(ref) {
		t.Fatalf("each saw %d, want %d", seen, len(ref))
	}
	// Emptied, it finds nothing and holds nothing.
	for id := range ref {
		if _, ok := tb.remove(&id); !ok {
			t.Fatalf("remove %x at the end: not found", id[:1])
		}
	}
	if tb.n != 0 {
		t.Fatalf("%d held after removing all", tb.n)
	}
}

// The table agrees with a Go map over long random runs that grow the
// index past several resizes and shrink it again.
func TestTableAgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for run := 0; run < 20; run++ {
		ops := make([]byte, 5000)
		r.Read(ops)
		checkTable(t, ops)
	}
	// Many distinct ids: the index resizes up to thousands and back.
	var tb table
	ids := make([]sut.TxID, 20_000)
	for i := range ids {
		r.Read(ids[i][:])
		if !tb.add(&ids[i], Pending{Nonce: uint64(i)}) {
			t.Fatalf("id %d taken as held", i)
		}
	}
	for i := range ids {
		if p, ok := tb.remove(&ids[i]); !ok || p.Nonce != uint64(i) {
			t.Fatalf("id %d: %+v %v", i, p, ok)
		}
	}
	if tb.n != 0 || len(tb.idx) != minIndex {
		t.Fatalf("emptied: %d held, index of %d", tb.n, len(tb.idx))
	}
	// More names than an entry can number (a mix of hundreds of kinds):
	// each still reads back as it was held.
	for i := range ids[:2000] {
		p := Pending{Nonce: uint64(i), Kind: fmt.Sprintf("kind-%d", i%300), Invalid: fmt.Sprintf("sort-%d", i%3)}
		tb.add(&ids[i], p)
		if i%2 == 0 {
			tb.unanswered(&ids[i])
			p.Unanswered = true
		}
		if got, ok := tb.get(&ids[i]); !ok || got != p {
			t.Fatalf("id %d: %+v %v, want %+v", i, got, ok, p)
		}
	}
	for i := range ids[:2000] {
		if p, ok := tb.remove(&ids[i]); !ok || p.Kind != fmt.Sprintf("kind-%d", i%300) || p.Unanswered != (i%2 == 0) {
			t.Fatalf("id %d: %+v %v", i, p, ok)
		}
	}
	if len(tb.many) != 0 {
		t.Fatalf("%d names kept after every entry went", len(tb.many))
	}
}

func FuzzTable(f *testing.F) {
	f.Add([]byte{1, 65, 1, 65, 1, 65, 2, 3, 4})
	f.Fuzz(checkTable)
}
