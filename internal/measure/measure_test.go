package measure

import (
	"fmt"
	"testing"
	"time"
)

// Each shard records on its own; Collect swaps and merges them into the
// second and into the running totals, steady only when asked.
func TestShardsMergeIntoSecondsAndTotals(t *testing.T) {
	r := NewRecorder()
	a, b := r.NewShard(), r.NewShard()
	a.Offered(0)
	a.Sent(2 * time.Millisecond)
	a.Acked(true, false, "", 5*time.Millisecond)
	b.Offered(0)
	b.Sent(time.Millisecond)
	b.Acked(false, false, "mempool_full", 3*time.Millisecond)
	b.Offered(0)
	b.Sent(time.Millisecond)
	b.Acked(false, true, "timeout", 10*time.Second)
	b.Mismatch("chain_lower", 3, false)
	br := a.Block()
	br.Committed(true, "", 600*time.Millisecond, 598*time.Millisecond, false)
	br.End(BlockStat{Height: 7, Txs: 10, Bytes: 1420, IntervalMs: 600})
	s1 := r.Collect(false)
	if s1.Offered != 3 || s1.Sent != 3 || s1.Accepted != 1 || s1.Rejected["mempool_full"] != 1 || s1.Unacked["timeout"] != 1 ||
		s1.Committed != 1 || s1.Mismatches["chain_lower"] != 1 || s1.Resubmitted != 3 || len(s1.Blocks) != 1 || s1.Ack.TotalCount() != 3 {
		t.Fatalf("first second %+v", s1.Counts)
	}
	if p := Summarize(s1.Commit); p.Count != 1 || p.Max < 594 || p.Max > 606 { // a second's histograms: 2 digits

		t.Errorf("commit percentiles %+v", p)
	}
	a.Expired(2)
	s2 := r.Collect(true)
	if s2.Offered != 0 || s2.Expired != 2 || len(s2.Blocks) != 0 {
		t.Fatalf("second second %+v: the first was not swapped out", s2.Counts)
	}
	if r.Total.Offered != 3 || r.Total.Expired != 2 || r.Total.Committed != 1 || r.Total.BlockAgg.Count != 1 || len(r.Total.Blocks) != 0 {
		t.Fatalf("totals %+v, blocks kept %d", r.Total.Counts, len(r.Total.Blocks))
	}
	if r.Steady.Expired != 2 || r.Steady.Offered != 0 || r.Steady.Ack.TotalCount() != 0 {
		t.Fatalf("steady %+v", r.Steady.Counts)
	}
	if s2.Ack.TotalCount() != 0 || r.Total.Ack.TotalCount() != 3 || r.Total.Commit.TotalCount() != 1 {
		t.Errorf("histograms: second %d acks, totals %d acks %d commits", s2.Ack.TotalCount(), r.Total.Ack.TotalCount(), r.Total.Commit.TotalCount())
	}
}

// Summarize reads the quantiles ValueAtQuantile and Max would.
func TestSummarizeQuantiles(t *testing.T) {
	h := NewInterval().Ack
	for v := int64(1); v <= 100000; v += 7 {
		_ = h.RecordValue(v % 5003 * v % 97 * 13)
	}
	p := Summarize(h)
	want := Percentiles{Count: h.TotalCount(), Mean: p.Mean, P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)),
		P99: ms(h.ValueAtQuantile(99)), P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
	if p != want {
		t.Errorf("%+v, want %+v", p, want)
	}
}

// BenchmarkSecond is the once-a-second cost of a second's latencies: a
// thousand payments recorded, their quantiles read for the series, and
// the histograms cleared for the next second.
func BenchmarkSecond(b *testing.B) {
	for _, digits := range []int{sigFigs, secondSigFigs} {
		b.Run(fmt.Sprintf("digits=%d", digits), func(b *testing.B) {
			iv := newInterval(digits)
			b.ReportAllocs()
			for b.Loop() {
				for k := int64(0); k < 1000; k++ {
					_ = iv.Commit.RecordValue(400_000 + k*600)
					_ = iv.Ack.RecordValue(2_000 + k*7)
					_ = iv.Lag.RecordValue(10 + k*19)
				}
				Summarize(iv.Ack)
				Summarize(iv.Commit)
				Summarize(iv.Lag)
				iv.reset()
			}
		})
	}
}

