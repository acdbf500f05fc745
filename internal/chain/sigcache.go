package chain

import "sync"

// sigCache remembers the hashes of transactions whose signature verified, so
// FinalizeBlock and mempool rechecks skip a second ed25519 verification. It
// holds two generations and drops the older when the newer fills, bounding
// memory without per-entry bookkeeping.
type sigCache struct {
	mu       sync.Mutex
	cur, old map[[32]byte]struct{}
	max      int
}

func newSigCache(max int) *sigCache {
	return &sigCache{cur: make(map[[32]byte]struct{}), old: map[[32]byte]struct{}{}, max: max}
}

func (c *sigCache) has(h [32]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cur[h]; ok {
		return true
	}
	_, ok := c.old[h]
	return ok
}

func (c *sigCache) add(h [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) >= c.max {
		c.old, c.cur = c.cur, make(map[[32]byte]struct{}, c.max)
	}
	c.cur[h] = struct{}{}
}
