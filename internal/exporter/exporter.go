// Package exporter serves a run's live figures in the Prometheus exposition
// format (--metrics-addr): payment counters by outcome and reason, latency
// histograms (classic buckets and native), gauges of what is in flight, the
// inside-the-system telemetry, and the summary's headline and cost figures.
// It is fed by the runner like every other observer, once a second, so it
// costs the hot path nothing; its counters equal result.json's at the end.
package exporter

import (
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// Exporter holds the run's metrics in its own registry.
type Exporter struct {
	Registry *prometheus.Registry

	// counters and byReason follow measure.Counters, entry by entry.
	counters                                     []prometheus.Counter
	byReason                                     []*prometheus.CounterVec
	inFlight, mempool, targetRate, genCPU, phase prometheus.Gauge
	commit, ack, lag                             prometheus.Histogram
	inside                                       *prometheus.GaugeVec
	summary                                      *prometheus.GaugeVec

	srv *http.Server
	ln  net.Listener
}

// latencyBuckets are the classic buckets (seconds) served beside the
// native histogram, for servers without native histograms.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 3, 5, 10, 30, 60}

// New makes an exporter; run labels every series with the run's id.
func New(run string) *Exporter {
	reg := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tpslab", Name: name, Help: help, ConstLabels: prometheus.Labels{"run": run}})
		reg.MustRegister(c)
		return c
	}
	vec := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tpslab", Name: name, Help: help, ConstLabels: prometheus.Labels{"run": run}}, []string{"reason"})
		reg.MustRegister(c)
		return c
	}
	g := func(name, help string) prometheus.Gauge {
		c := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tpslab", Name: name, Help: help, ConstLabels: prometheus.Labels{"run": run}})
		reg.MustRegister(c)
		return c
	}
	h := func(name, help string) prometheus.Histogram {
		c := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tpslab", Name: name, Help: help, ConstLabels: prometheus.Labels{"run": run},
			Buckets: latencyBuckets, NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour})
		reg.MustRegister(c)
		return c
	}
	e := &Exporter{Registry: reg,
		inFlight:   g("in_flight", "payments accepted and not yet resolved"),
		mempool:    g("mempool_txs", "transactions in the target's mempool"),
		targetRate: g("target_rate", "the schedule's rate this second (open model)"),
		genCPU:     g("generator_cpu_percent", "tpslab's CPU, % of one core"),
		phase:      g("steady", "1 while the second is in the steady window, else 0"),
		commit:     h("commit_latency_seconds", "intended send time to commit observed"),
		ack:        h("ack_latency_seconds", "intended send time to the target's answer"),
		lag:        h("schedule_lag_seconds", "intended to actual send time"),
	}
	for _, d := range measure.Counters {
		var c prometheus.Counter
		var v *prometheus.CounterVec
		if d.Reasons != nil {
			v = vec(d.Prom, d.Help)
			// Known reasons start at 0, so rate() reads 0, not "no data",
			// before the first one.
			for _, r := range d.Known {
				v.WithLabelValues(r)
			}
		} else {
			c = f(d.Prom, d.Help)
		}
		e.counters, e.byReason = append(e.counters, c), append(e.byReason, v)
	}
	// One name, node and metric as labels, so `sum by (node)` needs no
	// regular expression (links between nodes are node "links").
	e.inside = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tpslab", Name: "node", Help: "telemetry read from inside the system this second, by node (or process) and metric (docs/metrics.md names each metric)", ConstLabels: prometheus.Labels{"run": run}}, []string{"node", "metric"})
	e.summary = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tpslab", Name: "summary", Help: "the summary's figures as of the last checkpoint (committed_tps, p99_commit in ms, node_cpu_us_per_tx, ...)", ConstLabels: prometheus.Labels{"run": run}}, []string{"metric"})
	reg.MustRegister(e.inside, e.summary, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return e
}

// Listen serves /metrics on addr until Close.
func (e *Exporter) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	e.ln, e.srv = ln, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go e.srv.Serve(ln)
	return nil
}

// Addr is where it listens.
func (e *Exporter) Addr() string { return e.ln.Addr().String() }

// Close stops serving.
func (e *Exporter) Close() error {
	if e.srv == nil {
		return nil
	}
	return e.srv.Close()
}

// Second adds one collected second.
func (e *Exporter) Second(s *report.Second, iv *measure.Interval, _ bool) {
	for i, d := range measure.Counters {
		if d.Reasons != nil {
			for k, v := range *d.Reasons(&s.Counts) {
				e.byReason[i].WithLabelValues(k).Add(float64(v))
			}
		} else if v := *d.Scalar(&s.Counts); v != 0 {
			e.counters[i].Add(float64(v))
		}
	}
	e.inFlight.Set(float64(s.InFlight))
	e.mempool.Set(float64(s.MempoolTxs))
	e.targetRate.Set(s.TargetRate)
	e.genCPU.Set(s.GenCPU)
	steady := 0.0
	if s.Phase == "steady" {
		steady = 1
	}
	e.phase.Set(steady)
	for k, v := range s.Telemetry {
		node, metric, ok := strings.Cut(k, ".")
		if !ok {
			node, metric = "", k
		}
		e.inside.WithLabelValues(node, metric).Set(v)
	}
	if iv != nil {
		replay(e.commit, iv.Commit)
		replay(e.ack, iv.Ack)
		replay(e.lag, iv.Lag)
	}
}

// replay observes every value of a second's HDR histogram (microseconds)
// at its bucket's midpoint: the recorder keeps HDR histograms on the hot
// path, and this once-a-second copy costs it nothing.
func replay(h prometheus.Histogram, hdr *hdrhistogram.Histogram) {
	if hdr == nil || hdr.TotalCount() == 0 {
		return
	}
	for _, b := range hdr.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := float64(b.From+b.To) / 2 / 1e6
		for i := int64(0); i < b.Count; i++ {
			h.Observe(v)
		}
	}
}

// Result publishes the summary's figures, by the registry's names.
func (e *Exporter) Result(res *report.Result, _ bool) {
	for _, d := range report.Defs(nil) {
		if v, ok := d.Run(&res.Summary); ok {
			e.summary.WithLabelValues(d.Name).Set(v)
		}
	}
}
