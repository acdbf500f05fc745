package cometbft

import (
	"encoding/binary"
	"testing"
	"time"
)

// LedgerSeen reads a node's answer: whatever the bytes, one time per hash
// asked, and a stated time read back exactly.
func FuzzLedgerSeen(f *testing.F) {
	f.Add(binary.BigEndian.AppendUint64(nil, uint64(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).UnixNano())), 1)
	f.Add([]byte{1, 2, 3}, 2)
	f.Fuzz(func(t *testing.T, answer []byte, n int) {
		if n < 0 || n > 1<<12 {
			return
		}
		got := LedgerSeen(answer, n)
		if len(got) != n {
			t.Fatalf("%d times for %d hashes", len(got), n)
		}
		for i := 0; i < n && 8*i+8 <= len(answer); i++ {
			ns := int64(binary.BigEndian.Uint64(answer[8*i:]))
			if (ns > 0) != !got[i].IsZero() || (ns > 0 && got[i].UnixNano() != ns) {
				t.Fatalf("hash %d: %d read as %v", i, ns, got[i])
			}
		}
	})
}
