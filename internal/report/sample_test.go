package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

// A day-long run is read for its charts in bounded points: phases and
// stages stay apart, counts stay per second, latencies keep the worst
// second, and the page does not grow with the run (issue 23, case 7).
func TestLongRunIsMergedForCharts(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	for i := 0; i < n; i++ {
		s := Second{T: float64(i), Phase: "steady", TargetRate: 100, Counts: measure.Counts{Offered: 100, Committed: 90, Rejected: map[string]int64{"x": 2}},
			CommitMs: measure.Percentiles{Count: 90, P99: 50}, Telemetry: map[string]float64{"node0.cpu_percent": 40}}
		switch {
		case i < 10:
			s.Phase = "warmup"
		case i >= n/2 && i < n-10:
			s.TargetRate, s.Offered, s.Committed = 200, 200, 180
		case i >= n-10:
			s.Phase = "drain"
		}
		if i == 12345 {
			s.CommitMs.P99 = 900 // one bad second
		}
		w.Add(s, []measure.BlockStat{{Height: int64(i + 1), Seen: float64(i) + 0.5, IntervalMs: 1000, Txs: 90}}, nil)
	}
	w.Close()
	full, err := ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadResultForCharts(dir, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Series) > 1010 || len(r.Series) < 900 || len(r.Blocks) > 1000 {
		t.Fatalf("%d points, %d blocks for %d seconds", len(r.Series), len(r.Blocks), n)
	}
	var worst float64
	var seconds int
	for i, s := range r.Series {
		seconds += s.Span
		worst = max(worst, s.CommitMs.P99)
		if i > 0 && s.T <= r.Series[i-1].T {
			t.Fatalf("point %d at t=%.0f after t=%.0f", i, s.T, r.Series[i-1].T)
		}
		want := int64(90)
		if s.TargetRate == 200 {
			want = 180
		}
		if s.Committed != want || s.Rejected["x"] != 2 || s.Telemetry["node0.cpu_percent"] != 40 {
			t.Fatalf("point %d (%s, rate %.0f, %d s): committed %d, rejected %v, cpu %v", i, s.Phase, s.TargetRate, s.Span, s.Committed, s.Rejected, s.Telemetry)
		}
	}
	if seconds != n || worst != 900 {
		t.Errorf("points hold %d seconds, worst p99 %.0f ms", seconds, worst)
	}
	if k := knee(r); len(k) != 2 || k[0].Committed != 90 || k[1].Committed != 180 {
		t.Errorf("knee %+v", k)
	}
	var page, fullPage bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&fullPage, full); err != nil { // merged in memory too
		t.Fatal(err)
	}
	if page.Len() > 2<<20 || fullPage.Len() > 3<<20 {
		t.Errorf("pages of %d and %d bytes for %d seconds", page.Len(), fullPage.Len(), n)
	}
	if !bytes.Contains(page.Bytes(), []byte(`id="merged"`)) {
		t.Error("the page does not say its points are merged")
	}
}
