package segment

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/telemetry"
	"github.com/tpslab/tpslab/internal/threshold"
)

// part is one segment's run directory as read back.
type part struct {
	res    *report.Result
	second map[int]*hdrSet // by second (ceil of t)
	steady hdrSet          // the last totals line's
	total  hdrSet
}

type hdrSet map[string]*hdrhistogram.Histogram

func decode(m map[string][]byte) (hdrSet, error) {
	out := hdrSet{}
	for k, b := range m {
		h, err := hdrhistogram.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("histogram %s: %v", k, err)
		}
		out[k] = h
	}
	return out, nil
}

// merge adds o's histograms into s, creating those s lacks.
func (s hdrSet) merge(o hdrSet) {
	for k, h := range o {
		if s[k] == nil {
			s[k] = hdrhistogram.New(h.LowestTrackableValue(), h.HighestTrackableValue(), int(h.SignificantFigures()))
		}
		s[k].Merge(h)
	}
}

func (s hdrSet) summarize(k string) measure.Percentiles {
	if h := s[k]; h != nil {
		return measure.Summarize(h)
	}
	return measure.Percentiles{}
}

func key(t float64) int { return int(math.Ceil(t - 1e-9)) }

func readPart(dir string) (*part, error) {
	res, err := report.ReadResult(dir)
	if err != nil {
		return nil, err
	}
	p := &part{res: res, second: map[int]*hdrSet{}}
	b, err := os.ReadFile(filepath.Join(dir, HistFile))
	if err != nil {
		return nil, err
	}
	for i, ln := range strings.Split(string(b), "\n") {
		if ln == "" {
			continue
		}
		var l histLine
		if err := json.Unmarshal([]byte(ln), &l); err != nil {
			if !strings.HasSuffix(string(b), "\n") && i == strings.Count(string(b), "\n") {
				break // a last line cut short: the segment died mid-write
			}
			return nil, fmt.Errorf("%s line %d: %v", filepath.Join(dir, HistFile), i+1, err)
		}
		if l.Totals {
			if p.steady, err = decode(l.Steady); err != nil {
				return nil, err
			}
			if p.total, err = decode(l.Total); err != nil {
				return nil, err
			}
			continue
		}
		h, err := decode(l.Hists)
		if err != nil {
			return nil, err
		}
		k := key(l.T)
		if p.second[k] == nil {
			p.second[k] = &hdrSet{}
		}
		p.second[k].merge(h)
	}
	if p.steady == nil { // died before its first checkpoint: rebuild from its seconds
		p.steady, p.total = hdrSet{}, hdrSet{}
		for _, s := range res.Series {
			if h := p.second[key(s.T)]; h != nil {
				p.total.merge(*h)
				if s.Phase == "steady" {
					p.steady.merge(*h)
				}
			}
		}
	}
	return p, nil
}

