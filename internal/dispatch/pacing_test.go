package dispatch

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/confirm"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// instant acknowledges every submission at once.
type instant struct{}

func (instant) Probe(context.Context) (sut.Info, error) { return sut.Info{Height: 1}, nil }
func (instant) Submitter(int) sut.Submitter             { return instant{} }
func (instant) Submit(context.Context, sut.Tx) sut.Receipt {
	return sut.Receipt{Status: sut.Pending}
}
func (instant) Confirmer() sut.Confirmer { return nil }
func (instant) Close() error             { return nil }

func runAt(rate float64, d time.Duration) (sent int64, elapsed time.Duration, lag measure.Percentiles) {
	rec := measure.NewRecorder()
	e := &Engine{Target: instant{}, Workload: workload.NewRaw("bench", 0), Recorder: rec, Connections: 8}
	start := time.Now()
	e.Tracker = confirm.New(e.Resolve, start, rec.NewShard())
	e.Start(start)
	ctx := context.Background()
	e.RunOpen(ctx, ctx, schedule.NewArrivals(schedule.Constant(rate, d), false, 1), time.Second)
	elapsed = e.Since()
	iv := rec.Collect(false)
	return iv.Sent, elapsed, measure.Summarize(iv.Lag)
}

// BenchmarkPacingAccuracy sends at 2000/s for 10 s and reports the achieved
// rate as a ratio of the target (1.0 is exact). It is a benchmark, not a
// test: its figure depends on how idle the machine is.
func BenchmarkPacingAccuracy(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sent, elapsed, lag := runAt(2000, 10*time.Second)
		b.ReportMetric(float64(sent)/elapsed.Seconds()/2000, "achieved/target")
		b.ReportMetric(lag.P99, "lag-p99-ms")
	}
}

func TestPacingSendsEveryArrival(t *testing.T) {
	sent, _, _ := runAt(1000, 500*time.Millisecond)
	if sent != 500 {
		t.Fatalf("sent %d, want 500", sent)
	}
}

// stalling hands out senders like Raw but holds the dispatcher once, the
// way a starved or busy dispatcher is held, while the run is interrupted.
type stalling struct {
	*workload.Raw
	at    time.Duration
	e     *Engine
	hold  time.Duration
	onHit func()
	done  bool
}

func (s *stalling) Reserve() int {
	if !s.done && s.e.Since() >= s.at {
		s.done = true
		s.onHit()
		time.Sleep(s.hold)
	}
	return 0
}

// An interrupt while the dispatcher is held counts every arrival due by the
// interrupt offered (and unsent), not only those it had taken in (issue 34).
func TestInterruptCountsDueArrivalsOffered(t *testing.T) {
	rec := measure.NewRecorder()
	e := &Engine{Target: instant{}, Recorder: rec, Connections: 4}
	offer, stop := context.WithCancel(context.Background())
	var stoppedAt time.Duration
	w := &stalling{Raw: workload.NewRaw("stall", 0), at: 200 * time.Millisecond, e: e, hold: 500 * time.Millisecond}
	w.onHit = func() {
		time.AfterFunc(100*time.Millisecond, func() { stoppedAt = e.Since(); stop() })
	}
	e.Workload = w
	start := time.Now()
	e.Tracker = confirm.New(e.Resolve, start, rec.NewShard())
	e.Start(start)
	e.RunOpen(offer, context.Background(), schedule.NewArrivals(schedule.Constant(1000, 2*time.Second), false, 1), 0)
	iv := rec.Collect(false)
	due := int64(stoppedAt.Seconds() * 1000)
	if iv.Offered < due-5 || iv.Offered > due+5 {
		t.Fatalf("offered %d, want about %d (1000/s until the interrupt at %v)", iv.Offered, due, stoppedAt)
	}
	if iv.Offered != iv.Sent+iv.Unsent {
		t.Fatalf("offered %d != sent %d + unsent %d", iv.Offered, iv.Sent, iv.Unsent)
	}
}

// Lanes per endpoint follow the peak rate, one per PerLane, up to GOMAXPROCS.
func TestLanesFor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, c := range []struct {
		peak      float64
		endpoints int
		want      int
	}{{0, 1, 1}, {1000, 1, 1}, {PerLane, 1, 1}, {1.5 * PerLane, 1, 2}, {1.5 * PerLane, 2, 1}, {10 * PerLane, 1, 4}, {10 * PerLane, 0, 1}} {
		if got := LanesFor(c.peak, c.endpoints); got != c.want {
			t.Errorf("LanesFor(%g, %d) = %d, want %d", c.peak, c.endpoints, got, c.want)
		}
	}
}
