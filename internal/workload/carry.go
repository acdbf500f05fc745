package workload

import (
	"sync"

	"github.com/tpslab/tpslab/internal/sut"
)

// Durable is a codec whose signed payments stay valid until their sequence
// is used: nothing chosen at signing (a fee under a moving gas price, an
// expiry) can go stale between runs. Only such payments are carried.
type Durable interface{ Durable() bool }

// Carry keeps a run's presigned payments for the next run of the same
// workload on the same system (find-max's steps). A sender's payments past
// those the run used stay valid, since its sequence goes on from there, so
// the next run signs only what it lacks: presigning took 1.4-1.8 s of each
// find-max step on the built-in network, most of it payments signed as
// headroom and never sent.
type Carry struct {
	mu  sync.Mutex
	txs map[int]carried // by account
}

type carried struct {
	base uint64 // the sequence of txs[0]
	txs  []sut.Tx
}

// Carrier is a Presigner whose payments can be carried between runs: what
// Presign did not sign of its PresignPlan came from the carry.
type Carrier interface{ UseCarry(c *Carry) }

// NewCarry is an empty carry.
func NewCarry() *Carry { return &Carry{txs: map[int]carried{}} }

// from is account a's carried payments from sequence base on (nil when it
// has none there).
func (c *Carry) from(a int, base uint64) []sut.Tx {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.txs[a]
	if !ok || base < k.base || base-k.base >= uint64(len(k.txs)) {
		return nil
	}
	return k.txs[base-k.base:]
}

func (c *Carry) keep(a int, base uint64, txs []sut.Tx) {
	c.mu.Lock()
	c.txs[a] = carried{base: base, txs: txs}
	c.mu.Unlock()
}

// UseCarry makes Presign start from c's payments and leave this run's in
// it. It does nothing unless the codec's payments are Durable, or with a
// mix or a trace (whose payments are not interchangeable).
func (p *Payments) UseCarry(c *Carry) {
	if d, ok := p.codec.(Durable); ok && d.Durable() && p.mix == nil && p.rowsOf == nil {
		p.carry = c
	}
}
