package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
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
	type pending struct {
		p    Point
		n    int
		wsum float64 // committed-weighted p50 sum
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
				p := PointOf(&s)
				k := int64(s.T)
				latest[i] = max(latest[i], s.T)
				m := merged[k]
				if m == nil {
					m = &pending{p: Point{T: s.T, Phase: p.Phase, CommitP50: -1, CommitP99: -1, AckP99: -1}}
					merged[k] = m
				}
				m.n++
				q := &m.p
				q.Offered += p.Offered
				q.Sent += p.Sent
				q.Committed += p.Committed
				q.Rejected += p.Rejected
				q.Errors += p.Errors
				q.InFlight += p.InFlight
				q.Mempool = max(q.Mempool, p.Mempool)
				if p.CommitP50 >= 0 {
					m.wsum += p.CommitP50 * float64(p.Committed)
					q.CommitP99 = max(q.CommitP99, p.CommitP99)
				}
				q.AckP99 = max(q.AckP99, p.AckP99)
				if q.Nodes == nil && p.Nodes != nil {
					q.Nodes = p.Nodes
				}
			}
		}
		lowest := math.Inf(1)
		for _, t := range latest {
			lowest = min(lowest, t)
		}
		highest := math.Inf(-1)
		for _, t := range latest {
			highest = max(highest, t)
		}
		for {
			m := merged[next]
			if m == nil || (m.n < len(dirs) && float64(next) > lowest && float64(next)+3 > highest) {
				break
			}
			if m.p.Committed > 0 {
				m.p.CommitP50 = m.wsum / float64(m.p.Committed)
			}
			d.Add(m.p)
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
	figs := d.st.Figures[:0]
	for _, f := range d.st.Figures {
		if f.Name != "p50_commit" && f.Name != "p99_commit" {
			figs = append(figs, f)
		}
	}
	d.st.Figures = append(figs, Figure{Name: "p50_commit", Label: "p50 commit", Unit: "ms", Value: p50w / committed},
		Figure{Name: "p99_commit", Label: "p99 commit (highest segment's)", Unit: "ms", Value: p99})
}
