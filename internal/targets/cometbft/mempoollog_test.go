package cometbft

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// A mempool "Receive" line as tpsd (an SDK daemon, coloured logfmt) wrote
// it gives the gossiped transaction's bytes: their sha256 is the hash the
// chain's block holds.
func TestGossipedTxsFromAnSDKLine(t *testing.T) {
	line, err := os.ReadFile(filepath.Join("testdata", "sdk-receive.log"))
	if err != nil {
		t.Fatal(err)
	}
	txs := GossipedTxs(bytes.TrimSpace(line))
	if len(txs) != 1 {
		t.Fatalf("%d transactions read, want 1", len(txs))
	}
	sum := sha256.Sum256(txs[0])
	if got := hex.EncodeToString(sum[:]); got != wantReceived {
		t.Errorf("hash %s, want %s (in block %d)", got, wantReceived, wantHeight)
	}
	// The same message as JSON and as plain logfmt, two transactions.
	msg := `txs:"a\001b" txs:"\\\"c"`
	for _, l := range []string{
		`{"level":"debug","module":"mempool","chId":48,"msg":` + strconv.Quote(msg) + `,"message":"Receive"}`,
		`1:18AM DBG Receive chId=48 module=mempool msg=` + strconv.Quote(msg) + ` src=Peer{x}`,
	} {
		got := GossipedTxs([]byte(l))
		if len(got) != 2 || string(got[0]) != "a\x01b" || string(got[1]) != `\"c` {
			t.Errorf("%s: read %q", l, got)
		}
	}
	for _, l := range []string{"", "Receive", "Receive txs:", `DBG Receive msg="txs:\"unterminated`, "added good transaction tx=ABCD"} {
		if got := GossipedTxs([]byte(l)); len(got) != 0 {
			t.Errorf("%q: read %q", l, got)
		}
	}
}

// Lines written to a followed log after it is opened are timed; the
// earliest receipt over the nodes wins, and a taken one is forgotten.
func TestSightingsFollowLogs(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")}
	for _, p := range paths {
		if err := os.WriteFile(p, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := (&MempoolLogs{Paths: paths, Sample: func(sut.TxID) bool { return true }}).Follow(ctx)
	time.Sleep(3 * followEvery)
	line := func(tx string) []byte {
		return []byte("DBG Receive chId=48 module=mempool msg=" + strconv.Quote("txs:"+strconv.Quote(tx)) + "\n")
	}
	appendTo := func(p string, b []byte) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		f.Close()
	}
	start := time.Now()
	appendTo(paths[0], line("one"))
	time.Sleep(5 * followEvery)
	appendTo(paths[1], line("one"))
	appendTo(paths[1], append(line("two")[:20], line("two")[20:]...))
	id := sut.TxID(sha256.Sum256([]byte("one")))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && s.Take(sut.TxID(sha256.Sum256([]byte("two")))).IsZero() {
		time.Sleep(followEvery)
	}
	at := s.Take(id)
	if at.IsZero() || at.Before(start) || at.After(start.Add(4*followEvery)) {
		t.Errorf("first receipt at %v, written at %v", at, start)
	}
	if again := s.Take(id); !again.IsZero() {
		t.Errorf("taken twice: %v", again)
	}
}

// FuzzGossipedTxs: any line, never a panic.
func FuzzGossipedTxs(f *testing.F) {
	f.Add([]byte(`DBG Receive chId=48 module=mempool msg="txs:\"a\\001\""`))
	f.Add([]byte("Receive txs: msg=\x1b[36m"))
	f.Fuzz(func(t *testing.T, line []byte) { GossipedTxs(line) })
}

const (
	// Read by hand from the network that wrote the line: /block?height=4.
	wantReceived = "f10c697eb241c1cd56074355f50e4443b05e7d0eec10e0e79e0309e48740274f"
	wantHeight   = 4
)
