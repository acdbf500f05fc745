package report

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"github.com/tpslab/tpslab/internal/measure"
)

// ChartPoints bounds the points of each chart in report.html: a day-long
// run's series (100 MB) would otherwise be embedded whole, and read into
// memory whole to write it.
const ChartPoints = 3600

// ReadResultForCharts loads a run as ReadResult does, but streams its series
// and blocks and merges them into at most maxPoints each, so memory and
// the page stay bounded whatever the run's length.
func ReadResultForCharts(dir string, maxPoints int) (*Result, error) {
	r, err := readHead(dir)
	if err != nil || r.SchemaVersion < 2 {
		return r, err
	}
	series := filepath.Join(dir, "series.jsonl")
	n, err := countLines(series)
	if err != nil {
		return nil, err
	}
	m := seconds{k: spanFor(n, maxPoints)}
	if err := eachLine(series, m.add); err != nil {
		return nil, err
	}
	r.Series = m.done()
	blocks := filepath.Join(dir, "blocks.jsonl")
	if n, err = countLines(blocks); err != nil {
		return nil, err
	}
	b := blockMerger{k: spanFor(n, maxPoints)}
	if err := eachLine(blocks, b.add); err != nil {
		return nil, err
	}
	r.Blocks = b.done()
	return r, nil
}

func spanFor(n, maxPoints int) int {
	if maxPoints <= 0 || n <= maxPoints {
		return 1
	}
	return (n + maxPoints - 1) / maxPoints
}

// countLines counts a file's lines without decoding them (0 if it is absent).
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	br := bufio.NewReaderSize(f, 1<<16)
	buf := make([]byte, 1<<16)
	for {
		k, err := br.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			return n + 1, nil // a last line without its newline counts too
		}
	}
}

// seconds merges k consecutive seconds into one point: counts and gauges
// are means per second (the charts still read per second), latency
// percentiles the worst second's, Span how many seconds it holds. A change
// of phase or of target rate starts a new point, so stages stay apart.
type seconds struct {
	k   int
	acc *Second
	n   int
	out []Second
}

func (m *seconds) add(s Second) {
	if m.k <= 1 {
		m.out = append(m.out, s)
		return
	}
	if m.acc != nil && (m.n == m.k || s.Phase != m.acc.Phase || s.TargetRate != m.acc.TargetRate) {
		m.flush()
	}
	if m.acc == nil {
		c := s
		c.Counts = measure.Counts{}
		c.Counts.Add(&s.Counts) // its own maps
		c.Telemetry = copyFloats(s.Telemetry)
		m.acc, m.n = &c, 1
		return
	}
	a := m.acc
	m.n++
	a.Counts.Add(&s.Counts)
	a.AckMs, a.CommitMs, a.LagMs = worst(a.AckMs, s.AckMs), worst(a.CommitMs, s.CommitMs), worst(a.LagMs, s.LagMs)
	a.InFlight += s.InFlight
	a.MempoolTxs += s.MempoolTxs
	a.Blocks += s.Blocks
	a.BlockTxs += s.BlockTxs
	a.GenCPU += s.GenCPU
	a.LiveNodes += s.LiveNodes
	a.LiveEndpts += s.LiveEndpts
	for k, v := range s.Telemetry {
		if a.Telemetry == nil {
			a.Telemetry = map[string]float64{}
		}
		a.Telemetry[k] += v
	}
}

// flush turns the sums into means per second.
func (m *seconds) flush() {
	a, n := m.acc, int64(m.n)
	f := float64(m.n)
	a.Span = m.n
	for _, d := range measure.Counters {
		if d.Reasons != nil {
			for k := range *d.Reasons(&a.Counts) {
				(*d.Reasons(&a.Counts))[k] /= n
			}
		} else {
			*d.Scalar(&a.Counts) /= n
		}
	}
	a.InFlight, a.MempoolTxs, a.Blocks, a.BlockTxs = a.InFlight/m.n, a.MempoolTxs/m.n, a.Blocks/m.n, a.BlockTxs/m.n
	a.LiveNodes, a.LiveEndpts = a.LiveNodes/m.n, a.LiveEndpts/m.n
	a.GenCPU /= f
	for k := range a.Telemetry {
		a.Telemetry[k] /= f
	}
	m.out = append(m.out, *a)
	m.acc, m.n = nil, 0
}

func (m *seconds) done() []Second {
	if m.acc != nil {
		m.flush()
	}
	return m.out
}

// worst keeps the higher of each percentile and the summed count.
func worst(a, b measure.Percentiles) measure.Percentiles {
	return measure.Percentiles{Count: a.Count + b.Count, Mean: max(a.Mean, b.Mean), P50: max(a.P50, b.P50), P90: max(a.P90, b.P90),
		P99: max(a.P99, b.P99), P999: max(a.P999, b.P999), Max: max(a.Max, b.Max)}
}

// blockMerger merges k consecutive blocks: the first's height and time,
// the mean interval and transactions, the sums of ours.
type blockMerger struct {
	k   int
	acc *measure.BlockStat
	n   int
	out []measure.BlockStat
}

func (m *blockMerger) add(b measure.BlockStat) {
	if m.k <= 1 {
		m.out = append(m.out, b)
		return
	}
	if m.acc == nil {
		c := b
		m.acc, m.n = &c, 1
		return
	}
	a := m.acc
	a.IntervalMs += b.IntervalMs
	a.Txs += b.Txs
	a.Ours += b.Ours
	a.OursOK += b.OursOK
	a.Bytes += b.Bytes
	if m.n++; m.n == m.k {
		m.flush()
	}
}

func (m *blockMerger) flush() {
	a := m.acc
	a.IntervalMs /= float64(m.n)
	a.Txs /= m.n
	a.Bytes /= m.n
	m.out = append(m.out, *a)
	m.acc, m.n = nil, 0
}

func (m *blockMerger) done() []measure.BlockStat {
	if m.acc != nil {
		m.flush()
	}
	return m.out
}

func copyFloats(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	c := make(map[string]float64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
