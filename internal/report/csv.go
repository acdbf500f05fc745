package report

import (
	"encoding/csv"
	"io"
	"sort"
	"strconv"

	"github.com/tpslab/tpslab/internal/measure"
)

// WriteCSV writes the per-second series, one row per second: every counter
// of measure.Counters (its total, by its name), the latencies and what was
// read each second, then each refusal reason's count apart.
func WriteCSV(w io.Writer, r *Result) error {
	reasons := map[string]bool{}
	for _, s := range r.Series {
		for k := range s.Rejected {
			reasons[k] = true
		}
	}
	var rs []string
	for k := range reasons {
		rs = append(rs, k)
	}
	sort.Strings(rs)
	cw := csv.NewWriter(w)
	head := []string{"t", "phase", "target_rate"}
	for _, c := range measure.Counters {
		head = append(head, c.Name)
	}
	head = append(head, "ack_p50_ms", "ack_p90_ms", "ack_p99_ms", "commit_p50_ms", "commit_p90_ms", "commit_p99_ms", "commit_max_ms",
		"lag_p99_ms", "in_flight", "mempool_txs", "blocks", "block_txs", "generator_cpu_percent")
	for _, k := range rs {
		head = append(head, "rejected_"+k)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, s := range r.Series {
		row := []string{f(s.T), s.Phase, f(s.TargetRate)}
		for _, c := range measure.Counters {
			row = append(row, i(c.Value(&s.Counts)))
		}
		row = append(row, f(s.AckMs.P50), f(s.AckMs.P90), f(s.AckMs.P99), f(s.CommitMs.P50), f(s.CommitMs.P90), f(s.CommitMs.P99), f(s.CommitMs.Max),
			f(s.LagMs.P99), strconv.Itoa(s.InFlight), strconv.Itoa(s.MempoolTxs), strconv.Itoa(s.Blocks), strconv.Itoa(s.BlockTxs), f(s.GenCPU))
		for _, k := range rs {
			row = append(row, i(s.Rejected[k]))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
