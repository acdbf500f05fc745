package workload

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/scenario"
)

// AccountQuerier reads an account's next admissible sequence from the chain.
type AccountQuerier func(ctx context.Context, addr chain.Address) (uint64, error)

// Payments is the signed bank-send workload against a tpslab ledger.
type Payments struct {
	chainID  string
	padding  int
	window   int32
	amount   scenario.Amount
	keys     []ed25519.PrivateKey // senders
	addrs    []chain.Address      // every funded account (recipients)
	next     []uint64             // live: next sequence per sender; owned by its worker
	resync   []atomic.Bool
	inflight []atomic.Int32
	queue    [][][]byte // presigned: per-sender payments in sequence order
	reserved []int      // presigned: payments handed out per sender (dispatcher only)
	popped   []int      // presigned: payments built per sender (worker only)
	senders  Chooser    // dispatcher only
	scan     int        // dispatcher only
	query    AccountQuerier
	recipCfg scenario.Choice
}

// PaymentsConfig is what NewPayments needs beyond the scenario.
type PaymentsConfig struct {
	ChainID     string
	GenesisSeed string
	Accounts    uint64 // funded genesis accounts
	Query       AccountQuerier
	Seed        int64
}

// NewPayments derives the accounts (on all cores) and reads each sender's
// next sequence from the chain.
func NewPayments(ctx context.Context, w scenario.Workload, c PaymentsConfig) (*Payments, error) {
	all := chain.DeriveKeys(c.GenesisSeed, int(c.Accounts))
	p := &Payments{
		chainID: c.ChainID, padding: w.Padding, window: int32(w.Window), amount: w.Amount,
		keys: all[:w.Senders], addrs: make([]chain.Address, len(all)),
		next: make([]uint64, w.Senders), resync: make([]atomic.Bool, w.Senders),
		inflight: make([]atomic.Int32, w.Senders), query: c.Query, recipCfg: w.RecipientChoice,
	}
	for i, k := range all {
		p.addrs[i] = chain.AddressOf(k[32:])
	}
	p.senders = NewChooser(w.SenderChoice, w.Senders, rand.New(rand.NewSource(c.Seed)))
	if err := p.readSequences(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// readSequences asks the chain for every sender's next sequence, 16 at a time.
func (p *Payments) readSequences(ctx context.Context) error {
	var wg sync.WaitGroup
	var first atomic.Value
	sem := make(chan struct{}, 16)
	for i := range p.keys {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := p.query(ctx, p.addrs[i])
			if err != nil {
				first.CompareAndSwap(nil, fmt.Errorf("read sequence of sender %d: %w", i, err))
				return
			}
			p.next[i] = n
		}(i)
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

// Senders is the number of sending accounts.
func (p *Payments) Senders() int { return len(p.keys) }

// Presign signs n payments ahead of the load, spread over senders by their
// expected share of picks (plus headroom), on all cores. progress is called
// with the number signed so far. It returns how many it signed.
func (p *Payments) Presign(n int, seed int64, progress func(done, total int)) int {
	sh := shares(p.senders, len(p.keys))
	counts := make([]int, len(p.keys))
	total := 0
	for i, s := range sh {
		exp := s * float64(n)
		counts[i] = int(math.Ceil(exp+4*math.Sqrt(exp))) + 2
		total += counts[i]
	}
	p.queue = make([][][]byte, len(p.keys))
	p.reserved = make([]int, len(p.keys))
	p.popped = make([]int, len(p.keys))
	var done atomic.Int64
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed + int64(w)))
			recip := NewChooser(p.recipCfg, len(p.addrs), r)
			for s := w; s < len(p.keys); s += workers {
				// One backing array per sender keeps the buffer compact.
				size := chain.Size(len(p.chainID), p.padding)
				buf := make([]byte, 0, size*counts[s])
				q := make([][]byte, counts[s])
				for k := range q {
					start := len(buf)
					buf = chain.AppendPayment(buf, p.chainID, p.keys[s], p.addrs[recip.Pick()], p.drawAmount(r), p.next[s]+uint64(k), p.padding)
					q[k] = buf[start:len(buf):len(buf)]
					if d := done.Add(1); progress != nil && d%2000 == 0 {
						progress(int(d), total)
					}
				}
				p.queue[s] = q
			}
		}(w)
	}
	wg.Wait()
	if progress != nil {
		progress(total, total)
	}
	return total
}

