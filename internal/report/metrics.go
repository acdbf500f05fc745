package report

import (
	"regexp"
	"sort"
	"strings"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// Kind says how a metric's values read: a threshold parses its value by it.
type Kind int

const (
	CountKind   Kind = iota // a count, rate or size, as a plain number
	LatencyKind             // milliseconds (thresholds take durations)
	RatioKind               // a fraction (thresholds take percentages; compare shows %)
)

// Def is one figure of a run, defined once for everything that reads
// figures: thresholds name it, compare compares it, find-max reads it.
// Adding a metric here makes it usable in all three.
type Def struct {
	Name   string // as thresholds name it: committed_tps, node_cpu_us_per_tx, node0.cpu_percent
	Label  string // compare's row name; Name when empty
	Unit   string
	Kind   Kind
	Better string // higher | lower | "" (no direction)
	// Compare makes it a compare row whenever both sides have it.
	Compare bool
	// Cost marks an efficiency figure (resources per committed payment):
	// find-max reports those that grew at the knee.
	Cost bool
	Help string
	// Run reads the metric from a summary; false when the run has none.
	Run func(s *Summary) (float64, bool)
	// Second reads one second of the series (compare's samples for a
	// single run); s is the run's summary. nil: not per second.
	Second func(sec *Second, s *Summary) (float64, bool)
}

// Title is compare's row name.
func (d Def) Title() string {
	if d.Label != "" {
		return d.Label
	}
	return d.Name
}

func always(v float64) (float64, bool)   { return v, true }
func positive(v float64) (float64, bool) { return v, v > 0 }

func fraction(n, d int64) (float64, bool) {
	if d == 0 {
		return 0, false
	}
	return float64(n) / float64(d), true
}

func latencyDef(name, label string, pick func(l *Latency) *measure.Percentiles, q func(p *measure.Percentiles) float64, sec func(s *Second) *measure.Percentiles) Def {
	d := Def{Name: name, Label: label, Unit: "ms", Kind: LatencyKind, Better: "lower",
		Run: func(s *Summary) (float64, bool) { return always(q(pick(&s.LatencyMs))) }}
	if sec != nil {
		d.Second = func(x *Second, _ *Summary) (float64, bool) { p := sec(x); return q(p), p.Count > 0 }
	}
	return d
}

func commitMs(l *Latency) *measure.Percentiles { return &l.Commit }
func ackMs(l *Latency) *measure.Percentiles    { return &l.Ack }

// perCommitted spreads one second's resource use over the run's committed
// rate, not over that second's commits: blocks make the commits of single
// seconds lumpy, and the mean over seconds is then the summary's figure.
func perCommitted(v float64, s *Summary, scale float64) (float64, bool) {
	if s.CommittedTPS <= 0 {
		return 0, false
	}
	return v * scale / s.CommittedTPS, true
}

// SystemSum adds the values of every telemetry metric of the system under
// test whose name ends with suffix (every node's cpu_percent): the one
// definition of the system's CPU, bytes and so on, per second and over the
// steady window alike. The emulated links' proxies ("links.*") are the
// lab's, not the system's, and are left out.
func SystemSum[V any](tel map[string]V, suffix string, value func(V) float64) (float64, bool) {
	var sum float64
	ok := false
	for k, v := range tel {
		if strings.HasSuffix(k, suffix) && !strings.HasPrefix(k, "links.") {
			sum += value(v)
			ok = true
		}
	}
	return sum, ok
}

// sumTelemetry is SystemSum over one second's values.
func sumTelemetry(tel map[string]float64, suffix string) (float64, bool) {
	return SystemSum(tel, suffix, func(v float64) float64 { return v })
}

// defs are the fixed metrics, in compare's order for those it compares
// (the health figures last: healthDefs).
var defs = append([]Def{
	{Name: "committed_tps", Label: "committed TPS", Unit: "tx/s", Better: "higher", Compare: true,
		Help: "payments committed per second over the steady window",
		Run:  func(s *Summary) (float64, bool) { return always(s.CommittedTPS) },
		Second: func(x *Second, _ *Summary) (float64, bool) {
			return always(float64(x.Committed))
		}},
	latencyDef("p50_commit", "p50 commit", commitMs, func(p *measure.Percentiles) float64 { return p.P50 }, func(s *Second) *measure.Percentiles { return &s.CommitMs }),
	latencyDef("p99_commit", "p99 commit", commitMs, func(p *measure.Percentiles) float64 { return p.P99 }, func(s *Second) *measure.Percentiles { return &s.CommitMs }),
	{Name: "reject_rate", Label: "reject rate", Unit: "%", Kind: RatioKind, Better: "lower", Compare: true,
		Help: "rejected / sent, whole run",
		Run:  func(s *Summary) (float64, bool) { return always(s.RejectRate) },
		Second: func(x *Second, _ *Summary) (float64, bool) {
			return fraction(measure.Sum(x.Rejected), x.Sent)
		}},
	{Name: "node_cpu_us_per_tx", Unit: "µs", Better: "lower", Compare: true, Cost: true,
		Help: "CPU time of the system under test's processes per committed payment",
		Run:  func(s *Summary) (float64, bool) { return positive(s.Cost.NodeCPUus) },
		Second: func(x *Second, s *Summary) (float64, bool) {
			v, ok := sumTelemetry(x.Telemetry, ".cpu_percent")
			if !ok {
				return 0, false
			}
			return perCommitted(v, s, 1e4)
		}},
	{Name: "generator_cpu_us_per_tx", Unit: "µs", Better: "lower", Compare: true, Cost: true,
		Help: "tpslab's own CPU time per committed payment",
		Run:  func(s *Summary) (float64, bool) { return positive(s.Cost.GeneratorCPUus) },
		Second: func(x *Second, s *Summary) (float64, bool) {
			return perCommitted(x.GenCPU, s, 1e4)
		}},
	{Name: "wire_bytes_per_tx", Unit: "bytes", Better: "lower", Compare: true, Cost: true,
		Help: "bytes the nodes sent to their peers per committed payment",
		Run:  func(s *Summary) (float64, bool) { return positive(s.Cost.WireBytes) },
		Second: func(x *Second, s *Summary) (float64, bool) {
			v, ok := sumTelemetry(x.Telemetry, ".p2p_send_bytes")
			if !ok {
				return 0, false
			}
			return perCommitted(v, s, 1)
		}},
	{Name: "gossip_overhead", Unit: "x", Better: "lower", Compare: true, Cost: true,
		Help: "mempool-channel bytes sent across all peers / bytes of the committed transactions",
		Run:  func(s *Summary) (float64, bool) { return positive(s.Cost.GossipOverhead) }},
	{Name: "offered_tps", Unit: "tx/s", Help: "payments due per second (steady)", Run: func(s *Summary) (float64, bool) { return always(s.OfferedTPS) }},
	{Name: "sent_tps", Unit: "tx/s", Help: "payments sent per second (steady)", Run: func(s *Summary) (float64, bool) { return always(s.SentTPS) }},
	{Name: "accepted_tps", Unit: "tx/s", Help: "payments accepted per second (steady)", Run: func(s *Summary) (float64, bool) { return always(s.AcceptedTPS) }},
	{Name: "committed", Help: "payments committed, whole run", Run: func(s *Summary) (float64, bool) { return always(float64(s.Committed)) }},
	{Name: "expired", Help: "payments not committed within commit_timeout, whole run", Run: func(s *Summary) (float64, bool) { return always(float64(s.Expired)) }},
	{Name: "invalid_taken", Better: "lower", Compare: true, Help: "deliberately invalid payments committed, or accepted and never refused (workload.invalid), whole run",
		Run: func(s *Summary) (float64, bool) { return always(float64(measure.Sum(s.InvalidTaken()))) }},
	{Name: "expired_rate", Kind: RatioKind, Better: "lower", Help: "expired / accepted",
		Run: func(s *Summary) (float64, bool) { v, _ := fraction(s.Expired, s.Accepted); return v, true }},
	{Name: "fail_rate", Kind: RatioKind, Better: "lower", Help: "failed in a block / accepted",
		Run: func(s *Summary) (float64, bool) { v, _ := fraction(s.FailedTotal, s.Accepted); return v, true }},
	latencyDef("p90_commit", "", commitMs, func(p *measure.Percentiles) float64 { return p.P90 }, nil),
	latencyDef("p999_commit", "", commitMs, func(p *measure.Percentiles) float64 { return p.P999 }, nil),
	latencyDef("max_commit", "", commitMs, func(p *measure.Percentiles) float64 { return p.Max }, nil),
	latencyDef("p50_ack", "", ackMs, func(p *measure.Percentiles) float64 { return p.P50 }, nil),
	latencyDef("p99_ack", "", ackMs, func(p *measure.Percentiles) float64 { return p.P99 }, nil),
	latencyDef("p99_lag", "", func(l *Latency) *measure.Percentiles { return &l.ScheduleLag }, func(p *measure.Percentiles) float64 { return p.P99 }, nil),
	{Name: "generator_cpu_percent", Unit: "%", Better: "lower", Compare: true, Help: "tpslab's CPU, % of one core, over the load",
		Run: func(s *Summary) (float64, bool) { return always(s.Generator.CPUPercent) }},
}, healthDefs()...)

// Names lists the fixed metrics, sorted; telemetry metrics (dotted names
// such as node0.cpu_percent) come on top of them, per run.
func Names() []string {
	out := make([]string, 0, len(defs))
	for _, d := range defs {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}

var dotted = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)

// Lookup finds a metric by name: a fixed one, or a telemetry metric (a
// dotted name, read from the summary's telemetry; known only once a run
// has measured it). ok is false for a name that can be neither.
func Lookup(name string) (Def, bool) {
	for _, d := range defs {
		if d.Name == name {
			return d, true
		}
	}
	if m := byKind.FindStringSubmatch(name); m != nil {
		return kindDef(m[1], m[2]), true
	}
	if !dotted.MatchString(name) {
		return Def{}, false
	}
	return telemetryDef(telemetry.Metric{Name: name}, name), true
}

// byKind names one payment kind's figure: committed_tps{kind=multi_send}.
var byKind = regexp.MustCompile(`^(committed_tps|committed|sent|committed_failed|p50_commit|p90_commit|p99_commit|max_commit)\{kind=([a-z0-9_]+)\}$`)

// kindDef is figure of payment kind k over the steady window.
func kindDef(figure, k string) Def {
	name := figure + "{kind=" + k + "}"
	if strings.HasSuffix(figure, "_commit") {
		q := map[string]func(p *measure.Percentiles) float64{
			"p50_commit": func(p *measure.Percentiles) float64 { return p.P50 },
			"p90_commit": func(p *measure.Percentiles) float64 { return p.P90 },
			"p99_commit": func(p *measure.Percentiles) float64 { return p.P99 },
			"max_commit": func(p *measure.Percentiles) float64 { return p.Max },
		}[figure]
		return Def{Name: name, Unit: "ms", Kind: LatencyKind, Better: "lower", Compare: figure == "p99_commit",
			Help: "commit latency (from intended send) of payments of kind " + k + " in the mix, over the steady window",
			Run: func(s *Summary) (float64, bool) {
				f, ok := s.ByKind[k]
				return q(&f.CommitMs), ok && f.CommitMs.Count > 0
			}}
	}
	pick := func(f KindFigures) float64 {
		switch figure {
		case "committed_tps":
			return f.CommittedTPS
		case "committed":
			return float64(f.Committed)
		case "sent":
			return float64(f.Sent)
		}
		return float64(f.Failed)
	}
	d := Def{Name: name, Unit: "1/s", Better: "higher", Compare: figure == "committed_tps",
		Help: "payments of kind " + k + " in the mix (workload.mix), over the steady window",
		Run:  func(s *Summary) (float64, bool) { f, ok := s.ByKind[k]; return pick(f), ok }}
	switch figure {
	case "committed_tps":
		d.Second = func(sec *Second, _ *Summary) (float64, bool) {
			v, ok := sec.CommittedByKind[k]
			return float64(v), ok && sec.Phase == "steady"
		}
	case "committed_failed":
		d.Unit, d.Better = "", "lower"
	default:
		d.Unit = ""
	}
	return d
}

// KindDefs are the per-kind figures of the kinds a summary has.
func KindDefs(s *Summary) []Def {
	var out []Def
	for _, k := range s.Kinds() {
		out = append(out, kindDef("committed_tps", k), kindDef("p99_commit", k))
	}
	return out
}

// Defs are the fixed metrics and, for runs whose telemetry metrics are
// tel, every telemetry metric and per-payment figure.
func Defs(tel []telemetry.Metric) []Def {
	out := append([]Def(nil), defs...)
	for _, m := range tel {
		out = append(out, telemetryDef(m, m.Name))
		if m.PerPayment {
			out = append(out, telemetryDef(m, m.Name+"_per_payment"))
		}
	}
	return out
}

// telemetryDef is telemetry metric m (or its per-payment figure, name
// m.Name+"_per_payment") as a Def. Compare shows those with a direction and
// the per-payment figures.
func telemetryDef(m telemetry.Metric, name string) Def {
	d := Def{Name: name, Unit: m.Unit, Better: m.Better, Help: m.Help, Compare: m.Better != "",
		Run: func(s *Summary) (float64, bool) { st, ok := s.Telemetry[name]; return st.Mean, ok }}
	if d.Unit == "1" {
		d.Unit = ""
	}
	if name == m.Name {
		d.Second = func(x *Second, _ *Summary) (float64, bool) { v, ok := x.Telemetry[name]; return v, ok }
		return d
	}
	d.Unit, d.Help, d.Compare, d.Cost = m.UnitPer(), m.Help+", per committed payment", true, true
	if d.Better == "" {
		d.Better = "lower"
	}
	d.Second = func(x *Second, s *Summary) (float64, bool) {
		v, ok := x.Telemetry[m.Name]
		if !ok {
			return 0, false
		}
		return perCommitted(v, s, 1)
	}
	return d
}