// An offer recorded before its second's tick, but intended after the cut,
// counts in the next second: per-second offered counts follow the intended
// times, not the collector's lateness.
func TestOfferedCountsInItsIntendedSecond(t *testing.T) {
	r := NewRecorder()
	s := r.NewShard()
	s.Offered(900 * time.Millisecond)
	s.Offered(1010 * time.Millisecond) // due, and recorded, before a late tick for second 1
	if iv := r.CollectUntil(false, 2*time.Second); iv.Offered != 1 {
		t.Fatalf("second 1: %d offered, want 1", iv.Offered)
	}
	s.Offered(1500 * time.Millisecond)
	if iv := r.CollectUntil(false, 3*time.Second); iv.Offered != 2 {
		t.Fatalf("second 2: %d offered, want 2 (one early from before)", iv.Offered)
	}
	s.Offered(3100 * time.Millisecond)
	if iv := r.Collect(false); iv.Offered != 1 || r.Total.Offered != 4 {
		t.Fatalf("the last collection: %d offered (total %d), want the early one counted", iv.Offered, r.Total.Offered)
	}
}

// A mix's commit latencies are kept per kind in the totals (not per
// second), from blocks and from answers alike, failures included.
func TestCommitLatencyByKind(t *testing.T) {
	r := NewRecorder()
	a := r.NewShard()
	br := a.Block()
	br.Committed(true, "", 400*time.Millisecond, 399*time.Millisecond, false)
	br.ByKind("send", true, 400*time.Millisecond)
	br.Committed(false, "out_of_gas", 900*time.Millisecond, 899*time.Millisecond, false)
	br.ByKind("multi_send", false, 900*time.Millisecond)
	br.End(BlockStat{Height: 3})
	a.Settled([32]byte{1}, true, "", 2*time.Second, 2*time.Second, false)
	a.SettledKind("multi_send", true, 2*time.Second)
	sec := r.Collect(true)
	if sec.CommitByKind != nil {
		t.Errorf("a second keeps per-kind histograms: %v", sec.CommitByKind)
	}
	for _, iv := range []*Interval{r.Total, r.Steady} {
		send, multi := Summarize(iv.CommitByKind["send"]), Summarize(iv.CommitByKind["multi_send"])
		if send.Count != 1 || send.Max < 399 || send.Max > 401 || multi.Count != 2 || multi.P50 < 899 || multi.P50 > 901 || multi.Max < 1998 || multi.Max > 2002 {
			t.Errorf("send %+v, multi_send %+v", send, multi)
		}
		if iv.CommittedByKind["multi_send"] != 1 || iv.FailedByKind["multi_send"] != 1 || iv.CommittedByKind["send"] != 1 {
			t.Errorf("counts %v / %v", iv.CommittedByKind, iv.FailedByKind)
		}
	}
	r.Collect(false)
	if n := r.Steady.CommitByKind["send"].TotalCount(); n != 1 {
		t.Errorf("steady send count %d after a second outside the window", n)
	}
}

// Late commits never make a second's expired negative in the series, and
// the series still adds up to the run's expired (issue 34: -5,116).
func TestLateCommitsKeepSecondsNonNegative(t *testing.T) {
	r := NewRecorder()
	s := r.NewShard()
	s.Expired(7)
	first := r.Collect(true).Counts.PerSecond()
	for range 5 {
		s.Settled([32]byte{2}, true, "", 40*time.Second, 39*time.Second, true)
	}
	second := r.Collect(true).Counts.PerSecond()
	if first.Expired != 7 || second.Expired != 0 || second.LateCommits != 5 {
		t.Fatalf("seconds: expired %d then %d (late %d)", first.Expired, second.Expired, second.LateCommits)
	}
	sum := first.Expired + second.Expired - first.LateCommits - second.LateCommits
	if tot := r.Total.Expired; tot != 2 || sum != tot {
		t.Fatalf("run expired %d, series sums to %d", tot, sum)
	}
}
