// Package telemetry reads the system under test from the inside while a run
// goes: processes from /proc, Prometheus endpoints, database statistics.
// Each source is sampled once a second; cumulative counters become rates.
// The runner puts the values in every second of the series and their
// steady-window mean and maximum in the summary. docs/metrics.md defines
// every metric.
package telemetry

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Metric is one measured quantity.
type Metric struct {
	Name string `json:"name"` // dotted, e.g. db.xact_commit
	Unit string `json:"unit"` // of the reported value: 1/s for rates, %, bytes, ...
	Help string `json:"help"`
	// Rate marks a cumulative counter: the series holds its increase per
	// second.
	Rate bool `json:"rate,omitempty"`
	// Better is "lower", "higher" or "" (no direction): compare uses it.
	Better string `json:"better,omitempty"`
	// PerPayment asks the summary for the rate over committed payments
	// too (database transactions per payment, bytes per payment).
	PerPayment bool `json:"per_payment,omitempty"`
	// Role is what the measured thing is in the system: database, service,
	// validator (find-max names the limit by it).
	Role string `json:"role,omitempty"`
}

// UnitPer is the unit of a rate's per-payment figure.
func (m Metric) UnitPer() string {
	u := strings.TrimSuffix(m.Unit, "/s")
	if u == "1" || u == "" {
		return "per payment"
	}
	return u + " per payment"
}

// Source is something sampled once a second.
type Source interface {
	// Metrics lists what Sample reads, in order.
	Metrics() []Metric
	// Sample reads the current values into dst (len(Metrics())); NaN
	// marks a value it could not read.
	Sample(ctx context.Context, dst []float64) error
	Close()
}

// Statements is a source that knows which statements took the most time
// (a database); it is asked once, at the end of a run.
type Statements interface {
	Slowest(ctx context.Context) ([]Statement, error)
}

// Statement is one of the statements that took the most time in all.
type Statement struct {
	Query   string  `json:"query"`
	Calls   int64   `json:"calls"`
	TotalMs float64 `json:"total_ms"`
	MeanMs  float64 `json:"mean_ms"`
	MaxMs   float64 `json:"max_ms"`
	Rows    int64   `json:"rows"`
}

// Sampler samples its sources once a second and keeps the last second's
// values.
type Sampler struct {
	sources []Source
	metrics [][]Metric
	mu      sync.Mutex
	prev    [][]float64
	prevAt  []time.Time
	last    map[string]float64
	totals  map[string][2]Total // the latest and the one before
	errs    map[int]string      // the last error of each source, for the log
}

// Total is a rate metric's increase summed over the intervals it could be
// read in both ends of, and those intervals' length, as of the read at At:
// a window's mean rate is the difference of two Totals, exact however the
// samples fell.
type Total struct {
	Inc, Secs float64
	At        time.Time
}

// NewSampler samples sources.
func NewSampler(sources []Source) *Sampler {
	s := &Sampler{sources: sources, last: map[string]float64{}, totals: map[string][2]Total{}, errs: map[int]string{}}
	for _, src := range sources {
		m := src.Metrics()
		s.metrics = append(s.metrics, m)
		s.prev = append(s.prev, nil)
		s.prevAt = append(s.prevAt, time.Time{})
	}
	return s
}

// Metrics lists every metric of every source.
func (s *Sampler) Metrics() []Metric {
	var out []Metric
	for _, m := range s.metrics {
		out = append(out, m...)
	}
	return out
}

// Run samples every second until ctx ends.
func (s *Sampler) Run(ctx context.Context, onError func(source int, err error)) {
	s.sample(ctx, onError)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sample(ctx, onError)
		}
	}
}

func (s *Sampler) sample(ctx context.Context, onError func(int, error)) {
	var wg sync.WaitGroup
	for i, src := range s.sources {
		wg.Add(1)
		go func(i int, src Source) {
			defer wg.Done()
			cur := make([]float64, len(s.metrics[i]))
			for j := range cur {
				cur[j] = math.NaN()
			}
			sctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
			err := src.Sample(sctx, cur)
			cancel()
			now := time.Now()
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				if msg := err.Error(); s.errs[i] != msg && onError != nil && ctx.Err() == nil {
					s.errs[i] = msg
					onError(i, err)
				}
			}
			for j, m := range s.metrics[i] {
				v := cur[j]
				if m.Rate {
					if s.prev[i] == nil || math.IsNaN(v) || math.IsNaN(s.prev[i][j]) || v < s.prev[i][j] {
						v = math.NaN()
					} else {
						dt := now.Sub(s.prevAt[i]).Seconds()
						tot := s.totals[m.Name]
						cur := Total{Inc: tot[0].Inc + v - s.prev[i][j], Secs: tot[0].Secs + dt, At: now}
						s.totals[m.Name] = [2]Total{cur, tot[0]}
						v = (v - s.prev[i][j]) / dt
					}
				}
				if math.IsNaN(v) {
					delete(s.last, m.Name)
				} else {
					s.last[m.Name] = round(v)
				}
			}
			s.prev[i], s.prevAt[i] = cur, now
		}(i, src)
	}
	wg.Wait()
}

var nan = math.NaN()

func round(v float64) float64 {
	if math.Abs(v) >= 100 {
		return math.Round(v)
	}
	return math.Round(v*100) / 100
}

// latest is a copy of the last second's values, by metric name.
func (s *Sampler) latest() map[string]float64 {
	if len(s.last) == 0 {
		return nil
	}
	out := make(map[string]float64, len(s.last))
	for k, v := range s.last {
		out[k] = v
	}
	return out
}