// Merge reads the segments' run directories (segment i in dirs[i]) and
// writes their merged result into out: one result.json, series.jsonl and
// blocks.jsonl that every reading command takes. Counts are summed, second
// by second and in total; every latency comes from the segments' HDR
// histograms merged (never from averaged percentiles); blocks, which all
// segments saw, appear once with the payments of every segment in them.
// Figures about the system (its blocks, telemetry, faults, stalls) are
// segment 0's, which read the same chain. sc is the scenario as a whole.
func Merge(out string, dirs []string, sc any, thresholds []string, infos []report.SegmentInfo, faults *Faults) (*report.Result, error) {
	parts := make([]*part, len(dirs))
	for i, d := range dirs {
		p, err := readPart(d)
		if err != nil {
			return nil, fmt.Errorf("segment %d: %v", i, err)
		}
		parts[i] = p
	}
	p0 := parts[0].res
	res := &report.Result{SchemaVersion: report.SchemaVersion, Status: "complete", StartedAt: p0.StartedAt,
		Scenario: sc, Environment: p0.Environment, Network: p0.Network, Chain: p0.Chain, Telemetry: p0.Telemetry, Dir: out}
	var ends []string
	for i, p := range parts {
		r := p.res
		if r.StartedAt.Before(res.StartedAt) {
			res.StartedAt = r.StartedAt
		}
		if r.EndedAt != nil && (res.EndedAt == nil || r.EndedAt.After(*res.EndedAt)) {
			t := *r.EndedAt
			res.EndedAt = &t
		}
		if r.Status != "complete" || r.Incomplete() != "" {
			// A segment that did not finish leaves payments nobody
			// followed to the end: the merge counts what the others
			// proved and says it is partial; compare and history refuse it.
			res.Status = "partial"
			deadCounts(r)
			ends = append(ends, fmt.Sprintf("segment %d: incomplete (%s)", i, strings.TrimSpace(r.Incomplete()+" "+r.EndedBecause)))
		} else if r.EndedBecause != "completed" {
			ends = append(ends, fmt.Sprintf("segment %d: %s", i, r.EndedBecause))
		}
	}
	res.EndedBecause = "completed"
	if len(ends) > 0 {
		res.EndedBecause = strings.Join(ends, "; ")
	}
	if res.EndedAt == nil {
		t := time.Now().UTC()
		res.EndedAt = &t
	}
	res.Chain = mergeChain(parts)
	res.Series = mergeSeries(parts)
	res.Blocks = mergeBlocks(parts)
	res.Summary = mergeSummary(parts, res.Blocks)
	res.Events = p0.Events
	res.Endpoints = mergeEndpoints(parts)
	res.Notes = mergeNotes(parts)
	if faults != nil {
		faults.apply(res)
	}
	for i, p := range parts {
		in := report.SegmentInfo{Index: i, Count: len(parts)}
		if p.res.Segment != nil {
			in = *p.res.Segment
		}
		if i < len(infos) {
			in.Where, in.Dir = infos[i].Where, infos[i].Dir
		}
		s := p.res.Summary
		in.Offered, in.Committed, in.CommittedTPS = s.Offered, s.Committed, s.CommittedTPS
		in.CommitP50Ms, in.CommitP99Ms = s.LatencyMs.Commit.P50, s.LatencyMs.Commit.P99
		in.EndedBecause = p.res.EndedBecause
		res.Segments = append(res.Segments, in)
	}
	ths, err := threshold.ParseAll(thresholds)
	if err != nil {
		return nil, err
	}
	for _, th := range ths {
		res.Thresholds = append(res.Thresholds, th.Check(&res.Summary))
	}
	res.Capacities = parts[0].res.Capacities
	res.Seal(res.Environment.TpslabVersion)
	if err := write(out, res); err != nil {
		return nil, err
	}
	return res, nil
}

// mergeChain states the heights every segment read, the earliest first
// and the latest last (each segment follows the chain for its own
// payments, and one may see a block more than segment 0), so the range
// holds every payment counted. The steady window stays segment 0's: it is
// the window committed_tps is measured over (committedRate).
func mergeChain(parts []*part) report.Chain {
	lo := func(a, b int64) int64 {
		if a == 0 || (b != 0 && b < a) {
			return b
		}
		return a
	}
	c := parts[0].res.Chain
	for _, p := range parts[1:] {
		c.FirstHeight, c.LastHeight = lo(c.FirstHeight, p.res.Chain.FirstHeight), max(c.LastHeight, p.res.Chain.LastHeight)
	}
	return c
}

// write puts res in out as a run would have.
func write(out string, res *report.Result) error {
	series, blocks := res.Series, res.Blocks
	res.Series, res.Blocks = nil, nil
	w, err := report.NewWriter(out, res)
	if err != nil {
		return err
	}
	bi := 0
	for i, s := range series {
		var bs []measure.BlockStat
		for bi < len(blocks) && (blocks[bi].Seen <= s.T || i == len(series)-1) {
			bs = append(bs, blocks[bi])
			bi++
		}
		w.Add(s, bs, nil) // evidence stays in each segment's own file
	}
	if err := w.Err(); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	res.Series, res.Blocks = series, blocks
	return nil
}

