package telemetry

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// counter is a source whose value the test sets.
type counter struct{ v []float64 }

func (c *counter) Metrics() []Metric {
	return []Metric{{Name: "x.total", Rate: true, PerPayment: true}, {Name: "x.gauge"}}
}
func (c *counter) Sample(_ context.Context, dst []float64) error { copy(dst, c.v); return nil }
func (c *counter) Close()                                        {}

func TestRatesAndGauges(t *testing.T) {
	c := &counter{v: []float64{100, 7}}
	s := NewSampler([]Source{c})
	s.sample(context.Background(), nil)
	if v := s.Snapshot(time.Time{}).Values; v["x.gauge"] != 7 || len(v) != 1 {
		t.Errorf("first read: %v, want the gauge and no rate yet", v)
	}
	time.Sleep(200 * time.Millisecond)
	c.v = []float64{160, 9}
	s.sample(context.Background(), nil)
	v := s.Snapshot(time.Time{}).Values
	if r := v["x.total"]; r < 200 || r > 320 { // 60 over ~0.2 s
		t.Errorf("rate %v, want about 300/s", r)
	}
	if v["x.gauge"] != 9 {
		t.Errorf("gauge %v", v["x.gauge"])
	}
	c.v = []float64{10, math.NaN()} // a counter that went back (restart) and a gauge that could not be read
	s.sample(context.Background(), nil)
	if v := s.Snapshot(time.Time{}).Values; len(v) != 0 {
		t.Errorf("after a reset and a missing read: %v, want both absent", v)
	}
	// The totals keep the one interval read at both ends: 60 over ~0.2 s.
	tot := s.Snapshot(time.Time{}).Totals["x.total"]
	if tot.Inc != 60 || tot.Secs < 0.2 || tot.Secs > 0.4 {
		t.Errorf("totals %+v, want 60 over about 0.2 s", tot)
	}
	// As of a moment before the next read: the totals before it. (The
	// reset left 10 as the last reading.)
	c.v = []float64{100, 1}
	s.sample(context.Background(), nil)
	if got := s.Snapshot(tot.At).Totals["x.total"]; got.Inc != 60 {
		t.Errorf("totals as of the read that made them: %+v, want 60", got)
	}
	if got := s.Snapshot(time.Now()).Totals["x.total"]; got.Inc != 150 {
		t.Errorf("totals now: %+v, want 60 + 90", got)
	}
	if got, ok := s.Snapshot(tot.At.Add(-time.Millisecond)).Totals["x.total"]; ok {
		t.Errorf("totals as of before both reads kept: %+v, want none", got)
	}
}

func TestWindowStats(t *testing.T) {
	var w Window
	w.Add(Snapshot{Values: map[string]float64{"x.total": 100, "x.gauge": 1}})
	w.Add(Snapshot{Values: map[string]float64{"x.total": 300}})
	st := w.Stats((&counter{}).Metrics(), 50)
	if st["x.total"].Mean != 200 || st["x.total"].Max != 300 || st["x.total"].Seconds != 2 || st["x.gauge"].Seconds != 1 {
		t.Errorf("stats %+v", st)
	}
	if pp := st["x.total_per_payment"]; pp.Mean != 4 {
		t.Errorf("per payment %+v, want 200/50 = 4", pp)
	}
}

// A sampler that ran late: the run's seconds saw one burst twice (0.3 s at
// 1000/s read as the rate of two seconds) and missed a quiet stretch. The
// mean is the increase over the time read, the busiest second a stretch of
// at least 0.9 s.
func TestWindowRatesFromTotals(t *testing.T) {
	var w Window
	w.Before(Snapshot{Totals: map[string]Total{"x.total": {Inc: 1000, Secs: 5}}})
	for _, s := range []struct {
		rate float64
		tot  Total
	}{
		{100, Total{Inc: 1100, Secs: 6}},
		{1000, Total{Inc: 1400, Secs: 6.3}},
		{1000, Total{Inc: 1400, Secs: 6.3}}, // the same sample, read again
		{50, Total{Inc: 1500, Secs: 8.3}},
		{100, Total{Inc: 1600, Secs: 9.3}},
	} {
		w.Add(Snapshot{Values: map[string]float64{"x.total": s.rate}, Totals: map[string]Total{"x.total": s.tot}})
	}
	st := w.Stats((&counter{}).Metrics(), 0)["x.total"]
	if st.Mean != round(600/4.3) || st.Seconds != 5 {
		t.Errorf("mean %v over %d seconds, want %v (600 over 4.3 s) over 5", st.Mean, st.Seconds, round(600/4.3))
	}
	// Stretches: 5-6 s (100/s), 6-8.3 s (400 over 2.3 s), 8.3-9.3 s (100/s).
	if st.Max != round(400/2.3) {
		t.Errorf("busiest %v, want %v", st.Max, round(400/2.3))
	}
}

// This test process, read from the real /proc.
func TestProcessReadsProc(t *testing.T) {
	p := NewProcess("self", "service", os.Getpid(), true)
	dst := make([]float64, len(p.Metrics()))
	if err := p.Sample(context.Background(), dst); err != nil {
		t.Fatal(err)
	}
	if dst[1] < 1<<20 || dst[2] < 1 || dst[3] < 3 {
		t.Errorf("rss %v, threads %v, fds %v", dst[1], dst[2], dst[3])
	}
	for _, m := range p.Metrics() {
		if m.Role != "service" {
			t.Errorf("%s has role %q", m.Name, m.Role)
		}
	}
	if err := NewProcess("gone", "", 1<<30, false).Sample(context.Background(), dst); err == nil {
		t.Error("a process that does not exist was read")
	}
}

// Families are summed over series and endpoints, read with the real
// Prometheus client and parser.
func TestPrometheusScrape(t *testing.T) {
	var srvs []*httptest.Server
	for i := 0; i < 2; i++ {
		reg := prometheus.NewRegistry()
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paid_total"}, []string{"kind"})
		c.WithLabelValues("a").Add(3)
		c.WithLabelValues("b").Add(4)
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "queue"})
		g.Set(5)
		reg.MustRegister(c, g)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		defer srv.Close()
		srvs = append(srvs, srv)
	}
	p := NewPrometheus([]string{srvs[0].URL, srvs[1].URL}, []PromMetric{
		{Family: "paid_total", Metric: Metric{Name: "paid", Rate: true}},
		{Family: "queue", Metric: Metric{Name: "queue"}},
		{Family: "absent", Metric: Metric{Name: "absent"}},
	})
	dst := make([]float64, 3)
	if err := p.Sample(context.Background(), dst); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 14 || dst[1] != 10 || dst[2] != 0 {
		t.Errorf("scraped %v, want [14 10 0]", dst)
	}
	srvs[1].Close()
	if err := p.Sample(context.Background(), dst); err == nil || !math.IsNaN(dst[0]) {
		t.Errorf("with an endpoint down: %v %v, want an error and no values", dst, err)
	}
}
