package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/threshold"
)

// Observer consumes the run's snapshots: every second as it is collected,
// and the result at each checkpoint and at the end. The result files, the
// live progress, the thresholds and the Prometheus endpoint are observers;
// the runner feeds them all alike.
type Observer interface {
	// Second is one collected second and what was recorded in it; final
	// marks the last, partial one.
	Second(s *report.Second, iv *measure.Interval, final bool)
	// Result is the result as it stands, under the result writer's lock;
	// an observer may add to it (thresholds add their outcomes). Observers
	// are called in order, the result file last.
	Result(res *report.Result, final bool)
}

// RecorderObserver is an Observer that also reads the run's totals (the
// whole run's and the steady window's histograms) when it is given a result;
// it is handed the recorder before the load.
type RecorderObserver interface {
	Observer
	Recorder(rec *measure.Recorder)
}

// observers are the run's: thresholds, then the caller's (a Prometheus
// endpoint), progress, and the result file last.
func (r *run) observers() []Observer {
	ths, _ := threshold.ParseAll(threshold.Of(&r.sc)) // validated before the run
	obs := []Observer{thresholds(ths)}
	if r.sc.AbortOnFail {
		obs = append(obs, newAbort(ths, r.sc.AbortGrace.D(), func(e End) {
			if r.ls != nil {
				r.ls.stop(e)
			}
		}))
	}
	obs = append(obs, r.o.Observers...)
	for _, o := range r.o.Observers {
		if ro, ok := o.(RecorderObserver); ok {
			ro.Recorder(r.rec)
		}
	}
	if r.o.Progress != nil {
		every := int(r.o.ProgressEvery / time.Second)
		obs = append(obs, &progress{w: r.o.Progress, every: every, inPlace: r.o.ProgressInPlace, width: r.o.ProgressWidth})
	}
	if r.sched != nil {
		obs = append(obs, faultEffects{r.sched})
	}
	return append(obs, resultFile{r.w})
}

// snapshot brings the result up to date and hands it to every observer.
func (r *run) snapshot(final bool, update func(res *report.Result)) {
	r.w.Update(func(res *report.Result) {
		if update != nil {
			update(res)
		}
		res.Summary = ending{r}.summary()
		ending{r}.fill(res)
		for _, o := range r.obs {
			o.Result(res, final)
		}
	})
}

// thresholds checks the run's thresholds on its final result.
type thresholds []threshold.Threshold

func (thresholds) Second(*report.Second, *measure.Interval, bool) {}

func (t thresholds) Result(res *report.Result, final bool) {
	if !final {
		return
	}
	res.Thresholds = res.Thresholds[:0]
	for _, th := range t {
		o := th.Check(&res.Summary)
		if h := res.Summary.Health; !o.OK && h != nil && o.Note == "" {
			o.Note = h.Worst(th.Metric()) // which node
		}
		res.Thresholds = append(res.Thresholds, o)
	}
}

// progress prints the load's progress: on a terminal one line rewritten
// every second (k6's way), elsewhere a plain line every so often with the
// rates over that stretch (CI logs). Committed is a mean over at least the
// last 5 s: blocks that do not fall on second boundaries make a steady
// chain's per-second count saw-tooth. Latency reads "-" until a commit.
type progress struct {
	w       io.Writer
	every   int // seconds between lines
	inPlace bool
	width   int // the terminal's columns; 0: any
	acc     progressAcc
	recent  [committedSpan]int64 // the last seconds' committed, a ring
	seen    int
}

// committedSpan is the seconds the progress line's committed rate spans.
const committedSpan = 5

type progressAcc struct {
	n                   int
	offered, sent, errs int64
	expired             int64
	p99                 float64 // the stretch's highest per-second p99 commit
	inFlight, mempool   int
}

func (p *progress) Second(s *report.Second, _ *measure.Interval, final bool) {
	if final {
		if p.inPlace {
			fmt.Fprintln(p.w)
		}
		return
	}
	a := &p.acc
	a.n++
	a.offered += s.Offered
	a.sent += s.Sent
	// Refused and failed are errors; an expired payment is no answer, not
	// an error (docs/metrics.md): its own column, when there are any.
	a.errs += measure.Sum(s.Rejected) + measure.Sum(s.Failed)
	a.expired += s.Expired
	if s.CommitMs.Count > 0 {
		a.p99 = max(a.p99, s.CommitMs.P99)
	}
	a.inFlight, a.mempool = s.InFlight, s.MempoolTxs
	p.recent[p.seen%committedSpan] = s.Committed
	p.seen++
	if a.n < max(p.every, 1) {
		return
	}
	span := min(p.seen, committedSpan)
	var committed int64
	for _, c := range p.recent[:span] {
		committed += c
	}
	line := p.line(s, committed/int64(span), span)
	if p.inPlace {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.acc = progressAcc{}
}

// line is the progress line, its fields dropped from the end when the
// terminal is narrower (a wrapped line stays behind at each rewrite).
func (p *progress) line(s *report.Second, committed int64, span int) string {
	a, n := &p.acc, int64(p.acc.n)
	lat := "-"
	if a.p99 > 0 {
		lat = fmt.Sprintf("%.0f ms", a.p99)
	}
	fields := []string{fmt.Sprintf("%4.0fs %-7s", s.T, s.Phase), fmt.Sprintf("offered %d/s", a.offered/n),
		fmt.Sprintf("committed %d/s (%d s)", committed, span), fmt.Sprintf("p99 commit %s", lat),
		fmt.Sprintf("sent %d/s", a.sent/n), fmt.Sprintf("in flight %d", max(a.inFlight, 0)),
		fmt.Sprintf("errors %d", max(a.errs, 0)), fmt.Sprintf("mempool %d", max(a.mempool, 0))}
	if a.expired > 0 {
		fields = append(fields[:7], append([]string{fmt.Sprintf("expired %d", a.expired)}, fields[7:]...)...)
	}
	line := fields[0]
	for _, f := range fields[1:] {
		if p.width > 0 && len(line)+2+len(f) > p.width-1 {
			break
		}
		line += "  " + f
	}
	return line
}

func (*progress) Result(*report.Result, bool) {}

// resultFile streams seconds and blocks to the run directory and rewrites
// result.json at checkpoints (the runner closes it at the end).
type resultFile struct{ w *report.Writer }

func (f resultFile) Second(s *report.Second, iv *measure.Interval, _ bool) {
	f.w.Add(*s, iv.Blocks, iv.Settled)
}

func (f resultFile) Result(_ *report.Result, final bool) {
	if !final {
		f.w.FlushLocked()
	}
}