// mergeSeries sums each second's counts over the segments and takes its
// latencies from their merged histograms. Seconds are matched by the whole
// second they end in (a segment's last, partial second with the others').
func mergeSeries(parts []*part) []report.Second {
	by := map[int]*report.Second{}
	hs := map[int]hdrSet{}
	for i, p := range parts {
		for _, s := range p.res.Series {
			k := key(s.T)
			m := by[k]
			if m == nil {
				c := s
				c.Counts = measure.Counts{}
				c.TargetRate, c.InFlight, c.GenCPU = 0, 0, 0
				m = &c
				by[k] = m
				hs[k] = hdrSet{}
			}
			m.Counts.Add(&s.Counts)
			m.TargetRate += s.TargetRate
			m.InFlight += s.InFlight
			m.GenCPU += s.GenCPU
			if s.T > m.T && m.T != math.Trunc(m.T) || s.T == math.Trunc(s.T) {
				m.T = s.T // a whole second where any segment had one
			}
			if i == 0 {
				m.Phase, m.MempoolTxs, m.Blocks, m.BlockTxs = s.Phase, s.MempoolTxs, s.Blocks, s.BlockTxs
				m.LiveNodes, m.LiveEndpts, m.Telemetry = s.LiveNodes, s.LiveEndpts, s.Telemetry
			}
			if h := p.second[k]; h != nil {
				hs[k].merge(*h)
			}
		}
	}
	keys := make([]int, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]report.Second, 0, len(keys))
	for _, k := range keys {
		m := by[k]
		m.TargetRate = math.Round(m.TargetRate*1000) / 1000
		m.GenCPU = math.Round(m.GenCPU*10) / 10
		m.AckMs, m.CommitMs, m.LagMs = hs[k].summarize("ack"), hs[k].summarize("commit"), hs[k].summarize("lag")
		out = append(out, *m)
	}
	return out
}

// mergeBlocks lists each block once, with every segment's payments in it.
func mergeBlocks(parts []*part) []measure.BlockStat {
	by := map[int64]*measure.BlockStat{}
	for _, p := range parts {
		for _, b := range p.res.Blocks {
			m := by[b.Height]
			if m == nil {
				c := b
				c.Ours, c.OursOK, c.OursGas = 0, 0, 0
				m = &c
				by[b.Height] = m
			}
			m.Ours += b.Ours
			m.OursOK += b.OursOK
			m.OursGas += b.OursGas
			m.Seen = math.Min(m.Seen, b.Seen)
		}
	}
	out := make([]measure.BlockStat, 0, len(by))
	for _, b := range by {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Height < out[j].Height })
	return out
}

