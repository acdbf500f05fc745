package evm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// scripted is a node whose chain the test rewrites.
type scripted struct {
	mu     sync.Mutex
	blocks []scriptedBlock // index = height
}

type scriptedBlock struct {
	hash, parent string
	txs          []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req struct {
		Method string `json:"method"`
		Params []any  `json:"params"`
	}
	json.Unmarshal(b, &req)
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := func(v any) {
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": v})
		w.Write(out)
	}
	height := func() int {
		h, _ := strconv.ParseUint(strings.TrimPrefix(req.Params[0].(string), "0x"), 16, 64)
		return int(h)
	}
	switch req.Method {
	case "eth_blockNumber":
		reply(fmt.Sprintf("0x%x", len(s.blocks)-1))
	case "eth_getBlockByNumber":
		h := height()
		if h >= len(s.blocks) {
			reply(nil)
			return
		}
		bl := s.blocks[h]
		reply(map[string]any{"number": fmt.Sprintf("0x%x", h), "hash": bl.hash, "parentHash": bl.parent, "timestamp": "0x1", "size": "0x100", "gasUsed": "0x0", "transactions": bl.txs})
	case "eth_getBlockReceipts":
		bl := s.blocks[height()]
		var rs []map[string]any
		for _, tx := range bl.txs {
			rs = append(rs, map[string]any{"transactionHash": tx, "blockHash": bl.hash, "status": "0x1"})
		}
		reply(rs)
	}
}

func (s *scripted) extend(hash string, txs ...string) {
	parent := ""
	if len(s.blocks) > 0 {
		parent = s.blocks[len(s.blocks)-1].hash
	}
	s.blocks = append(s.blocks, scriptedBlock{hash: hash, parent: parent, txs: txs})
}

type recorded struct {
	mu     sync.Mutex
	blocks []string
	final  int64
	reorgs []int64
}

func (r *recorded) Block(b *sut.Block) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocks = append(r.blocks, fmt.Sprintf("%d:%d", b.Height, len(b.Txs)))
}
func (r *recorded) Final(upTo int64, _ time.Time) { r.mu.Lock(); r.final = upTo; r.mu.Unlock() }
func (r *recorded) Reorg(from int64, _ time.Time) {
	r.mu.Lock()
	r.reorgs = append(r.reorgs, from)
	r.mu.Unlock()
}
func (r *recorded) Resolved(sut.TxID, bool, string, time.Time) {}

func tx(n int) string { return fmt.Sprintf("0x%064x", n) }

// A block replaced within the confirmation depth is reported as a reorg
// from the fork point, the new blocks are read, and finality follows the
// head at depth k.
func TestConfirmerFollowsReorgs(t *testing.T) {
	s := &scripted{}
	s.extend("0xg")
	s.extend("0xa1", tx(1))
	s.extend("0xa2", tx(2))
	s.extend("0xa3", tx(3))
	srv := httptest.NewServer(s)
	defer srv.Close()
	tg, _ := New(Options{Endpoints: []string{srv.URL}, Depth: 2})
	ev := &recorded{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Confirmer().Run(ctx, 1, ev) }()
	wait := func(f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			ev.mu.Lock()
			ok := f()
			ev.mu.Unlock()
			if ok {
				return
			}
		}
		t.Fatalf("blocks %v, final %d, reorgs %v", ev.blocks, ev.final, ev.reorgs)
	}
	wait(func() bool { return len(ev.blocks) == 3 && ev.final == 1 })
	// Blocks 2 and 3 are replaced by a fork of 2', 3', 4' (tx 2 moved to 3').
	s.mu.Lock()
	s.blocks = s.blocks[:2]
	s.extend("0xb2")
	s.extend("0xb3", tx(2))
	s.extend("0xb4", tx(4))
	s.mu.Unlock()
	wait(func() bool { return len(ev.reorgs) == 1 && len(ev.blocks) == 6 })
	if ev.reorgs[0] != 2 {
		t.Errorf("reorg reported from %d, want 2", ev.reorgs[0])
	}
	if got := strings.Join(ev.blocks, " "); got != "1:1 2:1 3:1 2:0 3:1 4:1" {
		t.Errorf("blocks %s", got)
	}
	wait(func() bool { return ev.final == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
