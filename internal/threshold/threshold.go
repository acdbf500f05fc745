// Package threshold parses and checks pass/fail conditions on a run's
// summary, such as `committed_tps>=1000`, `p99_commit<=2s`, `reject_rate<1%`.
package threshold

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/report"
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
	var ok bool
	switch t.op {
	case ">=":
		ok = v >= t.value
	case "<=":
		ok = v <= t.value
	case ">":
		ok = v > t.value
	case "<":
		ok = v < t.value
	case "==":
		ok = v == t.value
	}
	return Outcome{Expr: t.Expr, OK: ok, Actual: v}
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