func mergeSummary(parts []*part, blocks []measure.BlockStat) report.Summary {
	s := parts[0].res.Summary // the system's figures: segment 0's
	s.Counts = measure.Counts{}
	s.OfferedTPS, s.SentTPS, s.AcceptedTPS, s.Lost = 0, 0, 0, 0
	s.Steady.Committed = 0
	s.ByKind = nil
	s.Samples = map[string]string{}
	s.Warnings = nil
	g := report.Generator{Cores: s.Generator.Cores}
	var busyW, waitW float64
	var short *report.Shortfall
	steady, total := hdrSet{}, hdrSet{}
	var sumRates, genUs float64
	for i, p := range parts {
		ps := p.res.Summary
		s.Counts.Add(&ps.Counts)
		s.OfferedTPS += ps.OfferedTPS
		s.SentTPS += ps.SentTPS
		s.AcceptedTPS += ps.AcceptedTPS
		s.Lost += ps.Lost
		s.Steady.Committed += ps.Steady.Committed
		sumRates += ps.CommittedTPS
		genUs += ps.Cost.GeneratorCPUus * float64(ps.Steady.Committed)
		for k, v := range ps.Samples {
			s.Samples[k] = v
		}
		for k, f := range ps.ByKind {
			if s.ByKind == nil {
				s.ByKind = map[string]report.KindFigures{}
			}
			m := s.ByKind[k]
			m.Sent, m.Committed, m.Failed, m.CommittedTPS = m.Sent+f.Sent, m.Committed+f.Committed, m.Failed+f.Failed, m.CommittedTPS+f.CommittedTPS
			s.ByKind[k] = m
		}
		for _, w := range ps.Warnings {
			s.Warnings = appendOnce(s.Warnings, w, i)
		}
		pg := ps.Generator
		g.CPUPercent += pg.CPUPercent
		g.MachineCPUPercent = math.Max(g.MachineCPUPercent, pg.MachineCPUPercent)
		g.Limited = g.Limited || pg.Limited
		if pg.PausedS > g.PausedS {
			g.PausedS, g.LongestPauseMs = pg.PausedS, pg.LongestPauseMs
		}
		g.Starved = g.Starved || pg.Starved
		g.Lanes += pg.Lanes
		g.Workers += pg.Workers
		busyW += pg.BusyPercent * float64(pg.Workers)
		waitW += pg.WaitingPercent * float64(pg.Workers)
		if pg.Warning != "" {
			g.Warning = strings.TrimPrefix(g.Warning+"; ", "; ") + fmt.Sprintf("segment %d: %s", i, pg.Warning)
		}
		if sf := ps.Shortfall; sf != nil {
			if short == nil {
				c := *sf
				c.Scheduled, c.Sent, c.Unsent = 0, 0, 0
				short = &c
			}
			short.Scheduled += sf.Scheduled
			short.Sent += sf.Sent
			short.Unsent += sf.Unsent
		}
		steady.merge(p.steady)
		total.merge(p.total)
	}
	if g.Workers > 0 {
		g.BusyPercent = math.Round(busyW/float64(g.Workers)*10) / 10
		g.WaitingPercent = math.Round(waitW/float64(g.Workers)*10) / 10
	}
	g.CPUPercent = math.Round(g.CPUPercent*10) / 10
	s.Generator = g
	s.Shortfall = short
	if len(s.Samples) == 0 {
		s.Samples = nil
	}
	s.RejectedTotal = measure.Sum(s.Rejected)
	s.UnackedTotal = measure.Sum(s.Unacked)
	s.FailedTotal = measure.Sum(s.Failed)
	s.RejectRate = 0
	if s.Sent > 0 {
		s.RejectRate = float64(s.RejectedTotal) / float64(s.Sent)
	}
	if s.Steady.Committed > 0 {
		s.Cost.GeneratorCPUus = math.Round(genUs/float64(s.Steady.Committed)*10) / 10
	}
	lat := steady
	if s.Steady.DurationS == 0 {
		lat = total
	}
	s.LatencyMs = report.Latency{Ack: lat.summarize("ack"), Commit: lat.summarize("commit"),
		CommitUncorrected: lat.summarize("commit_uncorrected"), ScheduleLag: lat.summarize("lag"),
		Inclusion: lat.summarize("inclusion"), Proposed: lat.summarize("proposed"), Gossiped: lat.summarize("gossiped")}
	if s.LatencyMs.Inclusion.Count == 0 {
		s.LatencyMs.Inclusion = s.LatencyMs.Commit
	}
	for k, f := range s.ByKind {
		f.CommitMs = steady.summarize(KindCommit(k))
		s.ByKind[k] = f
	}
	s.CommittedTPS = committedRate(parts[0].res, blocks, sumRates)
	chainFromBlocks(&s, blocks)
	machineFromSegments(&s, parts)
	return s
}

