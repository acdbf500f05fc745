package workload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// chainCodec is a codec over an in-memory "chain" of account sequences.
type chainCodec struct {
	mu       sync.Mutex
	accounts int
	seq      map[int]uint64 // the chain's next sequence per account
	queries  int
}

func (c *chainCodec) Accounts() int { return c.accounts }
func (c *chainCodec) TxSize() int   { return 32 }
func (c *chainCodec) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	for _, v := range []uint64{uint64(from), uint64(to), amount, nonce} {
		dst = binary.BigEndian.AppendUint64(dst, v)
	}
	return dst
}
func (c *chainCodec) ID(tx []byte) sut.TxID { return sha256.Sum256(tx) }
func (c *chainCodec) Nonce(_ context.Context, from int) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries++
	return c.seq[from], nil
}
func (c *chainCodec) Mismatch(r sut.Receipt) (bool, uint64, bool) {
	if r.Reason != "sequence_mismatch" {
		return false, 0, false
	}
	i := strings.LastIndex(r.Detail, "expected ")
	if i < 0 {
		return true, 0, false
	}
	e, err := strconv.ParseUint(r.Detail[i+9:], 10, 64)
	return true, e, err == nil
}

func nonceOf(tx sut.Tx) uint64 { return binary.BigEndian.Uint64(tx.Bytes[24:]) }

func mismatch(expected uint64) sut.Receipt {
	return sut.Receipt{Status: sut.Rejected, Reason: "sequence_mismatch", Detail: fmt.Sprintf("account sequence mismatch, expected %d", expected)}
}

