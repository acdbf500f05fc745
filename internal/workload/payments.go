package workload

import (
	"context"
	"crypto/sha256"
	"fmt"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/fanout"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
)

// Payments is the signed transfer workload: each sender is a lane of
// sequences (nonces) that the chain must see in order.
type Payments struct {
	codec    Codec
	offset   int // sender s is account offset+s
	window   int32
	amount   Amount
	lanes    []lane
	inflight []atomic.Int32
	senders  Chooser // dispatcher only
	scan     int     // dispatcher only
	// releases counts Release calls; fullAt is releases+1 when the
	// dispatcher's last scan found every sender's window full (0: not
	// so). Until a sender is released no scan can find room, and a full
	// scan per attempt cost the dispatcher O(senders) every pause: 18% of
	// a core with 2000 senders against a system that commits nothing.
	releases atomic.Uint64
	fullAt   uint64 // dispatcher only
	recipCfg Choice
	store    *presigned // the payments signed ahead (nil: none)
	picks    []int32    // the dispatcher's sender picks, drawn ahead by Presign
	picked   int        // dispatcher only: the picks taken
	wallets  bool
	invalid  Invalid
	mix      []Mix
	mixSum   float64
	// trace, when replaying one that names payments (load.trace): its
	// rows, the mix index of each of its kinds, and, when its rows name
	// senders, each sender's rows in this generator's share (presigning).
	trace        *schedule.Trace
	traceKind    []int
	rowsOf       [][]uint64
	namedSenders bool
	carry        *Carry      // when set, payments an earlier run signed (UseCarry)
	wire         sut.Encoder // when set, Presign encodes each payment for it (EncodeAhead)
}

// Invalid asks for a share of deliberately invalid payments of the sorts
// given, drawn per payment (seeded), signed when sent (never presigned).
type Invalid struct {
	Share float64
	Sorts []string
}

// lane is one sender's sequence state. next is owned by the worker that
// owns the sender; held and resync are also touched when payments resolve.
type lane struct {
	base   uint64 // the sequence read at start: presigned index 0
	next   uint64 // the sequence of the sender's next new payment
	mu     sync.Mutex
	held   held // sent, not yet final: kept for resubmission
	resync atomic.Bool
	// floor is one past the highest sequence seen committed in a block: a
	// node that expects less has not caught up (a restarted validator), so
	// its idea of the sequence is stale and must not rewind the lane, which
	// would send payments already committed again.
	floor uint64
}

// PaymentsConfig is what NewPayments needs beyond the codec.
type PaymentsConfig struct {
	Senders         int
	Offset          int // first sending account
	Window          int
	Amount          Amount
	SenderChoice    Choice
	RecipientChoice Choice
	Seed            int64
	Invalid         Invalid
	Mix             []Mix
	// Trace is a replayed trace whose rows name kinds, accounts or
	// amounts; its arrivals k with k mod TraceSegs == TraceSeg are this
	// generator's (segments).
	Trace               *schedule.Trace
	TraceSeg, TraceSegs int
	// Wallets: a closed-model user pays from several senders (Wallets).
	Wallets bool
}

// paymentKinds are the kinds a mix or a trace may name (scenario's list).
var paymentKinds = []string{"multi_send", "native", "erc20", "contract_call", "deposit", "withdraw", "entry", "chain", "factoid"}

// kindsOf lists the kinds codec can sign: send, and those it says it can.
func kindsOf(codec Codec, offset int) string {
	out := []string{"send"}
	if ks, ok := codec.(KindSigner); ok {
		for _, k := range paymentKinds {
			if _, can := ks.SignKind(nil, k, offset, []int{0, 0}, 1, 0); can {
				out = append(out, k)
			}
		}
	}
	return strings.Join(out, ", ")
}

