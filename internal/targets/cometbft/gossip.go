package cometbft

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// SeenQuery is an application's way to say when each node's mempool first
// held a transaction (the built-in ledger's /seen query): the path, which
// transactions it samples (by id), and the answer's reading (one time per
// id asked, zero when not seen).
type SeenQuery struct {
	Path   string
	Sample func(id sut.TxID) bool
	Read   func(answer []byte, n int) []time.Time
}

// LedgerSeen reads the /seen query's answer: one big-endian Unix
// nanosecond count per hash.
func LedgerSeen(answer []byte, n int) []time.Time {
	out := make([]time.Time, n)
	for i := 0; i < n && 8*i+8 <= len(answer); i++ {
		if ns := int64(binary.BigEndian.Uint64(answer[8*i:])); ns > 0 {
			out[i] = time.Unix(0, ns)
		}
	}
	return out
}

// gossipTimeout bounds one node's /seen answer: a node that does not
// answer in time (paused, overloaded) is left out for skipFor, so the
// confirmer never waits on it block after block.
const (
	gossipTimeout = 100 * time.Millisecond
	skipFor       = 10 * time.Second
)

// gossiped sets, for each sampled transaction of blk, when a second node's
// mempool held it: the second earliest first sighting over all endpoints
// (the earliest is the node it was sent to, or the first it reached).
func (c *confirmer) gossiped(blk *sut.Block) {
	if c.logs != nil {
		for i := range blk.Txs {
			if at := c.logs.Take(blk.Txs[i].ID); !at.IsZero() {
				blk.Txs[i].Gossiped = at
			}
		}
		return
	}
	q := c.t.o.Seen
	if q == nil || len(c.t.clients) < 2 {
		return
	}
	var idx []int
	var data []byte
	for i := range blk.Txs {
		if q.Sample(blk.Txs[i].ID) {
			idx = append(idx, i)
			data = append(data, blk.Txs[i].ID[:]...)
		}
	}
	if len(idx) == 0 {
		return
	}
	if c.skip == nil {
		c.skip = make([]time.Time, len(c.t.clients))
	}
	seen := make([][]time.Time, len(c.t.clients))
	var wg sync.WaitGroup
	now := time.Now()
	for k, cl := range c.t.clients {
		if now.Before(c.skip[k]) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), gossipTimeout)
			defer cancel()
			v, err := cl.ABCIQuery(ctx, q.Path, data)
			if err != nil {
				c.skip[k] = time.Now().Add(skipFor)
				return
			}
			seen[k] = q.Read(v, len(idx))
		}()
	}
	wg.Wait()
	times := make([]time.Time, len(seen))
	for j, i := range idx {
		for k, s := range seen {
			times[k] = time.Time{}
			if s != nil {
				times[k] = s[j]
			}
		}
		if at := secondSighting(times); !at.IsZero() {
			blk.Txs[i].Gossiped = at
		}
	}
}

// secondSighting is the second earliest of the nodes' first sightings
// (zero: not seen there), or zero when fewer than two saw it.
func secondSighting(times []time.Time) time.Time {
	var first, second time.Time
	for _, t := range times {
		switch {
		case t.IsZero():
		case first.IsZero() || t.Before(first):
			first, second = t, first
		case second.IsZero() || t.Before(second):
			second = t
		}
	}
	return second
}