// committedRate is committed_tps as one generator would have measured it,
// block-aligned over segment 0's steady blocks: every segment's payments
// committed in the window's blocks after its first, over the time from its
// first block to its last (plus the stall segment 0 added). Without two such
// blocks it is the sum of the segments' rates (each over the same window).
func committedRate(r0 *report.Result, blocks []measure.BlockStat, sum float64) float64 {
	c := r0.Chain
	s := r0.Summary.Steady
	if c.SteadyFirstHeight == 0 || c.SteadyLastHeight <= c.SteadyFirstHeight || s.BlockWindowS <= 0 {
		return sum
	}
	var first, last float64
	var n int64
	for _, b := range blocks {
		switch {
		case b.Height == c.SteadyFirstHeight:
			first = b.Seen
		case b.Height > c.SteadyFirstHeight && b.Height <= c.SteadyLastHeight:
			n += int64(b.OursOK)
			last = b.Seen
		}
	}
	if span := last - first + s.StallS; span > 0 {
		return float64(n) / span
	}
	return sum
}

func appendOnce(list []string, s string, seg int) []string {
	for _, x := range list {
		if x == s || strings.HasSuffix(x, ": "+s) {
			return list
		}
	}
	if seg > 0 {
		s = fmt.Sprintf("segment %d: %s", seg, s)
	}
	return append(list, s)
}

func mergeNotes(parts []*part) []string {
	var out []string
	for i, p := range parts {
		for _, n := range p.res.Notes {
			out = appendOnce(out, n, i)
		}
	}
	return out
}

func mergeEndpoints(parts []*part) []sut.EndpointStat {
	var out []sut.EndpointStat
	idx := map[string]int{}
	for _, p := range parts {
		for _, e := range p.res.Endpoints {
			j, ok := idx[e.URL]
			if !ok {
				idx[e.URL] = len(out)
				out = append(out, e)
				continue
			}
			m := &out[j]
			m.Up = m.Up && e.Up
			m.Sent += e.Sent
			m.Accepted += e.Accepted
			m.Rejected += e.Rejected
			m.Unacked += e.Unacked
			m.TransportErrors += e.TransportErrors
			m.Failovers += e.Failovers
			m.DownS = math.Max(m.DownS, e.DownS)
			if e.LastError != "" {
				m.LastError = e.LastError
			}
		}
	}
	return out
}

// chainFromBlocks judges the chain's gaps from the merged blocks, each at
// the earliest time a segment saw it: a segment that was stopped (SIGSTOP,
// a paused pod) saw no block while it was, but the chain did not stop
// (issue 51: "segment 1: no block for 10.1 s" while the chain's longest
// gap was 0.68 s). A stall or halt no merged gap supports is dropped.
func chainFromBlocks(s *report.Summary, blocks []measure.BlockStat) {
	if len(blocks) < 2 {
		return
	}
	seen := make([]float64, len(blocks))
	for i, b := range blocks {
		seen[i] = b.Seen
	}
	sort.Float64s(seen)
	longest := 0.0
	for i := 1; i < len(seen); i++ {
		longest = math.Max(longest, seen[i]-seen[i-1])
	}
	if end := s.Steady.EndS + s.Steady.DrainS; end > seen[len(seen)-1] && s.Halted != "" {
		longest = math.Max(longest, end-seen[len(seen)-1]) // a halt that lasted to the end
	}
	longest = math.Round(longest*10) / 10
	if longest < s.LongestGapS {
		s.LongestGapS = longest
	}
	kept := s.Stalls[:0]
	for _, st := range s.Stalls {
		if st.DurationS <= longest+0.5 {
			kept = append(kept, st)
		}
	}
	s.Stalls = kept
	if len(kept) == 0 {
		s.Halted = ""
	}
	var warns []string
	for _, w := range s.Warnings {
		body := w
		if i := strings.Index(w, ": no block for "); strings.HasPrefix(w, "segment ") && i > 0 {
			body = w[i+2:]
		}
		var d float64
		if _, err := fmt.Sscanf(body, "no block for %g s", &d); err == nil && d > longest+0.5 {
			continue // that segment's view, not the chain's
		}
		warns = append(warns, w)
	}
	s.Warnings = warns
}

