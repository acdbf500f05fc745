package runner

import (
	"fmt"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/threshold"
)

// abort ends the load as soon as a threshold with a value each second has
// failed for longer than the grace after the warm-up (abort_on_fail, k6's
// abortOnFail): a soak lost in its second minute does not run on. A second
// without a value (no commit in it) neither ends nor extends a failure's
// start: a stalled chain under a latency bound stays failing.
type abort struct {
	ths   []threshold.Threshold
	grace time.Duration
	since []float64 // when each began failing (the second's start); -1: holding
	worst []float64 // its value in the last failing second
	stop  func(End)
	mu    sync.Mutex      // Result and Second come from different goroutines
	sum   *report.Summary // the last checkpoint's committed TPS, for figures per payment
	fired int             // the threshold that ended the load; -1: none
	why   string
}

func newAbort(ths []threshold.Threshold, grace time.Duration, stop func(End)) *abort {
	a := &abort{grace: grace, stop: stop, fired: -1, sum: &report.Summary{}}
	for _, t := range ths {
		if t.PerSecond() {
			a.ths = append(a.ths, t)
			a.since = append(a.since, -1)
			a.worst = append(a.worst, 0)
		}
	}
	return a
}

func (a *abort) Second(s *report.Second, _ *measure.Interval, final bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if final || a.fired >= 0 || s.Phase != "steady" {
		return
	}
	for i, t := range a.ths {
		v, measured, ok := t.CheckSecond(s, a.sum)
		switch {
		case measured && ok:
			a.since[i] = -1
		case measured:
			if a.since[i] < 0 {
				a.since[i] = s.T - 1
			}
			a.worst[i] = v
		}
		if a.since[i] >= 0 && time.Duration((s.T-a.since[i])*float64(time.Second)) > a.grace {
			a.fired = i
			a.why = fmt.Sprintf("%s for %.0f s from t=%.0f s", t.Violation(a.worst[i]), s.T-a.since[i], a.since[i])
			a.stop(End{Kind: Aborted, Detail: a.why})
			return
		}
	}
}

// Result keeps the checkpoint's summary and, at the end, marks the
// threshold that ended the load as failed, saying so.
func (a *abort) Result(res *report.Result, final bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sum = &report.Summary{CommittedTPS: res.Summary.CommittedTPS}
	if !final || a.fired < 0 {
		return
	}
	for k := range res.Thresholds {
		if res.Thresholds[k].Expr == a.ths[a.fired].Expr {
			res.Thresholds[k].OK = false
			res.Thresholds[k].Note = "ended the load: " + a.why
		}
	}
}
