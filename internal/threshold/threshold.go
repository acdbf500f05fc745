// Package threshold parses and checks pass/fail conditions on a run's
// summary, such as `committed_tps>=1000`, `p99_commit<=2s`, `reject_rate<1%`.
package threshold

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
)

// Names lists the fixed metrics thresholds can name; dotted telemetry
// names (node0.cpu_percent, ledger.retries_per_payment) come on top.
func Names() []string { return report.Names() }

// Threshold is one parsed condition.
type Threshold struct {
	Expr   string
	metric string
	op     string
	value  float64 // ms for latencies, a fraction for ratios
}

// Parse reads `metric op value`; latencies take a duration (2s, 500ms) or
// milliseconds, ratios a percentage (1%) or a fraction.
func Parse(expr string) (Threshold, error) {
	e := strings.ReplaceAll(expr, " ", "")
	for _, op := range []string{">=", "<=", "==", ">", "<"} {
		i := strings.Index(e, op)
		if i <= 0 {
			continue
		}
		name, val := e[:i], e[i+len(op):]
		m, ok := report.Lookup(name)
		if !ok {
			return Threshold{}, fmt.Errorf("threshold %q: unknown metric %q, expected one of %s, or a telemetry metric such as node0.cpu_percent", expr, name, strings.Join(Names(), ", "))
		}
		v, err := parseValue(m.Kind, val)
		if err != nil {
			return Threshold{}, fmt.Errorf("threshold %q: value %q: %v", expr, val, err)
		}
		return Threshold{Expr: expr, metric: name, op: op, value: v}, nil
	}
	return Threshold{}, fmt.Errorf("threshold %q: expected metric, operator (>=, <=, >, <, ==) and value, e.g. committed_tps>=1000", expr)
}

// parseValue reads a threshold's value in the metric's unit: milliseconds
// for latencies, a fraction in [0, 1] for ratios, a count or rate >= 0.
func parseValue(k report.Kind, s string) (float64, error) {
	switch k {
	case report.LatencyKind:
		want := fmt.Errorf("expected a duration such as 2s or 500ms (or a number of milliseconds)")
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if !(f >= 0) || math.IsInf(f, 0) {
				return 0, want
			}
			return f, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, want
		}
		return float64(d) / float64(time.Millisecond), nil
	case report.RatioKind:
		want := fmt.Errorf("expected a percentage between 0%% and 100%% (such as 1%%) or a fraction between 0 and 1")
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil {
			return 0, want
		}
		if strings.HasSuffix(s, "%") {
			f /= 100
		}
		if !(f >= 0 && f <= 1) {
			return 0, want
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("expected a finite number >= 0")
	}
	return f, nil
}

// Outcome is a checked threshold, as result.json records it.
type Outcome = report.ThresholdOutcome

// Check evaluates the threshold against a summary.
func (t Threshold) Check(s *report.Summary) Outcome {
	d, _ := report.Lookup(t.metric)
	v, measured := d.Run(s)
	if !measured {
		return Outcome{Expr: t.Expr, OK: false, Note: "not measured in this run"}
	}
	return Outcome{Expr: t.Expr, OK: t.holds(v), Actual: v}
}

// ParseAll parses every expression, stopping at the first bad one.
func ParseAll(exprs []string) ([]Threshold, error) {
	out := make([]Threshold, 0, len(exprs))
	for _, e := range exprs {
		t, err := Parse(e)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// PerSecond says whether the threshold's metric has a value each second
// (what --abort-on-fail watches); the others are checked at the end only.
func (t Threshold) PerSecond() bool {
	d, _ := report.Lookup(t.metric)
	return d.Second != nil
}

// CheckSecond evaluates the threshold on one second of the series:
// measured is false when the second has no value (no commit in it).
func (t Threshold) CheckSecond(sec *report.Second, s *report.Summary) (v float64, measured, ok bool) {
	d, _ := report.Lookup(t.metric)
	if d.Second == nil {
		return 0, false, true
	}
	if v, measured = d.Second(sec, s); !measured {
		return 0, false, true
	}
	return v, true, t.holds(v)
}

func (t Threshold) holds(v float64) bool {
	switch t.op {
	case ">=":
		return v >= t.value
	case "<=":
		return v <= t.value
	case ">":
		return v > t.value
	case "<":
		return v < t.value
	}
	return v == t.value
}

// Violation says how v misses the threshold, in its unit: "p99_commit
// 3.4 s > 2 s".
func (t Threshold) Violation(v float64) string {
	d, _ := report.Lookup(t.metric)
	not := map[string]string{">=": "<", "<=": ">", ">": "<=", "<": ">=", "==": "!="}[t.op]
	return fmt.Sprintf("%s %s %s %s", t.metric, value(d.Kind, v), not, value(d.Kind, t.value))
}

// value writes a threshold's figure in its unit.
func value(k report.Kind, v float64) string {
	switch k {
	case report.LatencyKind:
		if v >= 1000 {
			return strconv.FormatFloat(v/1000, 'g', 3, 64) + " s"
		}
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	case report.RatioKind:
		return strconv.FormatFloat(100*v, 'g', 3, 64) + "%"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Metric is the metric the threshold names.
func (t Threshold) Metric() string { return t.metric }

// Of is the scenario's thresholds with its health set's (--health
// default) after them, each once.
func Of(sc *scenario.Scenario) []string {
	out := append([]string(nil), sc.Thresholds...)
	if sc.Health == "default" {
		for _, e := range report.HealthDefault {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}
