package chain

import (
	"encoding/binary"
	"sync"
	"time"
)

// SeenSample says whether a transaction (by its sha256) is one whose first
// arrival in each node's mempool the ledger remembers: one in 16, chosen by
// hash so every node samples the same ones.
func SeenSample(hash [32]byte) bool { return hash[0] < 16 }

// seenLog remembers when this node's mempool first checked each sampled
// transaction (wall clock, Unix nanoseconds), for the /seen query: the
// load generator reads, from every node, when a payment reached a second
// node's mempool. It keeps the last seenCap, oldest forgotten first.
type seenLog struct {
	mu   sync.Mutex
	at   map[[32]byte]int64
	ring [][32]byte
	next int
}

const seenCap = 1 << 17

func newSeenLog() *seenLog {
	return &seenLog{at: make(map[[32]byte]int64, seenCap), ring: make([][32]byte, seenCap)}
}

// add records h now unless it was seen before.
func (s *seenLog) add(h [32]byte) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[h]; ok {
		return
	}
	if old := s.ring[s.next]; old != ([32]byte{}) {
		delete(s.at, old)
	}
	s.ring[s.next] = h
	s.next = (s.next + 1) % seenCap
	s.at[h] = now
}

// query answers /seen: data is hashes of 32 bytes each, the answer one
// big-endian int64 per hash (Unix nanoseconds, 0: not seen or forgotten).
func (s *seenLog) query(data []byte) []byte {
	out := make([]byte, 0, len(data)/32*8)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i+32 <= len(data); i += 32 {
		out = binary.BigEndian.AppendUint64(out, uint64(s.at[[32]byte(data[i:i+32])]))
	}
	return out
}
