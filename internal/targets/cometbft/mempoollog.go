package cometbft

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// MempoolLogs say when a sampled transaction first reached a second
// node, from the nodes' own logs: CometBFT's mempool reactor writes
// "Receive … msg=txs:…" with the transaction's bytes for each one a peer
// gossips to it (the mempool module at debug level). CometBFT's RPC lists
// at most 100 mempool transactions with no arrival time, and an SDK daemon
// (gaiad, evmd) has no query for it, so a node's log is the one place it
// says when a transaction came. A line is timed when tpslab reads it,
// every followEvery: its write time, to within that. (The line "added good
// transaction" names the hash too, but an SDK daemon's logger writes its
// bytes as text and loses them.)
type MempoolLogs struct {
	Paths  []string // one log per node
	Sample func(sut.TxID) bool
	// IDs name a transaction by its bytes as the confirmer does (nil: its
	// sha256, CometBFT's hash); a Cosmos EVM node gossips Cosmos
	// transactions that wrap the Ethereum one the load sent.
	IDs func(tx []byte) []sut.TxID
}

// followEvery is how often a node's log is read for new lines.
const followEvery = 10 * time.Millisecond

// sightingsCap bounds the sightings kept of transactions never committed.
const sightingsCap = 200_000

// Sightings are the earliest gossip receipt of each sampled transaction,
// over every node.
type Sightings struct {
	mu   sync.Mutex
	seen map[sut.TxID]time.Time
}

// Follow reads every log from its end on, until ctx ends.
func (m *MempoolLogs) Follow(ctx context.Context) *Sightings {
	s := &Sightings{seen: map[sut.TxID]time.Time{}}
	ids := m.IDs
	if ids == nil {
		ids = func(tx []byte) []sut.TxID { return []sut.TxID{sha256.Sum256(tx)} }
	}
	for _, p := range m.Paths {
		go s.tail(ctx, p, func(tx []byte) {
			now := time.Now()
			for _, id := range ids(tx) {
				if m.Sample(id) {
					s.saw(id, now)
				}
			}
		})
	}
	return s
}

// tail follows one log; a log that cannot be opened (a node on another
// machine) is left out.
func (s *Sightings) tail(ctx context.Context, path string, got func(tx []byte)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return
	}
	buf := make([]byte, 0, 1<<16)
	chunk := make([]byte, 1<<16)
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		for {
			n, err := f.Read(chunk)
			buf = append(buf, chunk[:n]...)
			start := 0
			for {
				i := bytes.IndexByte(buf[start:], '\n')
				if i < 0 {
					break
				}
				for _, tx := range GossipedTxs(buf[start : start+i]) {
					got(tx)
				}
				start += i + 1
			}
			buf = append(buf[:0], buf[start:]...) // keep the unfinished line
			if len(buf) > 1<<20 {                 // a line this long is not CometBFT's
				buf = buf[:0]
			}
			if err != nil || n == 0 {
				if err != nil && !errors.Is(err, io.EOF) {
					return
				}
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Sightings) saw(id sut.TxID, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.seen[id]
	if ok && !at.Before(t) {
		return
	}
	if !ok && len(s.seen) >= sightingsCap { // forget what no block took in a minute
		for k, v := range s.seen {
			if at.Sub(v) > time.Minute {
				delete(s.seen, k)
			}
		}
		if len(s.seen) >= sightingsCap {
			return
		}
	}
	s.seen[id] = at
}

// Take returns when a transaction first reached a second node (zero: not
// seen), and forgets it.
func (s *Sightings) Take(id sut.TxID) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.seen[id]
	delete(s.seen, id)
	return t
}

var (
	receive = []byte("Receive")
	msgKeys = [][]byte{[]byte("msg="), []byte(`"msg":`)}
	txsKey  = []byte("txs:")
)

// GossipedTxs are the transactions of CometBFT's mempool line "Receive …
// msg=txs:\"…\"" (a Txs message in protobuf's text format, its bytes
// escaped as in a Go string), as an SDK daemon writes it: logfmt with or
// without terminal colours, or JSON. Written by hand: no library reads
// another program's log lines, and the escapes are Go's (strconv).
func GossipedTxs(line []byte) [][]byte {
	if !bytes.Contains(line, receive) || !bytes.Contains(line, txsKey) {
		return nil
	}
	var rest []byte
	for _, k := range msgKeys {
		if i := bytes.Index(line, k); i >= 0 {
			rest = line[i+len(k):]
			break
		}
	}
	for len(rest) > 0 && rest[0] == 0x1b { // colour codes: ESC [ … m
		m := bytes.IndexByte(rest, 'm')
		if m < 0 {
			return nil
		}
		rest = rest[m+1:]
	}
	q, err := strconv.QuotedPrefix(string(rest))
	if err != nil {
		return nil
	}
	msg, err := strconv.Unquote(q)
	if err != nil {
		return nil
	}
	var out [][]byte
	for {
		i := strings.Index(msg, "txs:")
		if i < 0 {
			return out
		}
		msg = strings.TrimLeft(msg[i+4:], " ")
		q, err := strconv.QuotedPrefix(msg)
		if err != nil {
			return out
		}
		tx, err := strconv.Unquote(q)
		if err != nil {
			return out
		}
		out = append(out, []byte(tx))
		msg = msg[len(q):]
	}
}
