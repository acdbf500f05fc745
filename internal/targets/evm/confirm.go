package evm

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/jsonrpc"
)

// confirmer follows the chain's head: each new block's header and receipts
// (eth_getBlockReceipts), status 1 committed and 0 failed (reverted). With
// depth k, a block is final when the head is k blocks above it; a block
// within that depth that is replaced (a reorg) puts what it included back
// to pending.
type confirmer struct {
	t      *Target
	blk    sut.Block
	buf    bytes.Buffer     // the last answer read
	hashes map[int64]string // recent blocks' hashes, to see reorgs
	gossip *cometbft.Sightings
	// reasons are the revert reasons named so far (at most maxReasons
	// apart: a reason that carries values would make a key per payment).
	reasons map[string]bool
}

// maxReasons bounds the distinct revert reasons kept apart, and
// maxReasonReads the reverts of one block whose reasons are read (two
// calls each); past them a revert is counted as "reverted".
const (
	maxReasons     = 16
	maxReasonReads = 50
)

// Confirmer follows heads and receipts.
func (t *Target) Confirmer() sut.Confirmer {
	return &confirmer{t: t, hashes: map[int64]string{}}
}

// Watch is a no-op: every block's receipts are read.
func (c *confirmer) Watch(sut.TxID) {}

// Run reports blocks from height from on until ctx ends; it returns an
// error when no endpoint has answered for 15 s.
func (c *confirmer) Run(ctx context.Context, from int64, ev sut.Events) error {
	next := from
	if g := c.t.o.Gossip; g != nil && len(g.Paths) >= 2 && c.gossip == nil {
		c.gossip = g.Follow(ctx)
	}
	heads := make(chan struct{}, 1)
	if len(c.t.o.WS) > 0 {
		go c.subscribe(ctx, heads)
	}
	var failingSince time.Time
	cur := 0
	poll := 250 * time.Millisecond
	if len(c.t.o.WS) == 0 {
		poll = 100 * time.Millisecond
	}
	for ctx.Err() == nil {
		i, _ := c.t.pool.Pick(cur)
		err := c.catchUp(ctx, c.t.clients[i], &next, ev)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failingSince = time.Time{}
		default:
			cur = i + 1
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > 15*time.Second {
				return fmt.Errorf("no endpoint answered for 15s: %w", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-heads:
		case <-time.After(poll):
		}
	}
	return nil
}

// subscribe signals every new head from a newHeads subscription, moving to
// the next endpoint when one breaks; polling goes on regardless.
func (c *confirmer) subscribe(ctx context.Context, heads chan<- struct{}) {
	for k := 0; ctx.Err() == nil; k++ {
		url := c.t.o.WS[k%len(c.t.o.WS)]
		conn, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { conn.Close() })
			err = conn.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`))
			for err == nil {
				_, _, err = conn.ReadMessage()
				select {
				case heads <- struct{}{}:
				default:
				}
			}
			stop()
			conn.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// catchUp reads the blocks from next to the head, and the finality the new
// head gives.
func (c *confirmer) catchUp(ctx context.Context, cl *Client, next *int64, ev sut.Events) error {
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		return err
	}
	for *next <= head {
		h, err := cl.Block(ctx, *next)
		if err != nil {
			if errors.Is(err, errNull) {
				return nil // not there yet on this node
			}
			return err
		}
		if prev, ok := c.hashes[*next-1]; ok && !strings.EqualFold(prev, h.ParentHash) {
			// Block next-1 was replaced: walk back to the fork point.
			from := *next - 1
			for ; from > 0; from-- {
				known, ok := c.hashes[from-1]
				if !ok {
					break
				}
				b, err := cl.Block(ctx, from)
				if err != nil {
					return err
				}
				if strings.EqualFold(known, b.ParentHash) {
					break
				}
			}
			for k := range c.hashes {
				if k >= from {
					delete(c.hashes, k)
				}
			}
			ev.Reorg(from, time.Now())
			*next = from
			continue
		}
		seen := time.Now()
		same, err := c.receipts(ctx, cl, *next, h.Hash)
		if err != nil {
			return err
		}
		if !same {
			return nil // the block changed between the two reads: read it again
		}
		c.deliver(&h, seen, ev)
		c.hashes[*next] = h.Hash
		delete(c.hashes, *next-int64(c.t.o.Depth)-64)
		*next++
	}
	if k := int64(c.t.o.Depth); k > 0 && head-k >= 0 {
		ev.Final(head-k, time.Now())
	}
	return nil
}

// receipts reads block n's receipts (eth_getBlockReceipts) into c.blk.Txs:
// each one's transaction hash and status. They are walked by hand: a
// receipt's logs bloom and logs are most of its bytes and never read
// (encoding/json spent 45% of tpslab's CPU on them at 500 payments a
// second). same is false when a receipt names another block than hash.
func (c *confirmer) receipts(ctx context.Context, cl *Client, n int64, hash string) (same bool, err error) {
	c.blk.Txs = c.blk.Txs[:0]
	r, err := cl.callRaw(ctx, &c.buf, "eth_getBlockReceipts", hexNum(uint64(n)))
	if errors.Is(err, errNull) {
		return true, nil // an empty block, as some nodes write it
	}
	if err != nil {
		return false, err
	}
	same = true
	hb := []byte(hash)
	var bad error
	err = jsonrpc.EachElement(r, func(v []byte) {
		tr := sut.TxResult{}
		var blockHash []byte
		okTx, okStatus := false, false
		jsonrpc.EachMember(v, func(name, v []byte) bool {
			switch string(name) {
			case "transactionHash":
				okTx = len(v) >= 68 && v[0] == '"' && v[67] == '"' && hexInto(tr.ID[:], v[1:67])
			case "blockHash":
				if len(v) > 0 && v[0] == '"' {
					if e := jsonrpc.StringEnd(v[1:]); e >= 0 {
						blockHash = v[1 : 1+e]
					}
				}
			case "gasUsed": // "0x8c5b": the block gas it took (block_gas's use)
				if len(v) > 3 && v[0] == '"' && v[1] == '0' && v[2] == 'x' { // v runs on past the value
					if e := jsonrpc.StringEnd(v[1:]); e > 2 {
						tr.Gas, _ = strconv.ParseUint(string(v[3:1+e]), 16, 64)
					}
				}
			case "status": // "0x1" succeeded, "0x0" reverted
				okStatus = bytes.HasPrefix(v, []byte(`"0x1"`)) || bytes.HasPrefix(v, []byte(`"0x0"`))
				tr.OK = okStatus && v[3] == '1'
			}
			return true
		})
		if !okTx || !okStatus {
			bad = fmt.Errorf("block %d: a receipt without a transaction hash or status: %q", n, clip(string(v), 200))
		}
		if !bytes.EqualFold(blockHash, hb) {
			same = false
		}
		if !tr.OK {
			tr.Reason, tr.Detail = "reverted", "receipt status 0"
		}
		c.blk.Txs = append(c.blk.Txs, tr)
	})
	if err == nil {
		err = bad
	}
	reads := 0
	for i := range c.blk.Txs {
		if tr := &c.blk.Txs[i]; !tr.OK && err == nil && reads < maxReasonReads {
			reads++
			tr.Reason = c.revertReason(ctx, cl, tr.ID, n)
		}
	}
	return same, err
}

// revertReason replays a reverted transaction on the state before its
// block (eth_call) and names the contract's reason: "reverted: NFT: token
// already minted"; "reverted" when none is given or kept.
func (c *confirmer) revertReason(ctx context.Context, cl *Client, id sut.TxID, n int64) string {
	var tx struct {
		From  string `json:"from"`
		To    string `json:"to"`
		Input string `json:"input"`
		Value string `json:"value"`
		Gas   string `json:"gas"`
	}
	if err := cl.Call(ctx, &tx, "eth_getTransactionByHash", "0x"+hex.EncodeToString(id[:])); err != nil || tx.To == "" {
		return "reverted"
	}
	err := cl.Call(ctx, nil, "eth_call", map[string]string{"from": tx.From, "to": tx.To, "data": tx.Input, "value": tx.Value, "gas": tx.Gas}, hexNum(uint64(n-1)))
	if err == nil {
		return "reverted" // the replay succeeds: the block's state before it differed
	}
	why, ok := strings.CutPrefix(revertError(err).Error(), "reverted: ")
	if !ok {
		return "reverted"
	}
	r := "reverted: " + clip(why, 80)
	if c.reasons == nil {
		c.reasons = map[string]bool{}
	}
	if !c.reasons[r] && len(c.reasons) >= maxReasons {
		return "reverted"
	}
	c.reasons[r] = true
	return r
}

// hexInto decodes "0x" and hex digits into dst, which they must fill.
func hexInto(dst, v []byte) bool {
	if len(v) != 2+2*len(dst) || v[0] != '0' || (v[1] != 'x' && v[1] != 'X') {
		return false
	}
	n, err := hex.Decode(dst, v[2:])
	return err == nil && n == len(dst)
}

func (c *confirmer) deliver(h *Header, seen time.Time, ev sut.Events) {
	b := &c.blk
	b.Height, b.Time, b.Seen, b.Bytes, b.Final = int64(h.Number), time.Unix(int64(h.Timestamp), 0), seen, int(h.Size), c.t.o.Depth == 0
	b.Hash = h.Hash // the evidence file's, for tpslab verify
	if c.gossip != nil {
		for i := range b.Txs {
			b.Txs[i].Gossiped = c.gossip.Take(b.Txs[i].ID)
		}
	}
	ev.Block(b)
}