func (p *Payments) drawAmount(r *rand.Rand) uint64 {
	if p.amount.Max == p.amount.Min {
		return p.amount.Min
	}
	return p.amount.Min + uint64(r.Int63n(int64(p.amount.Max-p.amount.Min+1)))
}

// Reserve picks a sender with room in its window (and, presigned, with
// payments left) and counts one more payment in flight for it. It returns -1
// when no sender has room. Only the dispatcher calls it.
func (p *Payments) Reserve() int {
	for try := 0; try < 8; try++ {
		if s := p.senders.Pick(); p.tryReserve(s) {
			return s
		}
	}
	// The favoured senders are full: take the next one that has room.
	for k := 0; k < len(p.keys); k++ {
		s := p.scan
		p.scan = (p.scan + 1) % len(p.keys)
		if p.tryReserve(s) {
			return s
		}
	}
	return -1
}

// ReserveSender reserves room for one more payment of sender s.
func (p *Payments) ReserveSender(s int) bool { return p.tryReserve(s) }

func (p *Payments) tryReserve(s int) bool {
	if p.inflight[s].Load() >= p.window {
		return false
	}
	if p.queue != nil {
		if p.reserved[s] >= len(p.queue[s]) {
			return false
		}
		p.reserved[s]++
	}
	p.inflight[s].Add(1)
	return true
}

// Release ends one in-flight payment of sender s.
func (p *Payments) Release(s int) { p.inflight[s].Add(-1) }

// Builder makes the transactions of one worker goroutine.
type Builder interface {
	// Build returns the next transaction of sender s (or, for workloads
	// without senders, transaction number i). The bytes stay valid until
	// the next call.
	Build(ctx context.Context, s int, i uint64) (tx []byte, resynced bool, err error)
}

// paymentBuilder makes payments for the senders one worker owns.
type paymentBuilder struct {
	buf   []byte
	p     *Payments
	r     *rand.Rand
	recip Chooser
}

// NewBuilder returns a builder for one worker goroutine.
func (p *Payments) NewBuilder(seed int64) Builder {
	r := rand.New(rand.NewSource(seed))
	return &paymentBuilder{p: p, r: r, recip: NewChooser(p.recipCfg, len(p.addrs), r)}
}

// Build appends sender s's next payment to buf. Presigned, it returns the
// stored bytes instead. resynced is set when the sender's sequence was
// re-read first.
func (b *paymentBuilder) Build(ctx context.Context, s int, _ uint64) (tx []byte, resynced bool, err error) {
	p := b.p
	if p.queue != nil {
		tx = p.queue[s][p.popped[s]]
		p.popped[s]++
		return tx, false, nil
	}
	if p.resync[s].Swap(false) {
		n, err := p.query(ctx, p.addrs[s])
		if err != nil {
			return nil, false, err
		}
		p.next[s], resynced = n, true
	}
	b.buf = chain.AppendPayment(b.buf[:0], p.chainID, p.keys[s], p.addrs[b.recip.Pick()], p.drawAmount(b.r), p.next[s], p.padding)
	p.next[s]++
	return b.buf, resynced, nil
}

// TxID is the id CometBFT gives a transaction.
func TxID(tx []byte) [32]byte { return sha256.Sum256(tx) }

// Mismatch marks sender s for a resync before its next live payment.
// Presigned payments cannot be re-signed, so there it only counts.
func (p *Payments) Mismatch(s int) { p.resync[s].Store(true) }

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
func (r *Raw) Senders() int             { return 0 }
func (r *Raw) Reserve() int             { return 0 }
func (r *Raw) ReserveSender(int) bool   { return true }
func (r *Raw) Release(int)              {}
func (r *Raw) Mismatch(int)             {}
func (r *Raw) NewBuilder(int64) Builder { return &rawBuilder{r: r} }

type rawBuilder struct {
	r   *Raw
	buf []byte
}

// Build makes transaction i.
func (b *rawBuilder) Build(_ context.Context, _ int, i uint64) ([]byte, bool, error) {
	b.buf = b.r.build(b.buf, i)
	return b.buf, false, nil
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

// Workload is what the dispatcher needs: room in senders' windows, and a
// builder per worker.
type Workload interface {
	Senders() int // 0 when the workload has no senders
	Reserve() int // a sender with room in its window, or -1
	ReserveSender(s int) bool
	Release(s int)
	Mismatch(s int) // the chain disagreed with sender s's sequence
	NewBuilder(seed int64) Builder
}