func newPayments(t *testing.T, c *chainCodec, presigned bool) (*Payments, Builder) {
	t.Helper()
	p, err := NewPayments(context.Background(), PaymentsConfig{Senders: 2, Window: 100, Amount: Amount{Min: 1, Max: 1},
		SenderChoice: Choice{Dist: "uniform"}, RecipientChoice: Choice{Dist: "uniform"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	if presigned {
		if _, err := p.Presign(context.Background(), 40, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	return p, p.NewBuilder(1)
}

// send builds sender 0's next payment and answers it with r, as the
// dispatcher does: a presigned payment is stable (held as a mark into the
// queue), one signed live is in the builder's buffer, overwritten by the
// next (held as a copy).
func send(t *testing.T, b Builder, r sut.Receipt) (Built, Recovery) {
	t.Helper()
	x, err := b.Next(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc := b.Answer(context.Background(), 0, x.Tx, x.Stable, x.Nonce, r, true)
	x.Tx.Bytes = append([]byte(nil), x.Tx.Bytes...)
	return x, rc
}

func TestChainExpectsLowerResubmitsOriginals(t *testing.T) {
	for _, presigned := range []bool{false, true} {
		c := &chainCodec{accounts: 10, seq: map[int]uint64{0: 5}}
		_, b := newPayments(t, c, presigned)
		t0, _ := send(t, b, sut.Receipt{Status: sut.Pending})
		t1, _ := send(t, b, sut.Receipt{Status: sut.Pending})
		// 5 and 6 were dropped from the mempool; 7 is refused: expected 5.
		t2, rc := send(t, b, mismatch(5))
		if rc.Class != "chain_lower" || rc.Resigned || len(rc.Resubmit) != 2 {
			t.Fatalf("presigned=%v: recovery %+v", presigned, rc)
		}
		if rc.Resubmit[0].ID != t0.Tx.ID || rc.Resubmit[1].ID != t1.Tx.ID || rc.Tx.ID != t2.Tx.ID || rc.Nonce != 7 ||
			!bytes.Equal(rc.Resubmit[0].Bytes, t0.Tx.Bytes) || !bytes.Equal(rc.Resubmit[1].Bytes, t1.Tx.Bytes) || t0.Stable != presigned {
			t.Errorf("presigned=%v: not the original bytes of 5, 6, then 7", presigned)
		}
		if next, _ := b.Next(context.Background(), 0, 0); next.Nonce != 8 {
			t.Errorf("presigned=%v: next nonce %d, want 8", presigned, next.Nonce)
		}
	}
}

// A node that has not caught up (a restarted validator) expects a sequence
// already seen committed: its refusal stands; the lane is not rewound to
// send committed payments again, and a resync through it is not trusted.
func TestStaleNodeDoesNotRewind(t *testing.T) {
	for _, presigned := range []bool{false, true} {
		c := &chainCodec{accounts: 10, seq: map[int]uint64{0: 0}}
		p, b := newPayments(t, c, presigned)
		for i := 0; i < 5; i++ {
			x, _ := send(t, b, sut.Receipt{Status: sut.Pending})
			p.Resolved(0, x.Nonce, Committed, "")
		}
		x, rc := send(t, b, mismatch(2)) // 0..4 are in blocks; this node is at 2
		if x.Nonce != 5 || rc.Class != "" || rc.Resigned || len(rc.Resubmit) != 0 {
			t.Fatalf("presigned=%v: built %d, recovery %+v", presigned, x.Nonce, rc)
		}
		if next, _ := b.Next(context.Background(), 0, 0); next.Nonce != 5 {
			t.Errorf("presigned=%v: next nonce %d, want 5 (the refused one, free again)", presigned, next.Nonce)
		}
		c.seq[0] = 1 // a resync asks the stale node
		p.Resolved(0, 99, Expired, "")
		if next, _ := b.Next(context.Background(), 0, 0); next.Nonce < 5 {
			t.Errorf("presigned=%v: a stale resync rewound the lane to %d", presigned, next.Nonce)
		}
	}
}

func TestChainExpectsHigherResigns(t *testing.T) {
	for _, presigned := range []bool{false, true} {
		c := &chainCodec{accounts: 10, seq: map[int]uint64{0: 3}}
		_, b := newPayments(t, c, presigned)
		x, rc := send(t, b, mismatch(9)) // sequences 3..8 were used elsewhere
		if x.Nonce != 3 || rc.Class != "chain_higher" || !rc.Resigned || rc.Nonce != 9 || nonceOf(rc.Tx) != 9 {
			t.Fatalf("presigned=%v: built %d, recovery %+v", presigned, x.Nonce, rc)
		}
		if next, _ := b.Next(context.Background(), 0, 0); next.Nonce != 10 || nonceOf(next.Tx) != 10 {
			t.Errorf("presigned=%v: next nonce %d, want 10", presigned, next.Nonce)
		}
	}
}

func TestUnknownExpectedQueriesTheChain(t *testing.T) {
	c := &chainCodec{accounts: 10, seq: map[int]uint64{0: 0}}
	_, b := newPayments(t, c, false)
	c.seq[0] = 4
	q := c.queries
	_, rc := send(t, b, sut.Receipt{Status: sut.Rejected, Reason: "sequence_mismatch", Detail: "wrong sequence"})
	if c.queries != q+1 || !rc.Resynced || rc.Class != "chain_higher" || rc.Nonce != 4 {
		t.Fatalf("recovery %+v after %d queries", rc, c.queries-q)
	}
}

func TestFinalRejectionFreesTheSequence(t *testing.T) {
	for _, presigned := range []bool{false, true} {
		c := &chainCodec{accounts: 10, seq: map[int]uint64{0: 0}}
		_, b := newPayments(t, c, presigned)
		send(t, b, sut.Receipt{Status: sut.Pending})
		x, rc := send(t, b, sut.Receipt{Status: sut.Rejected, Reason: "mempool_full"})
		if rc.Class != "" || x.Nonce != 1 {
			t.Fatalf("recovery %+v", rc)
		}
		next, _ := b.Next(context.Background(), 0, 0)
		if next.Nonce != 1 {
			t.Errorf("presigned=%v: after a refused payment the next takes nonce %d, want 1 again", presigned, next.Nonce)
		}
		if presigned && next.Tx.ID != x.Tx.ID {
			t.Errorf("presigned: the refused payment's presigned bytes are not reused")
		}
		// Without recovery, a mismatch is final too.
		_, rc = send(t, b, sut.Receipt{Status: sut.Pending})
		x, _ = b.Next(context.Background(), 0, 0)
		if rc := b.Answer(context.Background(), 0, x.Tx, x.Stable, x.Nonce, mismatch(0), false); rc.Class != "" {
			t.Errorf("recover=false still recovers: %+v", rc)
		}
	}
}

func TestExpiryResyncs(t *testing.T) {
	c := &chainCodec{accounts: 10, seq: map[int]uint64{0: 0}}
	p, b := newPayments(t, c, false)
	t0, _ := send(t, b, sut.Receipt{Status: sut.Pending})
	t1, _ := send(t, b, sut.Receipt{Status: sut.Pending})
	// 0 and 1 are still held; the chain (its committed state) waits for 0:
	// they may be in a mempool, so nothing is resent and signing goes on.
	p.Resolved(0, 99, Expired, "") // some older payment expired: resync
	x, err := b.Next(context.Background(), 0, 0)
	if err != nil || !x.Resynced || x.Nonce != 2 {
		t.Fatalf("after an expiry: %+v, %v", x, err)
	}
	_, _ = t0, t1
	// Now 0 and 1 expired too: the chain still waits for 0, which we no
	// longer hold, so signing goes back to it.
	p.Resolved(0, 0, Expired, "")
	p.Resolved(0, 1, Expired, "")
	if x, _ = b.Next(context.Background(), 0, 0); x.Nonce != 0 {
		t.Fatalf("after the held ones expired: nonce %d", x.Nonce)
	}
}

func TestPresignStopsOnCancel(t *testing.T) {
	c := &chainCodec{accounts: 10, seq: map[int]uint64{}}
	p, err := NewPayments(context.Background(), PaymentsConfig{Senders: 2, Window: 1, Amount: Amount{Min: 1, Max: 1},
		SenderChoice: Choice{Dist: "uniform"}, RecipientChoice: Choice{Dist: "uniform"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := p.Presign(ctx, 50_000_000, 1, nil); err == nil || n != 0 {
		t.Fatalf("presign of 50M payments after cancel: %v after %d signed, expected the context's error and none", err, n)
	}
}

// With every window full, Reserve finds no room without scanning every
// sender again (it remembers the full scan until a release); a release
// anywhere makes room found at once.
func TestReserveWhenEveryWindowIsFull(t *testing.T) {
	p, err := NewPayments(context.Background(), PaymentsConfig{Senders: 50, Window: 2, Amount: Amount{Min: 1, Max: 1},
		SenderChoice: Choice{Dist: "uniform"}, RecipientChoice: Choice{Dist: "uniform"}}, &chainCodec{accounts: 100, seq: map[int]uint64{}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if p.Reserve() < 0 {
			t.Fatalf("reservation %d of 100 found no room", i)
		}
	}
	if s := p.Reserve(); s >= 0 || p.fullAt == 0 {
		t.Fatalf("a 101st reservation got sender %d (fullAt %d), want none and the full scan remembered", s, p.fullAt)
	}
	if s := p.Reserve(); s >= 0 || p.fullAt != p.releases.Load()+1 {
		t.Fatalf("again: sender %d, fullAt %d after %d releases", s, p.fullAt, p.releases.Load())
	}
	p.Release(37)
	if s := p.Reserve(); s != 37 {
		t.Fatalf("after releasing sender 37 Reserve gave %d", s)
	}
}

// durableCodec's payments may be carried between runs.
type durableCodec struct{ *chainCodec }

func (durableCodec) Durable() bool { return true }

// A run with a carry signs only what the run before left unused: a
// sender's payments from its sequence now on are taken as they were, the
// rest signed after them; a sender whose sequence passed them all, or a
// codec whose payments are not durable, signs everything.
func TestPresignCarriesWhatTheRunBeforeLeft(t *testing.T) {
	ctx := context.Background()
	chain := &chainCodec{accounts: 10, seq: map[int]uint64{}}
	cfg := PaymentsConfig{Senders: 3, Window: 10, Amount: Amount{Min: 1, Max: 1},
		SenderChoice: Choice{Dist: "uniform"}, RecipientChoice: Choice{Dist: "uniform"}}
	carry := NewCarry()
	presign := func(c Codec, seed int64) (*Payments, int) {
		t.Helper()
		p, err := NewPayments(ctx, cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		p.UseCarry(carry)
		n, err := p.Presign(ctx, 60, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p, n
	}
	// What a run did not sign of its plan came from the carry (the runner
	// reports it so).
	carried := func(p *Payments, signed int) int {
		plan, _ := p.PresignPlan(60)
		return plan - signed
	}
	first, n1 := presign(durableCodec{chain}, 1)
	if carried(first, n1) != 0 || n1 != len(queueOf(first, 0))+len(queueOf(first, 1))+len(queueOf(first, 2)) {
		t.Fatalf("first run: signed %d, carried %d, expected every payment signed", n1, carried(first, n1))
	}
	// The chain took 10 payments of account 0 and every one of account 2.
	chain.seq[0], chain.seq[2] = 10, uint64(len(queueOf(first, 2)))+5
	second, n2 := presign(durableCodec{chain}, 2)
	counts := second.presignCounts(60)
	want := min(len(queueOf(first, 0))-10, counts[0]) + min(len(queueOf(first, 1)), counts[1])
	if carried(second, n2) != want || n2 != counts[0]+counts[1]+counts[2]-want {
		t.Fatalf("second run: carried %d, signed %d; expected %d carried of %v", carried(second, n2), n2, want, counts)
	}
	for s := range second.lanes {
		q := queueOf(second, s)
		if len(q) < counts[s] {
			t.Fatalf("sender %d: %d presigned, expected at least %d", s, len(q), counts[s])
		}
		for k, tx := range q {
			if nonceOf(tx) != second.lanes[s].base+uint64(k) || tx.ID != chain.ID(tx.Bytes) {
				t.Fatalf("sender %d, payment %d: nonce %d, expected %d", s, k, nonceOf(tx), second.lanes[s].base+uint64(k))
			}
		}
	}
	if !bytes.Equal(queueOf(second, 0)[0].Bytes, queueOf(first, 0)[10].Bytes) {
		t.Fatal("account 0's payment of sequence 10 was signed again, expected the first run's")
	}
	if third, n3 := presign(chain, 3); carried(third, n3) != 0 || n3 != len(queueOf(third, 0))+len(queueOf(third, 1))+len(queueOf(third, 2)) {
		t.Fatalf("a codec whose payments are not durable: signed %d, carried %d, expected all signed", n3, carried(third, n3))
	}
}

// hexWire encodes as the EVM target does: it stands for any sut.Encoder.
type hexWire struct{}

func (hexWire) AppendWire(dst, tx []byte) []byte { return hex.AppendEncode(dst, tx) }

// A presigned payment encoded ahead carries, in Wire, exactly its bytes
// encoded; the plan counts that memory too; a payment built as it goes has
// none (its submitter encodes it).
func TestPresignEncodesAhead(t *testing.T) {
	ctx := context.Background()
	cfg := PaymentsConfig{Senders: 3, Window: 10, Amount: Amount{Min: 1, Max: 1},
		SenderChoice: Choice{Dist: "uniform"}, RecipientChoice: Choice{Dist: "uniform"}}
	p, err := NewPayments(ctx, cfg, &chainCodec{accounts: 10, seq: map[int]uint64{}})
	if err != nil {
		t.Fatal(err)
	}
	_, plain := p.PresignPlan(60)
	p.EncodeAhead(hexWire{})
	count, withWire := p.PresignPlan(60)
	if want := plain + float64(count*2*p.codec.TxSize()); withWire != want {
		t.Errorf("plan %v bytes with the wire form, expected %v", withWire, want)
	}
	if _, err := p.Presign(ctx, 60, 1, nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	for s := range p.lanes {
		for _, tx := range queueOf(p, s) {
			if got := hex.EncodeToString(tx.Bytes); string(tx.Wire) != got {
				t.Fatalf("payment %x: wire %q, expected %q", tx.ID[:4], tx.Wire, got)
			}
			n++
		}
	}
	if n != count {
		t.Fatalf("%d payments presigned, plan %d", n, count)
	}
	b := p.NewBuilder(1)
	x, err := b.Next(ctx, 0, 0)
	if err != nil || !x.Stable || x.Tx.Wire == nil {
		t.Fatalf("the first payment: stable %v, wire %q, err %v: expected the presigned one", x.Stable, x.Tx.Wire, err)
	}
	p.store = nil // as in live mode
	if x, _ := b.Next(ctx, 0, 0); x.Stable || x.Tx.Wire != nil {
		t.Fatalf("a payment signed as it goes: stable %v, wire %q", x.Stable, x.Tx.Wire)
	}
}

// queueOf is sender s's presigned payments by sequence from its base.
func queueOf(p *Payments, s int) []sut.Tx { return p.store.bySender(s) }

// Presigned payments lie in the order the dispatcher takes them: the i-th
// sender Reserve picks sends the i-th payment of the store (so the send
// path reads memory forwards), and presigning changes none of the picks.
func TestPresignedPaymentsLieInSendOrder(t *testing.T) {
	ctx := context.Background()
	cfg := PaymentsConfig{Senders: 50, Window: 1 << 20, Amount: Amount{Min: 1, Max: 9}, Seed: 7,
		SenderChoice: Choice{Dist: "zipf", S: 1.1}, RecipientChoice: Choice{Dist: "uniform"}}
	codec := &chainCodec{accounts: 60, seq: map[int]uint64{3: 5}}
	p, err := NewPayments(ctx, cfg, codec)
	if err != nil {
		t.Fatal(err)
	}
	live, err := NewPayments(ctx, cfg, codec)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	if _, err := p.Presign(ctx, n, 1, nil); err != nil {
		t.Fatal(err)
	}
	where := map[sut.TxID]int{}
	for i, tx := range p.store.txs {
		where[tx.ID] = i
	}
	b := p.NewBuilder(1)
	for i := 0; i < n; i++ {
		s, ls := p.Reserve(), live.Reserve()
		if s != ls {
			t.Fatalf("pick %d: sender %d, expected %d as without presigning", i, s, ls)
		}
		x, err := b.Next(ctx, s, uint64(i))
		if err != nil || !x.Stable {
			t.Fatalf("pick %d: stable %v, err %v: expected a presigned payment", i, x.Stable, err)
		}
		if nonceOf(x.Tx) != x.Nonce {
			t.Fatalf("pick %d: nonce %d in the bytes, expected %d", i, nonceOf(x.Tx), x.Nonce)
		}
		if at := where[x.Tx.ID]; at != i {
			t.Fatalf("pick %d (sender %d): payment %d of the store, expected %d", i, s, at, i)
		}
	}
}