// NewPayments reads each sender's next sequence from the system, 16 at a time.
func NewPayments(ctx context.Context, c PaymentsConfig, codec Codec) (*Payments, error) {
	if c.Offset+c.Senders > codec.Accounts() {
		return nil, fmt.Errorf("workload.senders: accounts %d..%d, expected within the %d funded accounts", c.Offset, c.Offset+c.Senders-1, codec.Accounts())
	}
	p := &Payments{
		codec: codec, offset: c.Offset, window: int32(c.Window), amount: c.Amount, wallets: c.Wallets,
		lanes: make([]lane, c.Senders), inflight: make([]atomic.Int32, c.Senders), recipCfg: c.RecipientChoice,
	}
	p.senders = NewChooser(c.SenderChoice, c.Senders, rand.New(rand.NewSource(c.Seed)))
	if len(c.Mix) > 0 {
		ks, ok := codec.(KindSigner)
		for _, m := range c.Mix {
			if m.Kind == "send" {
				continue
			}
			if _, can := ks.SignKind(nil, m.Kind, c.Offset, []int{0, 0}, 1, 0); !ok || !can {
				// Bad input, found once the system is known: one line, exit 2.
				return nil, exitcode.BadInputf("workload.mix: %s, expected a kind this system's payments have (%s)", m.Kind, kindsOf(codec, c.Offset))
			}
		}
		p.mix = c.Mix
		for _, m := range c.Mix {
			p.mixSum += m.Weight
		}
	}
	if c.Trace != nil && c.Trace.Rows != nil {
		if err := p.useTrace(c, codec); err != nil {
			return nil, err
		}
	}
	if c.Invalid.Share > 0 {
		if _, ok := codec.(InvalidSigner); !ok {
			return nil, fmt.Errorf("workload.invalid: this kind's payments cannot be made invalid on purpose")
		}
		p.invalid = c.Invalid
		if len(p.invalid.Sorts) == 0 {
			p.invalid.Sorts = InvalidSorts
		}
	}
	var wg sync.WaitGroup
	var first atomic.Value
	sem := make(chan struct{}, 16)
	for i := range p.lanes {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := codec.Nonce(ctx, c.Offset+i)
			if err != nil {
				first.CompareAndSwap(nil, fmt.Errorf("read the sequence of account %d: %w", c.Offset+i, err))
				return
			}
			l := &p.lanes[i]
			l.base, l.next = n, n
		}(i)
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return nil, err
	}
	return p, ctx.Err()
}

// useTrace checks a trace's kinds against the system's and adds those the
// mix lacks (weight 0: only rows name them), with send first so rows that
// name no kind are sends; it lists each sender's rows for presigning.
func (p *Payments) useTrace(c PaymentsConfig, codec Codec) error {
	tr := c.Trace
	if len(tr.Kinds) > 0 && p.mix == nil {
		p.mix = []Mix{{Kind: "send", Weight: 1}}
		p.mixSum = 1
	}
	p.traceKind = make([]int, len(tr.Kinds)+1)
	for i, k := range tr.Kinds {
		at := -1
		for j, m := range p.mix {
			if m.Kind == k {
				at = j
			}
		}
		if at < 0 {
			ks, ok := codec.(KindSigner)
			if k != "send" {
				if _, can := ks.SignKind(nil, k, c.Offset, []int{0, 0}, 1, 0); !ok || !can {
					// Bad input, found once the system is known: one line, exit 2.
					return exitcode.BadInputf("load.trace: kind %s, expected a kind this system's payments have (%s)", k, kindsOf(codec, c.Offset))
				}
			}
			at = len(p.mix)
			p.mix = append(p.mix, Mix{Kind: k, Outputs: map[bool]int{true: 5}[k == "multi_send"]})
		}
		p.traceKind[i+1] = at
	}
	if len(p.mix) > 255 {
		return fmt.Errorf("load.trace: %d kinds, expected at most 255", len(p.mix))
	}
	p.trace = tr
	segs := uint64(max(c.TraceSegs, 1))
	p.rowsOf = make([][]uint64, len(p.lanes))
	for k := uint64(c.TraceSeg); k < uint64(len(tr.Rows)); k += segs {
		if s := p.TraceSender(k); s >= 0 {
			p.rowsOf[s] = append(p.rowsOf[s], k)
			p.namedSenders = true
		}
	}
	return nil
}

// Traced says whether the payments follow a trace's rows.
func (p *Payments) Traced() bool { return p.trace != nil }

// TraceSender is the sender of arrival k of the trace: the trace's account
// numbered a is sender a mod senders; -1 when the row names none.
func (p *Payments) TraceSender(k uint64) int {
	r, ok := p.trace.Row(k)
	if !ok || r.Sender < 0 {
		return -1
	}
	return int(r.Sender) % len(p.lanes)
}

