package cometbft

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tpslab/tpslab/internal/sut"
)

// confirmer follows committed blocks: NewBlock events over a WebSocket on
// one live endpoint, gaps filled by RPC; when the subscription breaks it
// moves to the next live endpoint, and polls when none takes one.
type confirmer struct {
	t   *Target
	blk sut.Block // reused: Events.Block must not keep it
	// proposed holds when each height's proposal was seen complete, until
	// its block comes (the last round's wins).
	proposed map[int64]time.Time
	skip     []time.Time // until when a node is left out of gossip queries
	logs     *Sightings  // the nodes' mempool lines, when Options.MempoolLogs
}

// Confirmer follows blocks; every block is final (BFT).
func (t *Target) Confirmer() sut.Confirmer { return &confirmer{t: t} }

// Watch is a no-op: every block is read.
func (c *confirmer) Watch(sut.TxID) {}

// Run reports every block from height from on, in order, until ctx ends. It
// returns an error when no endpoint has answered for the give-up time.
func (c *confirmer) Run(ctx context.Context, from int64, ev sut.Events) error {
	next := from
	t := c.t
	if m := t.o.MempoolLogs; m != nil && c.logs == nil && len(m.Paths) >= 2 {
		c.logs = m.Follow(ctx)
	}
	failingSince := time.Time{}
	cur := 0
	wsFailures := 0
	for ctx.Err() == nil {
		i, _ := t.pool.Pick(cur)
		if !t.o.Poll && wsFailures < len(t.clients) {
			delivered, err := c.follow(ctx, i, &next, ev)
			if ctx.Err() != nil {
				return nil
			}
			if delivered {
				wsFailures, failingSince = 0, time.Time{}
			} else {
				wsFailures++
			}
			if wsFailures >= len(t.clients) {
				t.note("block subscription failed on every endpoint (%v); polling blocks instead", err)
			} else {
				t.note("block subscription on %s ended (%v); following blocks on the next live endpoint", t.clients[i].URL, err)
			}
			cur = i + 1
			continue
		}
		err := c.poll(ctx, t.clients[i], &next, ev)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failingSince = time.Time{}
		default:
			cur = i + 1
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > t.o.GiveUp {
				return fmt.Errorf("no endpoint answered for %s: %w", t.o.GiveUp, err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// poll delivers every block up to the endpoint's latest height.
func (c *confirmer) poll(ctx context.Context, cl *Client, next *int64, ev sut.Events) error {
	h, err := cl.Height(ctx)
	if err != nil {
		return err
	}
	return c.catchUp(ctx, cl, next, h, ev)
}

// notExecuted says block_results has no results for a height yet: CometBFT
// stores a block (and reports its height) before it executes it.
func notExecuted(err error) bool {
	return err != nil && strings.Contains(err.Error(), "could not find results for height")
}

// catchUp delivers blocks next..upto by RPC; a block not executed yet ends
// it early, without error: it is read again on the next round.
func (c *confirmer) catchUp(ctx context.Context, cl *Client, next *int64, upto int64, ev sut.Events) error {
	for *next <= upto {
		b, err := cl.Block(ctx, *next)
		if err != nil {
			return err
		}
		seen := time.Now()
		res, err := cl.BlockResults(ctx, *next)
		if notExecuted(err) {
			return nil
		}
		if err != nil {
			return err
		}
		c.deliver(&b, res, seen, ev)
		setNext(next, *next+1)
	}
	return nil
}

// deliver turns a block and its results into a sut.Block for ev.
func (c *confirmer) deliver(b *RawBlock, res []ExecResult, seen time.Time, ev sut.Events) {
	blk := &c.blk
	blk.Height, blk.Time, blk.Seen, blk.Final, blk.Bytes, blk.Hash = int64(b.Header.Height), b.Header.Time, seen, true, 0, b.Header.DataHash
	blk.Proposed = c.proposed[blk.Height]
	for h := range c.proposed {
		if h <= blk.Height {
			delete(c.proposed, h)
		}
	}
	blk.Txs = blk.Txs[:0]
	for k, tx := range b.Data.Txs {
		r := sut.TxResult{ID: sha256.Sum256(tx), OK: true}
		if k < len(res) && res[k].Code != 0 {
			r.OK, r.Reason, r.Detail = false, c.t.o.Reason(res[k].Codespace, res[k].Code, res[k].Log), res[k].Log
		}
		if k < len(res) && res[k].GasUsed > 0 {
			r.Gas = uint64(res[k].GasUsed)
		}
		blk.Bytes += len(tx)
		blk.Txs = append(blk.Txs, r)
	}
	c.gossiped(blk)
	ev.Block(blk)
}

// staleAfter is how long a subscription may stay silent before tpslab asks
// the other endpoints whether the chain moved on without it (a paused node
// keeps its connection open and says nothing).
const staleAfter = 5 * time.Second

// follow consumes NewBlock events from endpoint i until the subscription
// breaks; delivered says it worked for a while.
func (c *confirmer) follow(ctx context.Context, i int, next *int64, ev sut.Events) (delivered bool, err error) {
	cl := c.t.clients[i]
	u, err := url.Parse(cl.URL)
	if err != nil {
		return false, err
	}
	u.Scheme = map[string]string{"https": "wss"}[u.Scheme]
	if u.Scheme == "" {
		u.Scheme = "ws"
	}
	u.Path = "/websocket"
	d := websocket.Dialer{HandshakeTimeout: 3 * time.Second}
	conn, _, err := d.DialContext(ctx, u.String(), nil)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadLimit(256 << 20)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":"tpslab","method":"subscribe","params":{"query":"tm.event='NewBlock'"}}`)); err != nil {
		return false, err
	}
	// When each block's proposal is complete: the stage between a payment
	// being acknowledged and its block committing (docs/metrics.md).
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":"tpslab-proposal","method":"subscribe","params":{"query":"tm.event='CompleteProposal'"}}`)); err != nil {
		return false, err
	}
	// Blocks committed since the run began, before the subscription.
	if h, err := cl.Height(ctx); err == nil {
		if err := c.catchUp(ctx, cl, next, h, ev); err != nil {
			return false, err
		}
	}
	// A watchdog closes a subscription that stays silent while the chain
	// moves on elsewhere (a gorilla connection cannot be read again after a
	// read deadline passes, so the read itself has none).
	var lastMsg atomic.Int64
	lastMsg.Store(time.Now().UnixNano())
	var stale atomic.Pointer[string]
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if time.Since(time.Unix(0, lastMsg.Load())) < staleAfter {
				continue
			}
			if ahead := c.othersAhead(ctx, i, atomicNext(next)); ahead != "" {
				stale.Store(&ahead)
				conn.Close()
				return
			}
		}
	}()
	var dec eventDecoder
	var buf bytes.Buffer
	for {
		msg, err := readMessage(conn, &buf)
		if err != nil {
			if ctx.Err() != nil {
				return delivered, nil
			}
			if ahead := stale.Load(); ahead != nil {
				return delivered, fmt.Errorf("no event for %s while %s", staleAfter, *ahead)
			}
			return delivered, err
		}
		lastMsg.Store(time.Now().UnixNano())
		seen := time.Now()
		if h, ok := completeProposal(msg); ok {
			if c.proposed == nil {
				c.proposed = map[int64]time.Time{}
			}
			c.proposed[h] = seen
			continue
		}
		b, results, err := dec.decode(msg)
		if err != nil {
			return delivered, err
		}
		if b == nil {
			continue // the subscription's confirmation
		}
		h := int64(b.Header.Height)
		if h < *next {
			continue
		}
		if err := c.catchUp(ctx, cl, next, h-1, ev); err != nil {
			return delivered, err
		}
		if *next < h {
			continue // an earlier block is not executed yet; its own event will come
		}
		c.deliver(b, results, seen, ev)
		setNext(next, h+1)
		delivered = true
	}
}

// readMessage reads the next message into buf, reused from message to
// message: ReadMessage allocates every block event anew, growing it from
// 512 bytes (the decoder keeps nothing of a message past its block).
func readMessage(conn *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	_, r, err := conn.NextReader()
	if err != nil {
		return nil, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(r)
	return buf.Bytes(), err
}

// next is written by the reading goroutine and read by the watchdog.
func atomicNext(p *int64) int64 { return atomic.LoadInt64(p) }
func setNext(p *int64, v int64) { atomic.StoreInt64(p, v) }

// othersAhead asks the other endpoints whether the chain has executed
// height next (their reported height is stored, and not always executed, so
// one more is needed); it names the first that has.
func (c *confirmer) othersAhead(ctx context.Context, i int, next int64) string {
	for k, cl := range c.t.clients {
		if k == i {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		h, err := cl.Height(cctx)
		cancel()
		if err == nil && h > next {
			return cl.URL + " is at height " + strconv.FormatInt(h, 10)
		}
	}
	return ""
}
