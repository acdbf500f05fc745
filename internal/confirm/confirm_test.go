package confirm

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/sut"
)

func id(s string) sut.TxID { return sha256.Sum256([]byte(s)) }

type fixture struct {
	t0       time.Time
	rec      *measure.Recorder
	trk      *Tracker
	resolved []Resolution
}

func newFixture() *fixture {
	f := &fixture{t0: time.Now(), rec: measure.NewRecorder()}
	f.trk = New(func(r Resolution) { f.resolved = append(f.resolved, r) }, f.t0, f.rec.NewShard())
	return f
}

func (f *fixture) at(d time.Duration) time.Time { return f.t0.Add(d) }

func TestBlockResolvesOursOnly(t *testing.T) {
	f := newFixture()
	f.trk.Track(id("a"), Pending{Intended: 100 * time.Millisecond, Sent: 110 * time.Millisecond, Sender: 3, Nonce: 7})
	f.trk.Track(id("b"), Pending{Intended: 200 * time.Millisecond, Sent: 200 * time.Millisecond, Sender: 4})
	f.trk.Block(&sut.Block{Height: 5, Seen: f.at(time.Second), Final: true, Bytes: 300,
		Txs: []sut.TxResult{{ID: id("a"), OK: true}, {ID: id("other"), OK: true}, {ID: id("b"), Reason: "sequence_too_high"}}})
	if len(f.resolved) != 2 || f.resolved[0].Outcome != Committed || f.resolved[0].Nonce != 7 || f.resolved[1].Outcome != FailedInBlock || f.resolved[1].Reason != "sequence_too_high" {
		t.Fatalf("resolutions %+v", f.resolved)
	}
	iv := f.rec.Collect(false)
	if iv.Committed != 1 || iv.Failed["sequence_too_high"] != 1 || len(iv.Blocks) != 1 || iv.Blocks[0].Ours != 2 || iv.Blocks[0].OursOK != 1 || iv.Blocks[0].Txs != 3 {
		t.Fatalf("recorded %+v blocks %+v", iv.Counts, iv.Blocks)
	}
	if got := iv.Commit.Max(); got < 891_000 || got > 909_000 { // µs from intended; a second's histograms keep 2 digits
		t.Errorf("commit latency %d µs, want 900 ms from the intended time", got)
	}
	if f.trk.Len() != 0 {
		t.Errorf("%d still pending", f.trk.Len())
	}
}

func TestLateCommitMovesFromExpired(t *testing.T) {
	f := newFixture()
	f.trk.Track(id("a"), Pending{Sent: time.Second, Sender: 1})
	f.trk.Expire(2 * time.Second)
	if len(f.resolved) != 1 || f.resolved[0].Outcome != Expired {
		t.Fatalf("not expired: %+v", f.resolved)
	}
	f.trk.Block(&sut.Block{Height: 9, Seen: f.at(40 * time.Second), Final: true, Txs: []sut.TxResult{{ID: id("a"), OK: true}}})
	iv := f.rec.Collect(false)
	if iv.Expired != 0 || iv.Committed != 1 || iv.LateCommits != 1 {
		t.Fatalf("late commit recorded as %+v", iv.Counts)
	}
	if len(f.resolved) != 1 {
		t.Errorf("a late commit resolved the payment twice")
	}
}

// Expired payments are remembered in two generations of lateWindow: the
// memory stays bounded however many expire, and the last lateWindow are
// still recognised when a block commits them late.
func TestExpiredMemoryIsBounded(t *testing.T) {
	f := newFixture()
	f.trk.resolve = func(Resolution) {}
	n := 3*lateWindow + 10
	for i := 0; i < n; i++ {
		var x sut.TxID
		x[0], x[1], x[2] = byte(i), byte(i>>8), byte(i>>16)
		f.trk.Track(x, Pending{Sent: time.Second})
		if i%1000 == 999 {
			f.trk.Expire(2 * time.Second)
		}
	}
	f.trk.Expire(2 * time.Second)
	if kept := len(f.trk.expired) + len(f.trk.expOld); kept > 2*lateWindow {
		t.Fatalf("%d expired payments kept, want at most %d", kept, 2*lateWindow)
	}
	var last sut.TxID
	last[0], last[1], last[2] = byte(n-1), byte((n-1)>>8), byte((n-1)>>16)
	f.trk.Block(&sut.Block{Height: 1, Seen: f.at(time.Minute), Final: true, Txs: []sut.TxResult{{ID: last, OK: true}}})
	if iv := f.rec.Collect(false); iv.LateCommits != 1 {
		t.Fatalf("the last expired payment was not recognised late: %+v", iv.Counts)
	}
}

