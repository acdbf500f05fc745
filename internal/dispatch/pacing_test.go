package dispatch

import (
	"context"
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