// rowPayment is what a payment of row r is: its mix kind (-1: drawn), its
// first recipient (-1: drawn) and amount (0: drawn). A recipient the trace
// numbers a is sender a mod senders' account, so money flows between the
// trace's accounts as it did.
func (p *Payments) rowPayment(r schedule.Row) (kind, to int, amount uint64) {
	kind, to = -1, -1
	if r.Kind > 0 {
		kind = p.traceKind[r.Kind]
	}
	if r.Recipient >= 0 {
		to = p.offset + int(r.Recipient)%len(p.lanes)
	}
	return kind, to, r.Amount
}

// Senders is the number of sending accounts.
func (p *Payments) Senders() int { return len(p.lanes) }

// PresignPlan is how many transactions Presign(n) signs, and their bytes.
func (p *Payments) PresignPlan(n int) (count int, bytes float64) {
	for _, c := range p.presignCounts(n) {
		count += c
	}
	return count, float64(count) * float64(p.codec.TxSize()+p.wireSize()+sizeofTx+sizeofOrder)
}

// sizeofTx is a queued sut.Tx's own size: its id and two slice headers;
// sizeofOrder is a payment's share of the layout: its pick, its place in
// presigned.at, and its row of places while signing.
const (
	sizeofTx    = int(unsafe.Sizeof(sut.Tx{}))
	sizeofOrder = 4 + 4 + int(unsafe.Sizeof(place{}))
)

// EncodeAhead has Presign encode each payment for e as well (Tx.Wire).
func (p *Payments) EncodeAhead(e sut.Encoder) { p.wire = e }

// wireSize is the size of a payment's Wire (0 without EncodeAhead).
func (p *Payments) wireSize() int {
	if p.wire == nil {
		return 0
	}
	return len(p.wire.AppendWire(nil, make([]byte, p.codec.TxSize())))
}

// presignCounts spreads n payments over senders by their expected share of
// picks, with headroom.
func (p *Payments) presignCounts(n int) []int {
	counts := make([]int, len(p.lanes))
	if p.rowsOf != nil && p.namedSenders {
		// The trace names every sender: each signs its own rows, and a
		// little more for payments refused and sent again.
		for i, rs := range p.rowsOf {
			counts[i] = len(rs) + 2
		}
		return counts
	}
	sh := shares(p.senders, len(p.lanes))
	for i, s := range sh {
		exp := s * float64(n)
		counts[i] = int(math.Ceil(exp+4*math.Sqrt(exp))) + 2
	}
	return counts
}