func TestDepthFinalityAndReorg(t *testing.T) {
	f := newFixture()
	f.trk.Track(id("a"), Pending{Intended: 0, Sender: 1})
	f.trk.Track(id("b"), Pending{Intended: 0, Sender: 2})
	f.trk.Block(&sut.Block{Height: 10, Seen: f.at(time.Second), Txs: []sut.TxResult{{ID: id("a"), OK: true}}})
	f.trk.Block(&sut.Block{Height: 11, Seen: f.at(2 * time.Second), Txs: []sut.TxResult{{ID: id("b"), OK: true}}})
	if len(f.resolved) != 0 || f.trk.Len() != 2 {
		t.Fatalf("included is not final: %+v, pending %d", f.resolved, f.trk.Len())
	}
	f.trk.Reorg(11, f.at(3*time.Second)) // block 11 replaced: b is pending again
	f.trk.Final(10, f.at(4*time.Second))
	if len(f.resolved) != 1 || f.resolved[0].ID != id("a") {
		t.Fatalf("final: %+v", f.resolved)
	}
	f.trk.Block(&sut.Block{Height: 11, Seen: f.at(5 * time.Second), Txs: []sut.TxResult{{ID: id("b"), OK: true}}})
	f.trk.Final(11, f.at(6*time.Second))
	if len(f.resolved) != 2 || f.resolved[1].ID != id("b") {
		t.Fatalf("re-included b: %+v", f.resolved)
	}
	iv := f.rec.Collect(false)
	if iv.Committed != 2 || iv.Reorgs != 1 || iv.Inclusion.TotalCount() != 3 {
		t.Fatalf("counts %+v, inclusions %d", iv.Counts, iv.Inclusion.TotalCount())
	}
	if p50 := iv.Commit.ValueAtQuantile(50); p50 < 3_990_000 {
		t.Errorf("commit latency p50 %d µs: finality, not inclusion, is the commit", p50)
	}
}

func TestResolvedPerTransaction(t *testing.T) {
	f := newFixture()
	f.trk.Track(id("a"), Pending{Intended: time.Second, Sent: time.Second, Sender: -1})
	f.trk.Resolved(id("nope"), true, "", f.at(2*time.Second))
	f.trk.Resolved(id("a"), false, "insufficient_funds", f.at(2*time.Second))
	if len(f.resolved) != 1 || f.resolved[0].Outcome != FailedInBlock {
		t.Fatalf("%+v", f.resolved)
	}
	if iv := f.rec.Collect(false); iv.Failed["insufficient_funds"] != 1 {
		t.Fatalf("%+v", iv.Counts)
	}
}

// BenchmarkTrackAndCommit is the tracker's cost per payment: tracked at
// send, resolved from a block of 1000.
func BenchmarkTrackAndCommit(b *testing.B) {
	rec := measure.NewRecorder()
	t0 := time.Now()
	trk := New(func(Resolution) {}, t0, rec.NewShard())
	const per = 1000
	ids := make([]sut.TxID, per)
	for i := range ids {
		ids[i] = sha256.Sum256([]byte{byte(i), byte(i >> 8)})
	}
	blk := &sut.Block{Final: true, Txs: make([]sut.TxResult, per)}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += per {
		for i := range ids {
			trk.Track(ids[i], Pending{Intended: time.Duration(n), Sent: time.Duration(n)})
			blk.Txs[i] = sut.TxResult{ID: ids[i], OK: true}
		}
		blk.Height++
		blk.Seen = t0.Add(time.Duration(n))
		trk.Block(blk)
		if n%(100*per) == 0 {
			rec.Collect(false)
		}
	}
}

// Two payments that reach one presigned sequence carry the same bytes: the
// one in flight keeps the entry, and the other's refusal does not erase it,
// so its commit is still counted.
func TestSameBytesStayWithThePaymentInFlight(t *testing.T) {
	f := newFixture()
	first := Pending{Intended: 100 * time.Millisecond, Sent: 100 * time.Millisecond, Sender: 1, Nonce: 9}
	second := Pending{Intended: 300 * time.Millisecond, Sent: 300 * time.Millisecond, Sender: 1, Nonce: 9}
	if !f.trk.Track(id("x"), first) || f.trk.Track(id("x"), second) {
		t.Fatal("the second payment of the same bytes was tracked over the first")
	}
	f.trk.Untrack(id("x"), second)
	f.trk.Block(&sut.Block{Height: 2, Seen: f.at(time.Second), Final: true, Txs: []sut.TxResult{{ID: id("x"), OK: true}}})
	if len(f.resolved) != 1 || f.resolved[0].Outcome != Committed || f.rec.Collect(false).Committed != 1 {
		t.Fatalf("resolutions %+v: the first payment's commit was lost", f.resolved)
	}
}