// machineFromSegments is the machine as the segments saw it together:
// each counted the others' CPU as other processes', so others are the
// machine's busy time less every segment's and the system's.
func machineFromSegments(s *report.Summary, parts []*part) {
	g := &s.Generator
	var steal, load float64
	for _, p := range parts {
		pg := p.res.Summary.Generator
		steal = math.Max(steal, pg.StealPercent)
		load = math.Max(load, pg.LoadAverage)
	}
	g.StealPercent, g.LoadAverage = steal, load
	nodes, _ := report.SystemSum(s.Telemetry, ".cpu_percent", func(st telemetry.Stat) float64 { return st.Mean })
	capacity := 100 * float64(max(1, g.Cores))
	g.OthersCPUPercent = math.Round(max(0, g.MachineCPUPercent/100*capacity-g.CPUPercent-nodes)*10) / 10
	if g.OthersCPUPercent < 0.25*capacity && steal < 10 {
		// No segment's "machine busy" stands once the others' CPU is
		// known to be the segments' own.
		var warns []string
		for _, w := range s.Warnings {
			if !strings.Contains(w, "measure on a quiet machine") {
				warns = append(warns, w)
			}
		}
		s.Warnings = warns
		return
	}
	for _, p := range parts {
		if mb := p.res.Summary.Generator.MachineBusy; mb != "" {
			g.MachineBusy = mb
		}
	}
}

// deadCounts replaces the counts of a segment that did not finish with
// its series', streamed every second and so newer than its last summary
// (issue 51: the series offered 16,500 where the summary said 15,000), and
// closes its identities: what it had offered and not sent is unsent, what
// it had sent and not seen resolved is in flight at the end (it died
// following them), an invalid payment not resolved is unknown.
func deadCounts(r *report.Result) {
	if len(r.Series) == 0 {
		return
	}
	var c measure.Counts
	for i := range r.Series {
		c.Add(&r.Series[i].Counts)
	}
	c.Expired -= c.LateCommits + c.LateRefusals // the series counts an expiry when it happened (Counts.PerSecond)
	inv := measure.Sum(c.InvalidSent)
	if early := c.Sent + c.Unsent + inv - c.Offered; early > 0 {
		// Sent in a second it died before collecting: offered in it.
		r.Series[len(r.Series)-1].Offered += early
		c.Offered += early
	}
	c.Unsent += c.Offered - c.Sent - c.Unsent - inv
	if open := c.Sent - c.Accepted - measure.Sum(c.Rejected) - measure.Sum(c.Unacked); open > 0 {
		// Sent, its answer not yet recorded when the segment died: it may
		// have reached the system, as a lost answer may (sut.Unreadable).
		if c.Unacked == nil {
			c.Unacked = map[string]int64{}
		}
		c.Unacked["no answer when its segment died"] += open
	}
	c.InFlightEnd = max(0, c.Accepted+measure.Sum(c.Unacked)-c.Committed-measure.Sum(c.Failed)-c.Expired)
	if open := inv - measure.Sum(c.InvalidRefused) - measure.Sum(c.InvalidCommitted) - measure.Sum(c.InvalidUnknown); open > 0 {
		if c.InvalidUnknown == nil {
			c.InvalidUnknown = map[string]int64{}
		}
		c.InvalidUnknown["unresolved when its segment died"] += open
	}
	r.Summary.Counts = c
	var offered, sent, accepted, steady int64
	for _, x := range r.Series {
		if x.Phase == "steady" {
			offered += x.Offered - measure.Sum(x.InvalidSent)
			sent, accepted, steady = sent+x.Sent, accepted+x.Accepted, steady+1
		}
	}
	if steady > 0 {
		n := float64(r.Summary.Steady.DurationS)
		if n == 0 {
			n = float64(steady)
		}
		r.Summary.OfferedTPS, r.Summary.SentTPS, r.Summary.AcceptedTPS = float64(offered)/n, float64(sent)/n, float64(accepted)/n
	}
}
