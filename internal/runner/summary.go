package runner

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
)

// summary computes the headline figures from the totals so far.
func (r *run) summary() report.Summary {
	tot, st := r.rec.Total, r.rec.Steady
	s := report.Summary{Counts: tot.Counts}
	s.RejectedTotal = measure.Sum(tot.Rejected)
	s.FailedTotal = measure.Sum(tot.Failed)
	if s.Sent > 0 {
		s.RejectRate = float64(s.RejectedTotal) / float64(s.Sent)
	}
	win := float64(r.steadyN)
	warm := r.sc.Load.Warmup.D().Seconds()
	s.Steady = report.Steady{StartS: warm, EndS: warm + win, DurationS: win, Committed: st.Committed, WarmupS: warm}
	if le := time.Duration(r.loadEnd.Load()); le > 0 {
		s.Steady.DrainS = math.Round((r.eng.Since()-le).Seconds()*10) / 10
	}
	lat := st
	if win > 0 {
		s.CommittedTPS = float64(st.Committed) / win
		// Block-aligned: what committed after the window's first block, over
		// the time to its last block, so slow blocks do not quantise the rate.
		if bw := r.steadyB[1] - r.steadyB[0]; bw > 0 {
			s.Steady.BlockWindowS = bw
			s.CommittedTPS = float64(st.Committed-r.steadyB0) / bw
		}
		s.OfferedTPS = float64(st.Offered) / win
		s.SentTPS = float64(st.Sent) / win
		s.AcceptedTPS = float64(st.Accepted) / win
	} else {
		lat = tot // no steady second (a very short or interrupted run)
	}
	s.LatencyMs = report.Latency{Ack: measure.Summarize(lat.Ack), Commit: measure.Summarize(lat.Commit),
		CommitUncorrected: measure.Summarize(lat.CommitUncorrected), ScheduleLag: measure.Summarize(lat.Lag)}
	cpu := r.cpuLoad
	loadSecs := time.Duration(r.loadEnd.Load()).Seconds()
	if cpu == 0 {
		cpu = cpuTime() - r.cpuStart
		loadSecs = r.eng.Since().Seconds()
	}
	s.Generator = report.Generator{Cores: runtime.NumCPU()}
	if loadSecs > 0 {
		s.Generator.CPUPercent = math.Round(1000*cpu.Seconds()/loadSecs) / 10
	}
	r.judgeGenerator(&s, win)
	var n int
	var ivSum, txSum, bytesSum float64
	for _, b := range tot.Blocks {
		n++
		ivSum += b.IntervalMs
		txSum += float64(b.Txs)
		bytesSum += float64(b.Bytes)
		if b.Txs > s.BlocksSummary.TxsMax {
			s.BlocksSummary.TxsMax = b.Txs
		}
	}
	if n > 0 {
		s.BlocksSummary.Count = n
		s.BlocksSummary.IntervalMsMean = math.Round(ivSum/float64(n)*10) / 10
		s.BlocksSummary.TxsMean = math.Round(txSum/float64(n)*10) / 10
		s.BlocksSummary.BytesMean = math.Round(bytesSum / float64(n))
	}
	return s
}

// judgeGenerator decides whether the generator, not the system, limited the
// run: it sent late (schedule lag) or offered fewer than scheduled, while the
// senders' windows were not what held it back, or it used every core.
func (r *run) judgeGenerator(s *report.Summary, win float64) {
	st := r.rec.Steady
	if win == 0 || st.Offered == 0 {
		return
	}
	windowFull := float64(st.WindowWaits) > 0.01*float64(st.Offered)
	connsBusy := float64(st.ConnWaits) > 0.01*float64(st.Offered)
	backpressure := windowFull || connsBusy
	lagP99 := s.LatencyMs.ScheduleLag.P99
	var why string
	if r.sc.Load.Model == "open" {
		warm := r.sc.Load.Warmup.D()
		want := r.profile.Cumulative(warm+time.Duration(win*float64(time.Second))) - r.profile.Cumulative(warm)
		if want > 0 && float64(st.Sent) < 0.97*want && !backpressure {
			why = fmt.Sprintf("it sent %d of %.0f scheduled payments in the steady window", st.Sent, want)
		}
	}
	if why == "" && lagP99 > 100 && !backpressure {
		why = fmt.Sprintf("schedule lag p99 was %.0f ms", lagP99)
	}
	if why == "" && s.Generator.CPUPercent > 90*float64(s.Generator.Cores) {
		why = fmt.Sprintf("it used %.0f%% CPU on %d cores", s.Generator.CPUPercent, s.Generator.Cores)
	}
	if why != "" {
		s.Generator.Limited = true
		s.Generator.Warning = "the load generator, not the system under test, was limiting: " + why + "; the figures understate what the system can do"
	} else if connsBusy {
		s.Generator.Warning = fmt.Sprintf("all %d connections were busy waiting for the target's answers for %d due payments (ack p50 %.0f ms): the target's RPC/CheckTx was the limit, not the generator; more connections may offer more", r.sc.Load.Connections, st.ConnWaits, s.LatencyMs.Ack.P50)
	} else if windowFull {
		s.Generator.Warning = fmt.Sprintf("senders' in-flight windows were full for %d payments: the system confirmed slower than offered (backpressure, not a generator limit)", st.WindowWaits)
	}
}