// pendingBench is an empty tracker and b.N distinct ids for the pending
// benchmarks.
func pendingBench(b *testing.B) (*Tracker, []sut.TxID) {
	rec := measure.NewRecorder()
	ids := make([]sut.TxID, b.N)
	for i := range ids {
		ids[i] = sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	return New(func(Resolution) {}, time.Now(), rec.NewShard()), ids
}

// BenchmarkTrackPending is the tracker's cost per payment against a system
// that commits nothing (the sink): every payment stays pending, so the
// tables grow to millions of entries; the run expires the oldest second by
// second, as the runner does.
func BenchmarkTrackPending(b *testing.B) {
	trk, ids := pendingBench(b)
	const perSecond = 400_000
	b.ReportAllocs()
	b.ResetTimer()
	for i, id := range ids {
		at := time.Duration(i) * time.Second / perSecond
		trk.Track(id, Pending{Intended: at, Sent: at, Nonce: uint64(i)})
		if i%perSecond == perSecond-1 {
			trk.Expire(at - 30*time.Second)
		}
	}
}

// BenchmarkTrackAllPending is BenchmarkTrackPending's payments tracked a
// batch at a time, as a lane does (TrackAll).
func BenchmarkTrackAllPending(b *testing.B) {
	trk, ids := pendingBench(b)
	const perSecond, per = 400_000, 256
	var batch Batch
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < len(ids); i += per {
		batch.Reset()
		for k := i; k < min(i+per, len(ids)); k++ {
			at := time.Duration(k) * time.Second / perSecond
			batch.Add(ids[k], Pending{Intended: at, Sent: at, Nonce: uint64(k)})
		}
		trk.TrackAll(&batch)
		if i/perSecond != (i+per)/perSecond {
			trk.Expire(time.Duration(i)*time.Second/perSecond - 30*time.Second)
		}
	}
}

// A batch is tracked as its payments one by one would be: the same bytes
// twice in a batch, or already in flight, are refused, and what is tracked
// resolves from a block.
func TestTrackAllAgreesWithTrack(t *testing.T) {
	one, all := newFixture(), newFixture()
	var b Batch
	want := []bool{}
	for i := 0; i < 2000; i++ {
		name := string(rune('a' + i%1500)) // 500 repeats, in and across batches
		p := Pending{Intended: time.Duration(i), Sent: time.Duration(i), Sender: int32(i % 7), Nonce: uint64(i)}
		want = append(want, one.trk.Track(id(name), p))
		b.Add(id(name), p)
		if len(b.IDs) == 300 || i == 1999 {
			all.trk.TrackAll(&b)
			for k, ok := range b.OK {
				if w := want[len(want)-len(b.OK)+k]; ok != w {
					t.Fatalf("payment %d: tracked %v in a batch, %v alone", len(want)-len(b.OK)+k, ok, w)
				}
			}
			b.Reset()
		}
	}
	if one.trk.Len() != 1500 || all.trk.Len() != one.trk.Len() {
		t.Fatalf("%d tracked in batches, %d alone, expected 1500", all.trk.Len(), one.trk.Len())
	}
	blk := &sut.Block{Height: 2, Seen: one.at(time.Second), Final: true}
	for i := 0; i < 1500; i++ {
		blk.Txs = append(blk.Txs, sut.TxResult{ID: id(string(rune('a' + i))), OK: true})
	}
	one.trk.Block(blk)
	all.trk.Block(blk)
	if c1, c2 := one.rec.Collect(false).Committed, all.rec.Collect(false).Committed; c1 != 1500 || c2 != c1 {
		t.Fatalf("committed %d from batches, %d alone, expected 1500", c2, c1)
	}
	for i := range one.resolved {
		if one.resolved[i].Pending != all.resolved[i].Pending {
			t.Fatalf("resolution %d: %+v from batches, %+v alone", i, all.resolved[i].Pending, one.resolved[i].Pending)
		}
	}
}