// Snapshot is the last second's values and the rate metrics' totals, read
// together.
type Snapshot struct {
	Values map[string]float64
	Totals map[string]Total
}

// Snapshot copies the last second's values and the totals as of at: each
// from the latest read at or before it (a window that ends at at must not
// take in a read after it, such as a fault's undoing right after the load),
// or the latest read when at is zero.
func (s *Sampler) Snapshot(at time.Time) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.latest()
	t := make(map[string]Total, len(s.totals))
	for k, x := range s.totals {
		switch {
		case at.IsZero() || !x[0].At.After(at):
			t[k] = x[0]
		case !x[1].At.IsZero() && !x[1].At.After(at):
			t[k] = x[1]
		}
	}
	return Snapshot{Values: v, Totals: t}
}

// Slowest asks the sources that know for their slowest statements; the
// errors are those sources' that could not answer.
func (s *Sampler) Slowest(ctx context.Context) ([]Statement, []error) {
	var out []Statement
	var errs []error
	for _, src := range s.sources {
		if f, ok := src.(Statements); ok {
			st, err := f.Slowest(ctx)
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, st...)
		}
	}
	return out, errs
}

// Close closes every source.
func (s *Sampler) Close() {
	for _, src := range s.sources {
		src.Close()
	}
}

// Stat is a metric over the steady window.
type Stat struct {
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max,omitempty"`
	Seconds int     `json:"seconds"` // seconds with a value
}

// Window aggregates seconds into Stats. A rate metric's mean is its
// increase over the window divided by the time it was read over (the
// Totals at the window's ends), and its busiest second the highest rate
// over a stretch of at least 0.9 s: the mean of per-second rates would
// count a sample twice when the sampler runs late (a busy machine) and
// weigh a short interval's burst as a whole second.
type Window struct {
	sum  map[string]float64
	max  map[string]float64
	n    map[string]int
	base map[string]Total // rate metrics: totals before the window
	mark map[string]Total // and at the end of the last stretch counted
	last map[string]Total // and at its last second
	rmax map[string]float64
}

// Before notes the totals of a second before the window, so the window's
// rates start where it starts.
func (w *Window) Before(s Snapshot) {
	if w.sum == nil {
		w.base = s.Totals
	}
}

// Add adds one second of the window.
func (w *Window) Add(s Snapshot) {
	if w.sum == nil {
		w.sum, w.max, w.n = map[string]float64{}, map[string]float64{}, map[string]int{}
		w.mark, w.last, w.rmax = map[string]Total{}, map[string]Total{}, map[string]float64{}
		if w.base == nil {
			w.base = map[string]Total{}
		}
	}
	for k, x := range s.Values {
		w.sum[k] += x
		if w.n[k] == 0 || x > w.max[k] {
			w.max[k] = x
		}
		w.n[k]++
	}
	for k, t := range s.Totals {
		if _, ok := w.base[k]; !ok {
			w.base[k] = t // first read inside the window
		}
		if _, ok := w.mark[k]; !ok {
			w.mark[k] = w.base[k]
		}
		w.last[k] = t
		m := w.mark[k]
		if d := t.Secs - m.Secs; d >= 0.9 {
			if r := (t.Inc - m.Inc) / d; r > w.rmax[k] {
				w.rmax[k] = r
			}
			w.mark[k] = t
		}
	}
}

// Stats is the window's mean and maximum of each metric, and for the
// metrics that ask for it, the mean per committed payment
// (<name>_per_payment: the mean rate over committedTPS, or over its own
// source's committed counter where it has one).
func (w *Window) Stats(metrics []Metric, committedTPS float64) map[string]Stat {
	if len(w.n) == 0 {
		return nil
	}
	out := make(map[string]Stat, len(w.n))
	raw := make(map[string]float64, len(w.n)) // the means unrounded, for ratios
	for k, n := range w.n {
		mean := w.sum[k] / float64(n)
		st := Stat{Max: w.max[k], Seconds: n}
		if last, ok := w.last[k]; ok {
			if d := last.Secs - w.base[k].Secs; d >= 0.9 {
				mean = (last.Inc - w.base[k].Inc) / d
			}
			if r, ok := w.rmax[k]; ok {
				st.Max = round(r)
			}
		}
		st.Mean, raw[k] = round(mean), mean
		out[k] = st
	}
	for _, m := range metrics {
		st, ok := out[m.Name]
		if !ok || !m.PerPayment {
			continue
		}
		// Over the payments its own source counted committed, sampled at
		// the same instants (a service's ledger.committed), where it has
		// such a counter: a ratio of two counters read at different
		// instants drifts (0.885 database transactions a payment where each
		// payment is one).
		// Both unrounded: rates of 100 and more are kept whole, and 599.49
		// over 600.5 read as 599/601 is 0.997 where each payment is one.
		per := committedTPS
		if i := strings.LastIndexByte(m.Name, '.'); i > 0 {
			if c, ok := raw[m.Name[:i]+".committed"]; ok && c > 0 && m.Name[:i]+".committed" != m.Name {
				per = c
			}
		}
		if per > 0 {
			out[m.Name+"_per_payment"] = Stat{Mean: math.Round(raw[m.Name]/per*1000) / 1000, Seconds: st.Seconds}
		}
	}
	return out
}

// Names lists a map's metric names, sorted.
func Names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Describe is a metric's one-line description, for docs and tables.
func (m Metric) Describe() string {
	return fmt.Sprintf("%s (%s): %s", m.Name, m.Unit, m.Help)
}
