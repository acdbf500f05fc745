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
	ths, _ := threshold.ParseAll(r.sc.Thresholds) // validated before the run
	obs := []Observer{thresholds(ths)}
	obs = append(obs, r.o.Observers...)
	for _, o := range r.o.Observers {
		if ro, ok := o.(RecorderObserver); ok {
			ro.Recorder(r.rec)
		}
	}
	if r.o.Progress != nil {
		every := int(r.o.ProgressEvery / time.Second)
		obs = append(obs, &progress{w: r.o.Progress, every: every, inPlace: r.o.ProgressInPlace})
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
		res.Thresholds = append(res.Thresholds, th.Check(&res.Summary))
	}
}

// progress prints the load's progress: on a terminal one line rewritten
// every second (k6's way), elsewhere a plain line every so often with the
// rates over that stretch (CI logs). Latency reads "-" until a commit.
type progress struct {
	w       io.Writer
	every   int // seconds between lines
	inPlace bool
	acc     progressAcc
}

type progressAcc struct {
	n                              int
	offered, sent, committed, errs int64
	p99                            float64 // the stretch's highest per-second p99 commit
	inFlight, mempool              int
}

func (p *progress) Second(s *report.Second, _ *measure.Interval, final bool) {
	a := &p.acc
	if !final {
		a.n++
		a.offered += s.Offered
		a.sent += s.Sent
		a.committed += s.Committed
		a.errs += measure.Sum(s.Rejected) + measure.Sum(s.Failed) + s.Expired
		if s.CommitMs.Count > 0 {
			a.p99 = max(a.p99, s.CommitMs.P99)
		}
		a.inFlight, a.mempool = s.InFlight, s.MempoolTxs
	}
	if final {
		if p.inPlace {
			fmt.Fprintln(p.w)
		}
		return
	}
	if a.n < max(p.every, 1) {
		return
	}
	n := int64(a.n)
	lat := "-"
	if a.p99 > 0 {
		lat = fmt.Sprintf("%.0f ms", a.p99)
	}
	line := fmt.Sprintf("%4.0fs %-7s offered %d/s  sent %d/s  committed %d/s  p99 commit %s  in flight %d  mempool %d  errors %d",
		s.T, s.Phase, a.offered/n, a.sent/n, a.committed/n, lat, max(a.inFlight, 0), max(a.mempool, 0), max(a.errs, 0))
	if p.inPlace {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.acc = progressAcc{}
}

func (*progress) Result(*report.Result, bool) {}

// resultFile streams seconds and blocks to the run directory and rewrites
// result.json at checkpoints (the runner closes it at the end).
type resultFile struct{ w *report.Writer }

func (f resultFile) Second(s *report.Second, iv *measure.Interval, _ bool) { f.w.Add(*s, iv.Blocks) }

func (f resultFile) Result(_ *report.Result, final bool) {
	if !final {
		f.w.FlushLocked()
	}
}
