package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// StepStat is one step of a stepped load (load.steps, a ramp), from the
// run's seconds: each second belongs to the step whose rate it offered.
type StepStat struct {
	Rate         float64 // the step's target rate
	StartS, EndS float64
	OfferedTPS   float64
	CommittedTPS float64 // committed per second by commit time, in the step's seconds
	// P99CommitMs is the worst of the step's seconds' p99 commit latency
	// (seconds' percentiles do not merge).
	P99CommitMs float64
	InFlightEnd int     // payments in flight at the step's last second
	LinkBytesPS float64 // emulated links' traffic, all links, per second
}

// Steps are the run's steps, warm-up included, drain excluded; nil for a
// load of one rate.
func (r *Result) Steps() []StepStat {
	var out []StepStat
	var n float64
	for _, x := range r.Series {
		if x.Phase == "drain" || x.TargetRate <= 0 || x.Span > 1 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Rate != x.TargetRate {
			if len(out) > 0 {
				finish(&out[len(out)-1], n)
			}
			out, n = append(out, StepStat{Rate: x.TargetRate, StartS: x.T - 1}), 0
		}
		st := &out[len(out)-1]
		n++
		st.EndS = x.T
		st.OfferedTPS += float64(x.Offered)
		st.CommittedTPS += float64(x.Committed)
		st.P99CommitMs = max(st.P99CommitMs, x.CommitMs.P99)
		st.InFlightEnd = x.InFlight
		for k, v := range x.Telemetry {
			if strings.HasPrefix(k, "link.") && strings.HasSuffix(k, ".bytes") {
				st.LinkBytesPS += v
			}
		}
	}
	if len(out) < 2 {
		return nil
	}
	finish(&out[len(out)-1], n)
	return out
}

func finish(st *StepStat, n float64) {
	if n > 0 {
		st.OfferedTPS /= n
		st.CommittedTPS /= n
		st.LinkBytesPS /= n
	}
}

// printSteps is the full summary's table of a stepped load.
func printSteps(out io.Writer, r *Result) {
	steps := r.Steps()
	if len(steps) == 0 {
		return
	}
	fmt.Fprintln(out, "\nsteps (each second by the rate it offered; committed by commit time; p99 of the step's worst second):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	links := len(r.Summary.Links)
	head := "TIME\tOFFERED/s\tCOMMITTED/s\tP99 COMMIT\tIN FLIGHT AT END"
	if links > 0 {
		head += "\tLINKS' BYTES/s (ALL)\tBYTES PER COMMITTED, PER LINK"
	}
	fmt.Fprintln(tw, head)
	for _, st := range steps {
		line := fmt.Sprintf("%.0f-%.0f s\t%s\t%s\t%s\t%s", st.StartS, st.EndS, thousands(st.OfferedTPS), thousands(st.CommittedTPS), fmtMs(st.P99CommitMs), count(int64(st.InFlightEnd)))
		if links > 0 {
			per := "-"
			if st.CommittedTPS > 0 {
				per = human(st.LinkBytesPS/st.CommittedTPS/float64(links), "bytes")
			}
			line += "\t" + human(st.LinkBytesPS, "bytes/s") + "\t" + per
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}