// Presign signs n payments ahead of the load on all cores, from each
// sender's current sequence on, and returns how many it signed (with a
// carry, fewer: see UseCarry). progress is called with the number signed so
// far. It stops, with ctx's error, as soon as ctx ends.
func (p *Payments) Presign(ctx context.Context, n int, seed int64, progress func(done, total int)) (int, error) {
	counts := p.presignCounts(n)
	if !p.namedSenders {
		// The dispatcher's picks, drawn now so the payments are laid out
		// in the order it sends them (Reserve takes them from p.picks).
		p.picks, p.picked = make([]int32, n), 0
		for i := range p.picks {
			p.picks[i] = int32(p.senders.Pick())
		}
	}
	q, places := layout(p.picks, counts, p.mix != nil)
	total := len(places)
	have := make([]int, len(p.lanes))
	if p.carry != nil {
		for s := range have {
			reuse := p.carry.from(p.offset+s, p.lanes[s].base)
			have[s] = min(len(reuse), counts[s])
			for k, tx := range reuse[:have[s]] {
				q.txs[q.at[s][k]] = tx
			}
			total -= have[s]
		}
	}
	var done atomic.Int64
	chunks := (len(places) + presignChunk - 1) / presignChunk
	size := p.codec.TxSize() + p.wireSize()
	fanout.Workers(chunks, func(int) func(c int) {
		return func(c int) {
			if ctx.Err() != nil {
				return
			}
			// One random source and chooser per chunk: no locks, and the
			// same payments whatever the number of cores.
			r := rand.New(rand.NewSource(seed + int64(c)))
			recip := NewChooser(p.recipCfg, recipients(p.codec), r)
			part := places[c*presignChunk : min((c+1)*presignChunk, len(places))]
			// One backing array per chunk keeps the bytes in send order.
			buf := make([]byte, 0, size*len(part))
			for j, pl := range part {
				s, k := int(pl.s), int(pl.k)
				if k < have[s] {
					continue
				}
				at := c*presignChunk + j
				start := len(buf)
				kind, to, amount := -1, -1, uint64(0)
				if p.rowsOf != nil && k < len(p.rowsOf[s]) {
					kind, to, amount = p.rowPayment(p.trace.Rows[p.rowsOf[s][k]])
				}
				if to < 0 {
					to = recip.Pick()
				}
				if amount == 0 {
					amount = p.drawAmount(r)
				}
				if p.mix != nil {
					if kind < 0 {
						kind = p.drawKind(r)
					}
					q.kind[at] = uint8(kind)
					buf = p.sign(buf, kind, s, to, amount, recip, p.lanes[s].base+uint64(k))
				} else {
					buf = p.codec.Sign(buf, p.offset+s, to, amount, p.lanes[s].base+uint64(k))
				}
				tx := buf[start:len(buf):len(buf)]
				q.txs[at] = sut.Tx{ID: p.codec.ID(tx), Bytes: tx}
				if p.wire != nil {
					// After its bytes in the same array (an append that
					// moves it leaves tx valid in the old one).
					w := len(buf)
					buf = p.wire.AppendWire(buf, tx)
					q.txs[at].Wire = buf[w:len(buf):len(buf)]
				}
				if d := done.Add(1); d%2000 == 0 {
					if ctx.Err() != nil {
						return
					}
					if progress != nil {
						progress(int(d), total)
					}
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return int(done.Load()), err
	}
	p.store = q
	if p.carry != nil {
		for s := range p.lanes {
			p.carry.keep(p.offset+s, p.lanes[s].base, q.bySender(s))
		}
	}
	if progress != nil {
		progress(total, total)
	}
	return total, nil
}

// presignChunk is how many payments one task of Presign signs.
const presignChunk = 4096

func (p *Payments) drawAmount(r *rand.Rand) uint64 {
	if p.amount.Max == p.amount.Min {
		return p.amount.Min
	}
	return p.amount.Min + uint64(r.Int63n(int64(p.amount.Max-p.amount.Min+1)))
}

// Reserve picks a sender with room in its window and counts one more
// payment in flight for it. It returns -1 when no sender has room. Only the
// dispatcher calls it.
func (p *Payments) Reserve() int {
	for try := 0; try < 8; try++ {
		if s := p.pick(); p.ReserveSender(s) {
			return s
		}
	}
	// The favoured senders are full: take the next one that has room.
	r := p.releases.Load()
	if p.fullAt == r+1 {
		return -1
	}
	for k := 0; k < len(p.lanes); k++ {
		s := p.scan
		p.scan = (p.scan + 1) % len(p.lanes)
		if p.ReserveSender(s) {
			return s
		}
	}
	p.fullAt = r + 1
	return -1
}

// pick is the dispatcher's next sender pick: the one Presign drew for it,
// else a new draw.
func (p *Payments) pick() int {
	if p.picked < len(p.picks) {
		p.picked++
		return int(p.picks[p.picked-1])
	}
	return p.senders.Pick()
}

// Wallets: closed-model users hold several senders (PaymentsConfig.Wallets).
func (p *Payments) Wallets() bool { return p.wallets }

// ReserveSender reserves room for one more payment of sender s.
func (p *Payments) ReserveSender(s int) bool {
	if p.inflight[s].Load() >= p.window {
		return false
	}
	p.inflight[s].Add(1)
	return true
}

// Release ends one in-flight payment of sender s.
func (p *Payments) Release(s int) {
	p.inflight[s].Add(-1)
	p.releases.Add(1)
}

// Resolved forgets a final payment; a failure by sequence or an expiry
// means the chain's view of the sender may differ from ours: its sequence is
// read again before its next payment.
func (p *Payments) Resolved(s int, nonce uint64, o Outcome, reason string) {
	l := &p.lanes[s]
	l.mu.Lock()
	l.held.del(nonce)
	if o == Committed || o == Failed { // a failed payment's sequence is used too
		l.floor = max(l.floor, nonce+1)
	}
	l.mu.Unlock()
	if o == Expired {
		if u, ok := p.codec.(Unsequenced); !ok || !u.Unsequenced() {
			l.resync.Store(true)
		}
	} else if o == Failed {
		if mm, _, _ := p.codec.Mismatch(sut.Receipt{Status: sut.Failed, Reason: reason}); mm {
			l.resync.Store(true)
		}
	}
}

// paymentBuilder makes payments for the senders one worker owns.
type paymentBuilder struct {
	p     *Payments
	buf   []byte
	r     *rand.Rand
	recip Chooser
	// repriced is the sender and sequence+1 of the payment the last Answer
	// re-priced, if it did.
	repriced [2]uint64
	invSort  string
	kind     string // of the last txFor
	row      schedule.Row
	hasRow   bool // the payment being built follows row (a trace)
	touched  byte // what Touch read, kept so the reads are not dropped
}

// Touch reads sender s's next presigned payment: its entry, and one byte
// of every cache line of its encoding (Wire, else Bytes).
func (b *paymentBuilder) Touch(s int) {
	p := b.p
	if k, ok := p.presigned(s, p.lanes[s].next); ok {
		tx := p.store.get(s, k)
		w := tx.Wire
		if len(w) == 0 {
			w = tx.Bytes
		}
		for i := 0; i < len(w); i += 64 {
			b.touched += w[i]
		}
	}
}

// presigned is where sender s's payment with sequence nonce is in its
// presigned payments (the k of store.get), if it is there.
func (p *Payments) presigned(s int, nonce uint64) (k uint64, ok bool) {
	if p.store == nil {
		return 0, false
	}
	base := p.lanes[s].base
	k = nonce - base
	return k, nonce >= base && p.store.has(s, k)
}

// NewBuilder returns a builder for one worker goroutine.
func (p *Payments) NewBuilder(seed int64) Builder {
	r := rand.New(rand.NewSource(seed))
	return &paymentBuilder{p: p, r: r, recip: NewChooser(p.recipCfg, recipients(p.codec), r)}
}

// txFor is sender s's transaction with sequence nonce: the presigned one
// when there is one (stable bytes), else signed into the builder's buffer.
func (b *paymentBuilder) txFor(s int, nonce uint64) (tx sut.Tx, stable bool) {
	p := b.p
	b.kind = ""
	if k, ok := p.presigned(s, nonce); ok {
		i := p.store.at[s][k]
		if p.mix != nil {
			b.kind = p.mix[p.store.kind[i]].Kind
		}
		return p.store.txs[i], true
	}
	kind, to, amount := -1, -1, uint64(0)
	if b.hasRow {
		kind, to, amount = p.rowPayment(b.row)
	}
	if to < 0 {
		to = b.recip.Pick()
	}
	if amount == 0 {
		amount = p.drawAmount(b.r)
	}
	if p.mix != nil {
		if kind < 0 {
			kind = p.drawKind(b.r)
		}
		b.kind = p.mix[kind].Kind
		b.buf = p.sign(b.buf[:0], kind, s, to, amount, b.recip, nonce)
	} else {
		b.buf = p.codec.Sign(b.buf[:0], p.offset+s, to, amount, nonce)
	}
	return sut.Tx{ID: p.codec.ID(b.buf), Bytes: b.buf}, false
}

// queued is sender s's presigned payment with sequence nonce (a held
// mark's bytes).
func (b *paymentBuilder) queued(s int) func(nonce uint64) sut.Tx {
	return func(nonce uint64) sut.Tx {
		k, _ := b.p.presigned(s, nonce)
		return *b.p.store.get(s, k)
	}
}

// drawKind draws a payment's kind from the mix by weight.
func (p *Payments) drawKind(r *rand.Rand) int {
	if p.mixSum == 0 {
		return 0
	}
	x := r.Float64() * p.mixSum
	for i, m := range p.mix {
		if x < m.Weight {
			return i
		}
		x -= m.Weight
	}
	return len(p.mix) - 1
}

// sign appends sender s's payment of the mix's kind i to first (and, for
// a multi-payment, to more recipients drawn by recip).
func (p *Payments) sign(dst []byte, i, s, first int, amount uint64, recip Chooser, nonce uint64) []byte {
	m := p.mix[i]
	if m.Kind == "send" {
		return p.codec.Sign(dst, p.offset+s, first, amount, nonce)
	}
	to := make([]int, max(m.Outputs, 1)) // one small slice per multi-payment
	to[0] = first
	for j := 1; j < len(to); j++ {
		to[j] = recip.Pick()
	}
	dst, _ = p.codec.(KindSigner).SignKind(dst, m.Kind, p.offset+s, to, amount, nonce)
	return dst
}

// Next returns sender s's next payment. When the sender was marked for a
// resync, its sequence is read first: if the chain is past ours, signing
// moves up to it; if it waits for a sequence we no longer hold (it expired
// or was refused), signing goes back to it. A sequence we still hold is
// left alone: a query may read only committed state, so the transaction
// may well be waiting in a mempool; if it was dropped, the next payment's
// refusal says so, and Answer resubmits it.
func (b *paymentBuilder) Next(ctx context.Context, s int, i uint64) (Built, error) {
	p := b.p
	l := &p.lanes[s]
	b.hasRow = false
	if p.trace != nil {
		b.row, b.hasRow = p.trace.Row(i)
	}
	var out Built
	// A plain load first: the swap is a locked instruction, 1.6% of the
	// CPU at 400k payments/s when taken for every payment.
	if l.resync.Load() && l.resync.Swap(false) {
		e, err := p.codec.Nonce(ctx, p.offset+s)
		if err != nil {
			l.resync.Store(true)
			return out, fmt.Errorf("resync: %w", err)
		}
		out.Resynced = true
		l.mu.Lock()
		e = max(e, l.floor) // a node behind the blocks we read answered
		switch {
		case e < l.next:
			if !l.held.has(e) {
				l.next = e
			}
		case e > l.next:
			l.next = e
		}
		l.mu.Unlock()
	}
	if inv := p.invalid; inv.Share > 0 && b.r.Float64() < inv.Share {
		if tx, ok := b.invalidTx(s, l); ok {
			out.Tx, out.Invalid = tx, b.invSort
			out.Nonce = l.next
			return out, nil
		}
	}
	out.Tx, out.Stable = b.txFor(s, l.next)
	out.Nonce, out.Kind = l.next, b.kind
	l.next++
	return out, nil
}

// invalidTx builds sender s's next invalid payment, of a sort drawn from
// the scenario's: with the lane's next sequence (which it does not take),
// or for a stale one the sequence before the lane's first. A sort the codec
// cannot build now gives way to the next.
func (b *paymentBuilder) invalidTx(s int, l *lane) (sut.Tx, bool) {
	p := b.p
	sorts := p.invalid.Sorts
	k := b.r.Intn(len(sorts))
	for i := range sorts {
		sort := sorts[(k+i)%len(sorts)]
		nonce := l.next
		if sort == StaleSequence {
			if l.base == 0 {
				continue // nothing used yet
			}
			nonce = l.base - 1
		}
		buf, ok := p.codec.(InvalidSigner).SignInvalid(b.buf[:0], sort, p.offset+s, b.recip.Pick(), p.drawAmount(b.r), nonce)
		if ok {
			b.buf, b.invSort = buf, sort
			return sut.Tx{ID: p.codec.ID(buf), Bytes: buf}, true
		}
	}
	return sut.Tx{}, false
}

// Answer keeps what the system took (for resubmission), frees the sequence
// of a payment it refused for good, and plans the recovery from a sequence
// mismatch: when the chain expects a lower sequence, the transactions in
// between were dropped, so their original bytes are resubmitted and then
// this one; when it expects a higher one, this payment is re-signed with it.
func (b *paymentBuilder) Answer(ctx context.Context, s int, tx sut.Tx, stable bool, nonce uint64, r sut.Receipt, recover bool) Recovery {
	p := b.p
	l := &p.lanes[s]
	key := [2]uint64{uint64(s), nonce + 1}
	last := b.repriced
	b.repriced = [2]uint64{}
	switch r.Status {
	case sut.Pending, sut.Unacked:
		if !stable { // the builder's buffer (or a batch's arena): reused
			tx.Bytes, tx.Wire = append([]byte(nil), tx.Bytes...), nil
		}
		l.mu.Lock()
		l.held.put(nonce, tx, stable)
		l.mu.Unlock()
		return Recovery{}
	case sut.Committed, sut.Failed:
		return Recovery{}
	}
	// Once per payment: the answer to a re-priced payment's retry comes
	// next on this builder, and a second refusal for its fee stands.
	if rp, ok := p.codec.(Repricer); ok && recover && last != key && rp.Reprice(ctx, r) {
		b.repriced = key
		b.buf = p.codec.Sign(b.buf[:0], p.offset+s, b.recip.Pick(), p.drawAmount(b.r), nonce)
		kind := ""
		if p.mix != nil {
			kind = "send"
		}
		return Recovery{Class: "repriced", Tx: sut.Tx{ID: p.codec.ID(b.buf), Bytes: b.buf}, Nonce: nonce, Resigned: true, Repriced: true, Kind: kind}
	}
	mm, e, known := p.codec.Mismatch(r)
	rewind := func() Recovery {
		if nonce+1 == l.next {
			l.next = nonce // the sequence is free again
		}
		return Recovery{}
	}
	if !mm || !recover {
		return rewind()
	}
	var rc Recovery
	if !known {
		got, err := p.codec.Nonce(ctx, p.offset+s)
		if err != nil {
			return rewind()
		}
		e, rc.Resynced = got, true
	}
	l.mu.Lock()
	stale := e < l.floor
	l.mu.Unlock()
	if stale {
		return rewind() // a node that has not caught up: its refusal stands
	}
	switch {
	case e < nonce:
		rc.Class = "chain_lower"
		l.mu.Lock()
		all := true
		for k := e; k < nonce; k++ {
			h, ok := l.held.get(k, b.queued(s))
			if !ok {
				all = false
				break
			}
			rc.Resubmit = append(rc.Resubmit, h)
		}
		l.mu.Unlock()
		if all {
			rc.Tx, rc.Nonce = tx, nonce
			return rc
		}
		// A sequence before ours is neither on the chain nor held: sign
		// this payment again with the one the chain expects.
		rc.Resubmit = nil
		l.next = e
	case e > nonce:
		rc.Class = "chain_higher"
		if l.next < e {
			l.next = e
		}
	default:
		return rewind() // the system contradicts itself: the rejection stands
	}
	rc.Tx, _ = b.txFor(s, l.next)
	rc.Nonce, rc.Resigned, rc.Kind = l.next, true, b.kind
	l.next++
	return rc
}

// Raw is an unsigned workload of unique key=value transactions, accepted by
// CometBFT's kvstore and similar applications.
type Raw struct {
	prefix  string
	padding int
}

// NewRaw makes keys unique to this run.
func NewRaw(runID string, padding int) *Raw {
	return &Raw{prefix: "tpslab-" + runID + "-", padding: padding}
}

// Raw has no senders, so nothing limits what is in flight.
func (r *Raw) Senders() int                               { return 0 }
func (r *Raw) Reserve() int                               { return 0 }
func (r *Raw) ReserveSender(int) bool                     { return true }
func (r *Raw) Release(int)                                {}
func (r *Raw) Resolved(int, uint64, Outcome, string)      {}
func (r *Raw) NewBuilder(int64) Builder                   { return &rawBuilder{r: r} }
func (r *Raw) PresignPlan(int) (count int, bytes float64) { return 0, 0 }

type rawBuilder struct {
	r   *Raw
	buf []byte
}

// Next makes transaction i; its id is CometBFT's (sha256).
func (b *rawBuilder) Next(_ context.Context, _ int, i uint64) (Built, error) {
	b.buf = b.r.build(b.buf, i)
	return Built{Tx: sut.Tx{ID: sha256.Sum256(b.buf), Bytes: b.buf}}, nil
}

// Answer: raw transactions have no sequences to recover.
func (b *rawBuilder) Answer(context.Context, int, sut.Tx, bool, uint64, sut.Receipt, bool) Recovery {
	return Recovery{}
}

func (r *Raw) build(buf []byte, i uint64) []byte {
	buf = append(buf[:0], r.prefix...)
	buf = strconv.AppendUint(buf, i, 10)
	buf = append(buf, '=')
	buf = strconv.AppendUint(buf, i, 36)
	for k := 0; k < r.padding; k++ {
		buf = append(buf, 'x')
	}
	return buf
}
