package dispatch

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/confirm"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// signing signs each transfer for real (Ed25519), so a lane signing live is
// busy with its own work, as against a real chain.
type signing struct{ key ed25519.PrivateKey }

func (signing) Accounts() int { return 1000 }
func (c signing) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	at := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(from))
	dst = binary.BigEndian.AppendUint64(dst, nonce)
	return append(dst, ed25519.Sign(c.key, dst[at:])...)
}
func (signing) ID(tx []byte) sut.TxID                                { return sha256.Sum256(tx) }
func (signing) Nonce(context.Context, int) (uint64, error)           { return 0, nil }
func (signing) Mismatch(sut.Receipt) (bool, uint64, bool)            { return false, 0, false }
func (signing) TxSize() int                                          { return 12 + ed25519.SignatureSize }
func (o *ordered) Probe(context.Context) (sut.Info, error)           { return sut.Info{Height: 1}, nil }
func (o *ordered) Submitter(int) sut.Submitter                       { return o }
func (o *ordered) Confirmer() sut.Confirmer                          { return nil }
func (o *ordered) Close() error                                      { return nil }
func (o *ordered) BatchLanes() int                                   { return 1 }
func (o *ordered) Submit(ctx context.Context, tx sut.Tx) sut.Receipt { return o.take(tx) }

// ordered takes batches and checks that every sender's payments arrive in
// sequence order, across all lanes.
type ordered struct {
	mu       sync.Mutex
	next     map[uint32]uint64
	outOfOrd int
}

func (o *ordered) take(tx sut.Tx) sut.Receipt {
	from, nonce := binary.BigEndian.Uint32(tx.Bytes), binary.BigEndian.Uint64(tx.Bytes[4:])
	o.mu.Lock()
	if nonce != o.next[from] {
		o.outOfOrd++
	}
	o.next[from] = nonce + 1
	o.mu.Unlock()
	return sut.Receipt{Status: sut.Pending}
}

func (o *ordered) SubmitBatch(_ context.Context, txs []sut.Tx, out []sut.Receipt) {
	for k, tx := range txs {
		out[k] = o.take(tx)
	}
}

// startSigned gives e a workload of senders signing each payment live
// (Ed25519), a recorder and a tracker, and starts its clock; it returns
// the recorder.
func startSigned(t *testing.T, e *Engine, senders int) *measure.Recorder {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(nil)
	p, err := workload.NewPayments(context.Background(), workload.PaymentsConfig{Senders: senders, Window: 1000,
		Amount: workload.Amount{Min: 1, Max: 1}, SenderChoice: workload.Choice{Dist: "uniform"}, RecipientChoice: workload.Choice{Dist: "uniform"}}, signing{key})
	if err != nil {
		t.Fatal(err)
	}
	e.Workload, e.Recorder = p, measure.NewRecorder()
	start := time.Now()
	e.Tracker = confirm.New(e.Resolve, start, e.Recorder.NewShard())
	e.Start(start)
	return e.Recorder
}

// A lane busy signing while payments wait for it gets a second lane (two
// cores), and every sender's payments still arrive in order across the
// switch.
func TestLanesGrowWhenBusyWithTheirOwnWork(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	target := &ordered{next: map[uint32]uint64{}}
	const rate = 100_000 // above one core's Ed25519 signing
	e := &Engine{Target: target, Peak: rate, SendEvery: func(time.Duration) time.Duration { return 5 * time.Millisecond }}
	rec := startSigned(t, e, 1000)
	ctx := context.Background()
	if n := e.Lanes(); n != 1 {
		t.Fatalf("starts with %d lanes, want 1 (the rate alone asks for one)", n)
	}
	e.RunOpen(ctx, ctx, schedule.NewArrivals(schedule.Constant(rate, 2500*time.Millisecond), false, 1), 0)
	iv := rec.Collect(false)
	if n := e.Lanes(); n != 2 {
		t.Errorf("ended with %d lanes, want 2: the lane was busy with its own work (sent %d)", n, iv.Sent)
	}
	if target.outOfOrd > 0 {
		t.Errorf("%d payments reached the target out of their sender's order", target.outOfOrd)
	}
	if iv.Sent == 0 || iv.Offered != iv.Sent+iv.Unsent {
		t.Errorf("offered %d, sent %d, unsent %d", iv.Offered, iv.Sent, iv.Unsent)
	}
}

