package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure/measuretest"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// codeZeroTxs reads blocks [from, to] from a node's RPC and counts the
// transactions that committed with code 0: the independent count.
func codeZeroTxs(t *testing.T, rpc string, from, to int64) (n int64) {
	t.Helper()
	for h := from; h <= to; h++ {
		resp, err := http.Get(fmt.Sprintf("%s/block_results?height=%d", rpc, h))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Result struct {
				TxsResults []struct {
					Code int `json:"code"`
				} `json:"txs_results"`
			} `json:"result"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("block_results %d: %v", h, err)
		}
		for _, r := range v.Result.TxsResults {
			if r.Code == 0 {
				n++
			}
		}
	}
	return n
}

// rawSteady reads a segment's latencies.csv: the steady window's commit
// latencies in µs.
func rawSteady(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ",")
		if len(parts) != 3 || parts[1] != "steady" {
			continue
		}
		v, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", path, sc.Text())
		}
		out = append(out, v)
	}
	return out
}

// quantile is the value at rank round(q*n) of sorted samples (at least 1),
// as HdrHistogram counts it, in ms.
func quantile(sorted []int64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return float64(sorted[max(0, i)]) / 1000
}

// A load spread over 2 local segments is merged exactly: its committed count
// is the blocks' own, its percentiles lie within the segments' and match
// the percentiles of all their raw samples within HDR precision, and every
// reading command takes the merged result, beside one process's run of the
// same scenario.
func TestTwoSegmentsMergeExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network and three runs")
	}
	bin := testbin.Path(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	netUp(t, home)
	n, err := testnet.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"--net-home", home, "--rate", "400", "--duration", "12s", "--warmup", "1s", "--senders", "400"}
	one, merged := filepath.Join(dir, "one"), filepath.Join(dir, "merged")
	if out, err := exec.Command(bin, append([]string{"run", "--out", one}, common...)...).CombinedOutput(); err != nil {
		t.Fatalf("one process: %v\n%s", err, out)
	}
	// The segmented run is watched live (issue 35): its page, loaded
	// mid-run in Chromium, shows the segments' seconds merged.
	w := startWatched(t, append([]string{"run", "--segments", "2", "--raw-latencies", "--out", merged, "--dashboard=127.0.0.1:0",
		"--threshold", "committed_tps>=100", "--threshold", "p99_commit<=30s"}, common...)...)
	select {
	case url := <-w.url:
		waitLive(t, url, 0) // the segments write their seconds every 5 s
		dom := page(t, url)
		checkLivePage(t, dom, 0)
		if !strings.Contains(dom, "merged from 2 segments") {
			t.Error("the page does not say it merges 2 segments")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no dashboard address printed")
	}
	<-w.done
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("2 segments: exit %d", code)
	}
	r, err := report.ReadResult(merged)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	measuretest.Identities(t, s.Counts)
	if len(r.Segments) != 2 || r.Status != "complete" || r.EndedBecause != "completed" {
		t.Fatalf("status %q (%s), segments %+v", r.Status, r.EndedBecause, r.Segments)
	}
	// Counted exactly: the segments' sum, and the blocks' own count.
	var sum int64
	for i, sg := range r.Segments {
		sum += sg.Committed
		if sg.RTTMs <= 0 || math.Abs(sg.OffsetBeforeMs) > 50 || math.Abs(sg.OffsetAfterMs) > 50 {
			t.Errorf("segment %d: clock %+v", i, sg)
		}
	}
	if s.Committed != sum || s.Offered != 400*12 || s.Committed < s.Offered*9/10 {
		t.Errorf("merged committed %d (segments %d), offered %d", s.Committed, sum, s.Offered)
	}
	if got := codeZeroTxs(t, n.Nodes[0].RPC, r.Chain.FirstHeight, r.Chain.LastHeight); got != s.Committed {
		t.Errorf("merged committed %d; blocks %d..%d hold %d", s.Committed, r.Chain.FirstHeight, r.Chain.LastHeight, got)
	}
	var blocksOurs int64
	for _, b := range r.Blocks {
		blocksOurs += int64(b.OursOK)
	}
	if blocksOurs != s.Committed {
		t.Errorf("merged blocks.jsonl counts %d of ours; committed %d", blocksOurs, s.Committed)
	}
	var perSecond int64
	for _, sec := range r.Series {
		perSecond += sec.Committed
	}
	if perSecond != s.Committed {
		t.Errorf("merged series sums to %d committed; summary %d", perSecond, s.Committed)
	}
	// Percentiles: within the segments' own, and those of every raw sample.
	var raw []int64
	lo, hi := map[string]float64{"p50": math.Inf(1), "p99": math.Inf(1)}, map[string]float64{}
	for i := range r.Segments {
		sr, err := report.ReadResult(filepath.Join(merged, "segments", strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		c := sr.Summary.LatencyMs.Commit
		lo["p50"], hi["p50"] = math.Min(lo["p50"], c.P50), math.Max(hi["p50"], c.P50)
		lo["p99"], hi["p99"] = math.Min(lo["p99"], c.P99), math.Max(hi["p99"], c.P99)
		raw = append(raw, rawSteady(t, filepath.Join(merged, "segments", strconv.Itoa(i), "latencies.csv"))...)
	}
	sort.Slice(raw, func(i, j int) bool { return raw[i] < raw[j] })
	c := s.LatencyMs.Commit
	if c.Count != int64(len(raw)) {
		t.Errorf("merged commit latency counts %d samples; the segments' raw files hold %d", c.Count, len(raw))
	}
	for name, got := range map[string]float64{"p50": c.P50, "p99": c.P99} {
		// Between the segments' own, give or take 1%: each segment's steady
		// window is its own, a few payments off the merged one's (CI: 610.3
		// against 606.7..608.8); the exact check is against the raw samples.
		if got < lo[name]*0.99 || got > hi[name]*1.01 {
			t.Errorf("merged %s %.3f ms outside the segments' %.3f..%.3f", name, got, lo[name], hi[name])
		}
		q := map[string]float64{"p50": 0.5, "p99": 0.99}[name]
		// HdrHistogram at 3 significant digits: within 1/1024 of the value.
		if want := quantile(raw, q); math.Abs(got-want) > want/1024+0.002 {
			t.Errorf("merged %s %.3f ms; the raw samples' %.3f ms", name, got, want)
		}
	}
	if len(r.Thresholds) != 2 || !r.Thresholds[0].OK || !r.Thresholds[1].OK {
		t.Errorf("thresholds %+v", r.Thresholds)
	}
	// One process at the same scenario: the same throughput, by compare.
	o, err := report.ReadResult(one)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one process: %.1f committed/s, p50 %.1f ms, p99 %.1f ms; 2 segments: %.1f committed/s, p50 %.1f ms, p99 %.1f ms",
		o.Summary.CommittedTPS, o.Summary.LatencyMs.Commit.P50, o.Summary.LatencyMs.Commit.P99, s.CommittedTPS, c.P50, c.P99)
	if ratio := s.CommittedTPS / o.Summary.CommittedTPS; ratio < 0.85 || ratio > 1.15 {
		t.Errorf("committed_tps: 2 segments %.1f, one process %.1f", s.CommittedTPS, o.Summary.CommittedTPS)
	}
	for _, args := range [][]string{{"report", merged}, {"compare", one, merged}, {"runs", "--dir", dir}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != 0 && code != 1 {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(merged, "report.html")); err != nil {
		t.Error(err)
	}
}

// segmentPID finds the process of segment i/n among this machine's
// processes: a tpslab run whose arguments hold --segment i/n and out.
func segmentPID(t *testing.T, i, n int, out string) int {
	t.Helper()
	want := fmt.Sprintf("--segment\x00%d/%d\x00", i, n)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), want) || !strings.Contains(string(b), out) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		return pid
	}
	return 0
}

// A segment killed mid-run (SIGKILL) leaves a merged result that says it
// is partial: its status, its verdict and the exit code; compare and
// history refuse it (issue 34, case 2).
func TestKilledSegmentMakesAPartialResult(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network and a segmented run")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	netUp(t, home)
	merged := filepath.Join(dir, "merged")
	cmd, lines := startRun(t, nil, "run", "--segments", "2", "--net-home", home, "--rate", "300", "--duration", "8s", "--warmup", "1s", "--senders", "200", "--out", merged)
	waitLine(t, lines, "load:", time.Minute)
	waitLoaded(t, filepath.Join(merged, "segments", "1"), 3)
	pid := segmentPID(t, 1, 2, merged)
	if pid == 0 {
		t.Fatal("no process of segment 1/2")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, _ := waitExit(t, cmd, 2*time.Minute)
	r, err := report.ReadResult(merged)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d; status %q; verdict %s", code, r.Status, r.Verdict())
	if code == 0 || r.Status != "partial" || !strings.HasPrefix(r.Verdict(), "PARTIAL (segment 1: ") || r.Incomplete() == "" {
		t.Errorf("a killed segment: exit %d, status %q, verdict %q", code, r.Status, r.Verdict())
	}
	// Its figures agree with each other: the identities hold (what the dead
	// segment had in flight is in flight at the end, not dropped), and the
	// series offers what the summary does (issue 51).
	measuretest.Identities(t, r.Summary.Counts)
	var offered int64
	for _, x := range r.Series {
		offered += x.Offered
	}
	if offered != r.Summary.Offered {
		t.Errorf("the merged series offers %d, its summary %d", offered, r.Summary.Offered)
	}
	one := writeResult(t, filepath.Join(dir, "one"), "complete", 10, 5000)
	if _, stderr, code := tpslabIn(t, "compare", one, merged); code != 2 || !strings.Contains(stderr, "partial: segment 1") {
		t.Errorf("compare with a partial result: exit %d, %q", code, stderr)
	}
	if _, stderr, code := tpslabIn(t, "history", "add", merged, "--store", filepath.Join(dir, "h.jsonl"), "--series", "s", "--label", "x"); code != 2 || !strings.Contains(stderr, "partial") {
		t.Errorf("history add of a partial result: exit %d, %q", code, stderr)
	}
}

// A segment stopped (SIGSTOP) for 10 s and resumed: the merged result
// names the generator that sent late, and no segment's own view ("no block
// for 10 s") is taken for the chain's (issue 51, item 4).
func TestFrozenSegmentIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network and a segmented run")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	netUp(t, home)
	merged := filepath.Join(dir, "merged")
	cmd, lines := startRun(t, nil, "run", "--segments", "2", "--net-home", home, "--rate", "300", "--duration", "16s", "--warmup", "1s", "--senders", "200", "--out", merged)
	waitLine(t, lines, "load:", time.Minute)
	waitLoaded(t, filepath.Join(merged, "segments", "1"), 3)
	pid := segmentPID(t, 1, 2, merged)
	if pid == 0 {
		t.Fatal("no process of segment 1/2")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	// Stopped for 10 s of the other segment's load.
	waitLoaded(t, filepath.Join(merged, "segments", "0"), measuretest.LoadedFor(filepath.Join(merged, "segments", "0"))+10)
	syscall.Kill(pid, syscall.SIGCONT)
	stopped := time.Since(stoppedAt)
	code, _ := waitExit(t, cmd, 2*time.Minute)
	r, err := report.ReadResult(merged)
	if err != nil {
		t.Fatal(err)
	}
	j := r.Judge()
	t.Logf("exit %d; verdict %s; limit %s; lag %+v; generator %+v; shortfall %+v", code, r.Verdict(), j.Limit.Figures, r.Summary.LatencyMs.ScheduleLag, r.Summary.Generator, r.Summary.Shortfall)
	if j.Limit.Cause != report.CauseLate {
		t.Errorf("a frozen segment: limit %s (%s), want %s; verdict %q", j.Limit.Cause, j.Limit.Figures, report.CauseLate, r.Verdict())
	}
	// The segment was stopped for as long as the test held it between the
	// signals (ten of the other's loaded seconds, 9.9 s of wall time on a
	// busy machine): its own clock says so, less one of its ticks.
	if g := r.Summary.Generator; g.LongestPauseMs < float64(stopped.Milliseconds())-1000 || g.PausedS < g.LongestPauseMs/1000-0.1 {
		t.Errorf("paused %.1f s, longest %.0f ms: the segment was stopped for %s", g.PausedS, g.LongestPauseMs, stopped.Round(time.Millisecond))
	}
	for _, w := range r.Summary.Warnings {
		if strings.Contains(w, "no block for") {
			t.Errorf("a segment's view taken for the chain's: %q (longest gap %.1f s)", w, r.Summary.LongestGapS)
		}
	}
	if r.Summary.Halted != "" || r.Summary.LongestGapS > 5 {
		t.Errorf("halted %q, longest gap %.1f s: the chain did not stop", r.Summary.Halted, r.Summary.LongestGapS)
	}
}

// When the controller is killed (SIGKILL), its segments stop within
// seconds, as if interrupted, and each says why in its directory: they do
// not go on loading the network without the controller's sender lock
// (issue 34, case 5).
func TestKilledControllerStopsItsSegments(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network and a segmented run")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	netUp(t, home)
	merged := filepath.Join(dir, "merged")
	const load = 60 * time.Second
	cmd, lines := startRun(t, nil, "run", "--segments", "2", "--net-home", home, "--rate", "200", "--duration", load.String(), "--warmup", "1s", "--senders", "200", "--out", merged)
	waitLine(t, lines, "load:", time.Minute)
	waitLoaded(t, filepath.Join(merged, "segments", "0"), 2)
	waitLoaded(t, filepath.Join(merged, "segments", "1"), 2)
	pids := []int{segmentPID(t, 0, 2, merged), segmentPID(t, 1, 2, merged)}
	if pids[0] == 0 || pids[1] == 0 {
		t.Fatalf("segment processes %v", pids)
	}
	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	// Its segments still send: a run on their senders is refused, naming
	// one of them (issue 52, case 5: it was accepted).
	if lk, err := testnet.LockSenders(home, 0, 200); err == nil {
		lk.Release()
		t.Errorf("a run on the senders of live segments was accepted")
	} else if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pids[0])) && !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pids[1])) {
		t.Errorf("refused without naming a segment (pids %v): %v", pids, err)
	}
	if pid := testnet.InUse(home); pid != pids[0] && pid != pids[1] {
		t.Errorf("InUse names pid %d, expected a segment's (%v)", pid, pids)
	}
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Since(killed) < load {
			time.Sleep(100 * time.Millisecond)
		}
	}
	took := time.Since(killed)
	t.Logf("segments stopped %s after their controller was killed", took.Round(100*time.Millisecond))
	if lk, err := testnet.LockSenders(home, 0, 200); err != nil {
		t.Errorf("the senders are still locked after the segments stopped: %v", err)
	} else {
		lk.Release()
	}
	// Five seconds without an answer, then an interruption's drain: far
	// before the load would have ended.
	if took > load/2 {
		t.Errorf("segments still ran %s after their controller died", took)
	}
	for i := range pids {
		sd := filepath.Join(merged, "segments", strconv.Itoa(i))
		why, err := os.ReadFile(filepath.Join(sd, "controller-lost.txt"))
		if err != nil || !strings.Contains(string(why), "has not answered") {
			t.Errorf("segment %d: %v %q", i, err, why)
		}
		if r, err := report.ReadResult(sd); err != nil {
			t.Errorf("segment %d: %v", i, err)
		} else if !strings.HasPrefix(r.EndedBecause, "interrupted") {
			t.Errorf("segment %d: ended %q", i, r.EndedBecause)
		}
	}
}

// waitLoaded waits until the run writing to dir has loaded for secs by
// its own clock (a line of its series.jsonl says t >= secs).
func waitLoaded(t *testing.T, dir string, secs float64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); measuretest.LoadedFor(dir) < secs; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never loaded for %.0f s (at %.0f)", dir, secs, measuretest.LoadedFor(dir))
		}
	}
}
