package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tpslab/tpslab/internal/report"
)

// Tail follows the series.jsonl of each segment directory (a local
// segmented run streams them while it goes) and adds their seconds merged:
// counts summed, p50 the committed-weighted mean, p99 the highest
// segment's (an upper bound), the nodes as the first segment that read
// them. A second is merged once every segment has written it, or once the
// others are 3 s past it (a dead segment does not hold the page back). The
// headline figures are recomputed from the merged steady seconds until the
// merged result gives the real ones. It returns when ctx ends.
func (d *Dashboard) Tail(ctx context.Context, dirs []string) {
	d.SetSegments(len(dirs))
	// pending is one second as far as the segments have written it: their
	// seconds' counts summed, in flight summed, the mempool the highest, the
	// nodes the first segment's; and the latencies merged apart.
	type pending struct {
		s           report.Second
		n           int
		wsum        float64 // committed-weighted p50 sum
		p99, ackP99 float64 // the highest segment's; -1 without any
	}
	offs := make([]int64, len(dirs))
	rests := make([][]byte, len(dirs))
	latest := make([]float64, len(dirs))
	for i := range latest {
		latest[i] = -1
	}
	merged := map[int64]*pending{}
	var next int64 = 1 // the next whole second to emit
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for i, dir := range dirs {
			lines := readNew(filepath.Join(dir, "series.jsonl"), &offs[i], &rests[i])
			for _, line := range lines {
				var s report.Second
				if json.Unmarshal(line, &s) != nil || s.T != math.Round(s.T) {
					continue // a final partial second is the merged result's
				}
				k := int64(s.T)
				latest[i] = max(latest[i], s.T)
				m := merged[k]
				if m == nil {
					m = &pending{s: report.Second{T: s.T, Phase: s.Phase}, p99: -1, ackP99: -1}
					merged[k] = m
				}
				m.n++
				m.s.Counts.Add(&s.Counts)
				m.s.InFlight += s.InFlight
				m.s.MempoolTxs = max(m.s.MempoolTxs, s.MempoolTxs)
				if m.s.Telemetry == nil {
					m.s.Telemetry = s.Telemetry
				}
				if s.CommitMs.Count > 0 {
					m.wsum += s.CommitMs.P50 * float64(s.Committed)
					m.p99 = max(m.p99, s.CommitMs.P99)
				}
				if s.AckMs.Count > 0 {
					m.ackP99 = max(m.ackP99, s.AckMs.P99)
				}
			}
		}
		lowest, highest := slices.Min(latest), slices.Max(latest)
		for {
			m := merged[next]
			if m == nil || (m.n < len(dirs) && float64(next) > lowest && float64(next)+3 > highest) {
				break
			}
			p := PointOf(&m.s)
			p.CommitP99, p.AckP99 = m.p99, m.ackP99
			if m.p99 >= 0 && p.Committed > 0 {
				p.CommitP50 = m.wsum / float64(p.Committed)
			}
			d.Add(p)
			d.mergedFigures()
			delete(merged, next)
			next++
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// readNew reads path's whole lines past *off (a partial last line waits
// in *rest for the rest of it).
func readNew(path string, off *int64, rest *[]byte) [][]byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(*off, io.SeekStart); err != nil {
		return nil
	}
	b, err := io.ReadAll(f)
	if err != nil || len(b) == 0 {
		return nil
	}
	*off += int64(len(b))
	b = append(*rest, b...)
	last := bytes.LastIndexByte(b, '\n')
	if last < 0 {
		*rest = b
		return nil
	}
	*rest = append([]byte(nil), b[last+1:]...)
	return bytes.Split(b[:last], []byte{'\n'})
}

// mergedFigures adds the merged p50 and p99 commit (the rates come with
// each point, Add); the merged result replaces them at the end.
func (d *Dashboard) mergedFigures() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Final {
		return
	}
	p99, p50w, committed := 0.0, 0.0, 0.0
	for _, p := range d.st.Points {
		if p.Phase == "steady" && p.CommitP50 >= 0 {
			p99 = max(p99, p.CommitP99)
			p50w += p.CommitP50 * float64(p.Committed)
			committed += float64(p.Committed)
		}
	}
	if committed == 0 {
		return
	}
	d.setFigure(figureOf("p50_commit", p50w/committed))
	p99f := figureOf("p99_commit", p99)
	p99f.Label += " (highest segment's)"
	d.setFigure(p99f)
}