// Lanes grow on waiting for answers only while their core idles in part
// of it (a quarter to three quarters of their busy time), so a second
// lane builds while the first's batch is answered, up to two a core; a
// lane that only waits is held by the target and gets none, nor do lanes
// with room.
func TestLanesGrowToOverlapTheirAnswers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		name       string
		lanes      int
		work, wait float64 // shares of the half second, each lane
		waited     bool
		want       int
	}{
		{"half building, half waiting (the sink at 400k/s)", 1, 0.48, 0.52, true, 1},
		{"two a core already", 2, 0.48, 0.52, true, 0},
		{"only waiting (a busy chain's CheckTx)", 1, 0.01, 0.99, true, 0},
		{"room in the lane", 1, 0.2, 0.2, true, 0},
		{"nothing waited for it", 1, 0.48, 0.52, false, 0},
		{"own work: no other core", 1, 0.9, 0.1, true, 0},
	} {
		e := openModel{&Engine{Target: &ordered{next: map[uint32]uint64{}}}}
		e.Start(time.Now())
		qs := make([]queue, c.lanes)
		for i := range qs {
			qs[i] = &lane{}
		}
		g, _ := e.watchQueues(qs, measure.NewRecorder().NewShard())
		if g == nil {
			if c.want != 0 {
				t.Errorf("%s: lanes cannot grow", c.name)
			}
			continue
		}
		span := growEvery
		for _, q := range qs { // the lanes' workers' clocks, half a second on
			q.(*lane).work.Store(int64(c.work * float64(span)))
			q.(*lane).wait.Store(int64(c.wait * float64(span)))
		}
		g.due, g.taken = 1000, 900
		if c.waited {
			g.waits = 100
		}
		if got := g.add(g.last+span, qs); got != c.want {
			t.Errorf("%s: %d lanes added, want %d", c.name, got, c.want)
		}
	}
}

// slow answers each payment after delay, one at a time per connection, as
// a far node does; it still checks every sender's order.
type slow struct {
	*ordered
	delay time.Duration
}

func (s slow) Submitter(int) sut.Submitter { return s }
func (s slow) Submit(_ context.Context, tx sut.Tx) sut.Receipt {
	time.Sleep(s.delay)
	return s.take(tx)
}

// Connections busy waiting for a slow target's answers while payments
// wait for them grow until they carry the rate (rate × answer time),
// and every sender's payments still arrive in order across each growth.
func TestConnectionsGrowForASlowTarget(t *testing.T) {
	target := slow{&ordered{next: map[uint32]uint64{}}, 20 * time.Millisecond}
	const rate = 1000 // needs 20 connections at 20 ms an answer
	e := &Engine{Target: target, Connections: 2, MaxConnections: 64}
	rec := startSigned(t, e, 50)
	ctx := context.Background()
	e.RunOpen(ctx, ctx, schedule.NewArrivals(schedule.Constant(rate, 3*time.Second), false, 1), 0)
	iv := rec.Collect(false)
	t.Logf("connections 2 -> %d, sent %d of %d", e.Busy().Workers, iv.Sent, iv.Offered)
	if n := e.Busy().Workers; n < 20 {
		t.Errorf("ended with %d connections, want at least 20 (rate × answer time): 2 grew while they waited for answers (sent %d of %d)", n, iv.Sent, iv.Offered)
	}
	if e.Lanes() != 0 {
		t.Errorf("%d lanes reported: connections are not lanes", e.Lanes())
	}
	if target.outOfOrd > 0 {
		t.Errorf("%d payments reached the target out of their sender's order", target.outOfOrd)
	}
	if iv.Sent == 0 || iv.Offered != iv.Sent+iv.Unsent {
		t.Errorf("offered %d, sent %d, unsent %d", iv.Offered, iv.Sent, iv.Unsent)
	}
}

// A target that answers fast keeps the connections it started with.
func TestConnectionsStayWhenAnswersAreFast(t *testing.T) {
	e := &Engine{Target: &ordered{next: map[uint32]uint64{}}, Connections: 4, MaxConnections: 64}
	startSigned(t, e, 50)
	ctx := context.Background()
	e.RunOpen(ctx, ctx, schedule.NewArrivals(schedule.Constant(1000, 1500*time.Millisecond), false, 1), 0)
	if n := e.Busy().Workers; n != 4 {
		t.Errorf("ended with %d connections, want the 4 it started with: answers came at once", n)
	}
}
