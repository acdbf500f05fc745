package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// writeResult writes a minimal finished (or not) run directory.
func writeResult(t *testing.T, dir, status string, steadyS float64, committed int64) string {
	t.Helper()
	r := report.Result{SchemaVersion: report.SchemaVersion, Status: status, EndedBecause: "completed", StartedAt: time.Now().UTC(), Dir: dir}
	r.Summary.Steady.DurationS = steadyS
	r.Summary.Steady.Committed = committed
	r.Summary.Offered, r.Summary.Sent, r.Summary.Accepted, r.Summary.Committed = 5000, 5000, 5000, committed
	if steadyS > 0 {
		r.Summary.CommittedTPS = float64(committed) / steadyS
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var series bytes.Buffer
	for i := 1; i <= int(steadyS); i++ {
		b, _ := json.Marshal(report.Second{T: float64(i), Phase: "steady", Counts: measure.Counts{Offered: 500, Sent: 500, Accepted: 500, Committed: committed / int64(steadyS)}})
		series.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "series.jsonl"), series.Bytes(), 0o644)
	if err := report.WriteJSON(filepath.Join(dir, "result.json"), r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// compare must never call a collapse to zero, or a run without steady data,
// "no significant difference".
func TestCompareRefusesWhatItCannotCompare(t *testing.T) {
	dir := t.TempDir()
	good := writeResult(t, filepath.Join(dir, "good"), "complete", 10, 4970)
	zero := writeResult(t, filepath.Join(dir, "zero"), "complete", 10, 0)
	nosteady := writeResult(t, filepath.Join(dir, "nosteady"), "complete", 0, 0)
	killed := writeResult(t, filepath.Join(dir, "killed"), "running", 10, 4970)
	for _, c := range []struct {
		b    string
		code int
		want string
	}{
		{zero, 1, "collapsed"},
		{nosteady, 2, "no steady data to compare"},
		{killed, 2, "the run did not finish (interrupted, no final summary)"},
	} {
		stdout, stderr, code := tpslabIn(t, "compare", good, c.b, "--out", filepath.Join(dir, "c.html"))
		out := stdout + stderr
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("compare good %s: exit %d, output %q; want exit %d and %q", filepath.Base(c.b), code, out, c.code, c.want)
		}
		if strings.Contains(out, "no significant difference") {
			t.Errorf("compare good %s: %q", filepath.Base(c.b), out)
		}
	}
	out, _, _ := tpslabIn(t, "runs", "--dir", dir)
	if !strings.Contains(out, "incomplete: interrupted, no final summary") {
		t.Errorf("runs does not show the killed run as incomplete:\n%s", out)
	}
	out, stderr, code := tpslabIn(t, "report", killed)
	page, _ := os.ReadFile(filepath.Join(killed, "report.html"))
	if code != 0 || !strings.Contains(string(page), "incomplete: interrupted, no final summary") {
		t.Errorf("report of a killed run: exit %d %s %s", code, out, stderr)
	}
}

// netUp starts a one-validator reference network in home, stopped when
// the test ends.
func netUp(t *testing.T, home string) {
	t.Helper()
	bin := testbin.Path(t)
	if out, err := exec.Command(bin, "net", "up", "--validators", "1", "--home", home).CombinedOutput(); err != nil {
		t.Fatalf("net up: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "net", "down", "--home", home).Run() })
}

// startRun starts the tpslab binary and returns it with its stderr lines.
func startRun(t *testing.T, env []string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, lines
}

func waitLine(t *testing.T, lines <-chan string, prefix string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the run ended before printing %q", prefix)
			}
			if strings.Contains(l, prefix) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within %s", prefix, timeout)
		}
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd, timeout time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err), time.Since(start)
	case <-time.After(timeout):
		cmd.Process.Kill()
		t.Fatalf("still running %s after the signal", timeout)
	}
	return 0, 0
}

func sinkURL(t *testing.T) string {
	srv := httptest.NewServer(sink.NewSink("tpslab", testnet.DefaultGenesis()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Ctrl-C while presigning stops long before the load would have ended
// and leaves a result that says why the run ended.
func TestInterruptWhilePresigning(t *testing.T) {
	if testing.Short() {
		t.Skip("signals a tpslab process")
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd, lines := startRun(t, nil, "run", "--endpoint", sinkURL(t), "--rate", "200000", "--duration", "30s", "--out", out)
	waitLine(t, lines, "presigning", 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	// Presigning 6 million payments alone takes far longer than 15 s (10x
	// the second it takes to stop on a quiet machine).
	code, took := waitExit(t, cmd, time.Minute)
	if code != 3 || took > 15*time.Second {
		t.Errorf("exit %d after %s, want 3, long before presigning could have finished", code, took)
	}
	r, err := report.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "complete" || !strings.Contains(r.EndedBecause, "interrupted before the load") || !strings.Contains(r.EndedBecause, "presigning stopped") {
		t.Errorf("status %q, ended %q", r.Status, r.EndedBecause)
	}
}

// A closed terminal (SIGHUP) is handled like SIGTERM: the run stops, writes
// its result and stops the network it started. SIGTERM drains.
func TestHangupAndTermStopTheNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks")
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		tmp := t.TempDir()
		out := filepath.Join(t.TempDir(), "run")
		cmd, lines := startRun(t, []string{"TMPDIR=" + tmp}, "run", "--validators", "1", "--rate", "100", "--duration", "60s", "--warmup", "1s", "--mode", "live", "--out", out)
		waitLine(t, lines, "load:", time.Minute)
		waitLoaded(t, out, 3)
		homes, _ := filepath.Glob(filepath.Join(tmp, testnet.TempPrefix+"*"))
		if len(homes) != 1 {
			t.Fatalf("%s: network homes %v", sig, homes)
		}
		n, err := testnet.Load(homes[0])
		if err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(sig)
		code, _ := waitExit(t, cmd, time.Minute)
		r, err := report.ReadResult(out)
		if err != nil {
			t.Fatal(err)
		}
		measuretest.Identities(t, r.Summary.Counts)
		if code != 3 || !strings.HasPrefix(r.EndedBecause, "interrupted") || r.Summary.Expired != 0 {
			t.Errorf("%s: exit %d, ended %q, expired %d", sig, code, r.EndedBecause, r.Summary.Expired)
		}
		if n.Running() != 0 {
			t.Errorf("%s: %d node(s) left running", sig, n.Running())
		}
	}
}

// After a SIGKILL, the next `tpslab net` names the network it left behind.
func TestOrphanedNetworkIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	cmd, lines := startRun(t, env, "run", "--validators", "1", "--rate", "50", "--duration", "60s", "--warmup", "1s", "--mode", "live", "--out", filepath.Join(t.TempDir(), "run"))
	waitLine(t, lines, "load:", time.Minute)
	cmd.Process.Kill()
	cmd.Wait()
	homes, _ := filepath.Glob(filepath.Join(tmp, testnet.TempPrefix+"*"))
	if len(homes) != 1 {
		t.Fatalf("homes %v", homes)
	}
	defer exec.Command(testbin.Path(t), "net", "down", "--home", homes[0]).Run()
	c := exec.Command(testbin.Path(t), "net", "status", "--home", homes[0])
	c.Env = append(os.Environ(), env...)
	out, _ := c.CombinedOutput()
	if want := "found an orphaned network in " + homes[0]; !strings.Contains(string(out), want) {
		t.Errorf("net status did not name the orphan:\n%s", out)
	}
	if err := exec.Command(testbin.Path(t), "net", "down", "--home", homes[0]).Run(); err != nil {
		t.Fatal(err)
	}
	c = exec.Command(testbin.Path(t), "net", "status", "--home", homes[0])
	c.Env = append(os.Environ(), env...)
	out, _ = c.CombinedOutput()
	if strings.Contains(string(out), "orphaned") {
		t.Errorf("a stopped network is still called orphaned:\n%s", out)
	}
	// net down stopped it on purpose (issue 23, case 7).
	if strings.Contains(string(out), "crashed") || !strings.Contains(string(out), "stopped") {
		t.Errorf("after net down, net status says:\n%s", out)
	}
}

// A full disk mid-run is reported at once, and the run stops with a valid
// result instead of cutting lines and going on. In-process, against an
// in-process sink: part of the short tier.
func TestDiskFullStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a small tmpfs: %v (CI runs as root)", err)
		}
		t.Skipf("cannot mount a small tmpfs here (%v): needs root", err)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() }) // before TempDir removes it
	// Leave room for the reserve, the first result.json and a second or
	// two; --raw-latencies writes a line per payment, so the disk fills
	// within seconds of the load.
	filler := make([]byte, 1<<20-256<<10-8<<10)
	os.WriteFile(filepath.Join(dir, "filler"), filler, 0o644)
	out := filepath.Join(dir, "run")
	const load = 60 * time.Second
	start := time.Now()
	_, stderr, code := tpslabIn(t, "run", "--endpoint", sinkURL(t), "--rate", "2000", "--duration", load.String(), "--warmup", "1s", "--mode", "live", "--senders", "100", "--raw-latencies", "--drain", "1s", "--out", out)
	took := time.Since(start)
	t.Logf("stopped after %s", took.Round(time.Millisecond))
	if code != 3 || took > load {
		t.Errorf("exit %d after %s: want 3, before the %s load would have ended", code, took, load)
	}
	if !strings.Contains(stderr, "WARNING: writing") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("no warning about the full disk:\n%s", stderr)
	}
	r, err := report.ReadResult(out)
	if err != nil {
		t.Fatalf("the result is not valid: %v", err)
	}
	measuretest.Identities(t, r.Summary.Counts)
	if r.Status != "complete" || !strings.HasPrefix(r.EndedBecause, "disk_full: ") {
		t.Errorf("status %q, ended %q", r.Status, r.EndedBecause)
	}
}

// Two runs must not fight over one network's sequences: the second is
// refused, unless it sends from other accounts.
func TestSecondRunOnANetworkIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	bin := testbin.Path(t)
	home := filepath.Join(t.TempDir(), "net")
	netUp(t, home)
	first, lines := startRun(t, nil, "run", "--net-home", home, "--rate", "50", "--duration", "30s", "--mode", "live", "--senders", "200", "--out", filepath.Join(t.TempDir(), "a"))
	waitLine(t, lines, "load:", time.Minute)
	out, err := exec.Command(bin, "run", "--net-home", home, "--duration", "3s", "--warmup", "1s", "--senders", "100", "--out", filepath.Join(t.TempDir(), "b")).CombinedOutput()
	if exitCode(err) != 2 || !strings.Contains(string(out), fmt.Sprintf("another tpslab run (pid %d) is sending from accounts 0..199", first.Process.Pid)) {
		t.Errorf("second run: exit %d\n%s", exitCode(err), out)
	}
	out, err = exec.Command(bin, "run", "--net-home", home, "--rate", "50", "--duration", "3s", "--warmup", "1s", "--mode", "live", "--senders", "100", "--senders-offset", "200", "--out", filepath.Join(t.TempDir(), "c")).CombinedOutput()
	if err != nil {
		t.Errorf("a run with disjoint senders was refused: %v\n%s", err, out)
	}
	first.Process.Signal(os.Interrupt)
	waitExit(t, first, time.Minute)
	_ = context.Background
}

// net up --kind cosmos drives an SDK daemon through its standard command
// line; --binary takes the user's own (here tpsd, given by path), and net
// status, check and down work on it.
func TestNetUpCosmosWithBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	tpsd, err := sdknet.Tpsd(nil)
	if err != nil {
		t.Fatal(err)
	}
	bin := testbin.Path(t)
	home := filepath.Join(t.TempDir(), "sdk")
	out, err := exec.Command(bin, "net", "up", "--kind", "cosmos", "--binary", tpsd, "--validators", "2", "--accounts", "200", "--home", home).CombinedOutput()
	if err != nil {
		t.Fatalf("net up: %v\n%s", err, out)
	}
	defer exec.Command(bin, "net", "down", "--home", home).Run()
	n, err := testnet.Load(home)
	if err != nil || n.Kind != "cosmos" || sdknet.Of(n).Binary != tpsd || sdknet.Of(n).Denom != "stake" || sdknet.Of(n).Prefix != "cosmos" || n.Nodes[1].API == "" || n.Nodes[1].GRPC == "" {
		t.Fatalf("net.json: %+v %v", n, err)
	}
	for _, nd := range n.Nodes {
		for _, a := range []string{nd.RPC, nd.API, nd.GRPC, nd.P2P} {
			if !strings.Contains(a, "127.0.0.1:") {
				t.Errorf("%s listens on %s, not loopback", nd.Name, a)
			}
		}
	}
	if out, err := exec.Command(bin, "net", "status", "--home", home).CombinedOutput(); err != nil || strings.Count(string(out), " running ") != 2 {
		t.Errorf("net status: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "net", "up", "--kind", "cosmos", "--binary", tpsd, "--home", home).CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "holds a running network (2 of 2 nodes running)") {
		t.Errorf("net up on a running home: exit %d, %s", exitCode(err), out)
	}
	// A scenario that asks for another network than the home's: the run
	// says what it set aside, and the result describes the network that ran.
	runDir := filepath.Join(t.TempDir(), "r")
	scFile := filepath.Join(t.TempDir(), "other-network.yaml")
	os.WriteFile(scFile, []byte("version: 1\nnetwork:\n  validators: 3\n  timeout_commit: 2s\n"), 0o644)
	out, err = exec.Command(bin, "run", scFile, "--net-home", home, "--rate", "100", "--duration", "4s", "--warmup", "1s", "--senders", "100", "--via", "rest", "--out", runDir).CombinedOutput()
	if err != nil {
		t.Errorf("run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "network.validators 3 (the network has 2)") || !strings.Contains(string(out), "set aside") {
		t.Errorf("the run did not say which scenario settings it set aside:\n%s", out)
	}
	// The result names the binary --binary gave: its path, hash and
	// version, and the genesis hash (issue 55).
	res, err := report.ReadResult(runDir)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := buildcache.FileSHA256(tpsd)
	if p := res.Network.Provenance; p == nil || len(p.Programs) != 1 || p.Programs[0].Path != tpsd || p.Programs[0].SHA256 != sum || p.Programs[0].Version == "" || len(p.GenesisSHA256) != 64 {
		t.Errorf("provenance %+v, want %s with SHA-256 %s, its version, and the genesis hash", p, tpsd, sum)
	}
	if nw := res.Network; nw.Kind != "cosmos" || nw.Validators != 2 || !slices.Contains(nw.SetAside, "network.validators 3 (the network has 2)") || len(nw.SetAside) != 2 {
		t.Errorf("result.json's network: kind %q, %d validators, set aside %q; want cosmos, the home's 2, and the scenario's validators and timeout_commit named", nw.Kind, nw.Validators, nw.SetAside)
	}
	// reproduce runs the program given on its command line, checked
	// against the recorded hash, on a fresh network of the run's size.
	again := filepath.Join(t.TempDir(), "again")
	out, err = exec.Command(bin, "reproduce", runDir, "--repeat", "1", "--binary", tpsd, "--out", again).CombinedOutput()
	t.Logf("reproduce:\n%s", out)
	if rep, rerr := report.ReadResult(filepath.Join(again, "rep-1")); rerr != nil {
		t.Errorf("reproduce wrote no run: %v (%v)", rerr, err)
	} else if p := rep.Network.Provenance; rep.Network.Kind != "cosmos" || rep.Network.Validators != 2 || p == nil || len(p.Programs) != 1 || p.Programs[0].SHA256 != sum {
		t.Errorf("reproduce ran kind %q, %d validators, programs %+v; want cosmos, 2, and %s", rep.Network.Kind, rep.Network.Validators, p, tpsd)
	}
	// Its payments re-counted through the other node than the run read.
	if out, err := exec.Command(bin, "verify", runDir, "--net-home", home).CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "verified: ") || !strings.Contains(string(out), n.Nodes[1].RPC) {
		t.Errorf("verify: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}
	if out, err := exec.Command(bin, "net", "check", "--home", home).CombinedOutput(); err != nil || !strings.Contains(string(out), "supply of stake is the genesis supply plus what x/mint minted") {
		t.Errorf("net check: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "net", "down", "--home", home).CombinedOutput(); err != nil || n.Running() != 0 {
		t.Errorf("net down: %v %s; %d running", err, out, n.Running())
	}
	// verify with the network down: one line saying so and how to start it.
	out, err = exec.Command(bin, "verify", runDir).CombinedOutput()
	if code := exitCode(err); code != 3 || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), "tpslab net start --home "+home) {
		t.Errorf("verify after net down: exit %d, %q; want 3 and one line naming `tpslab net start --home %s`", code, out, home)
	}
}

// runs and serve list the same campaigns, each with its result: a run,
// a repetition set, a find-max search (its steps not apart) and an ab
// comparison with its verdict (issues 35 and 54).
func TestRunsAndServeListTheSameCampaigns(t *testing.T) {
	dir := t.TempDir()
	writeResult(t, filepath.Join(dir, "single"), "complete", 10, 4970)
	// A run that kept up and failed a threshold (its exit code was 1).
	missed, err := report.ReadResult(writeResult(t, filepath.Join(dir, "missed"), "complete", 10, 4970))
	if err != nil {
		t.Fatal(err)
	}
	missed.Thresholds = []report.ThresholdOutcome{{Expr: "p99_commit<=1ms", Actual: 480}}
	if err := report.WriteJSON(filepath.Join(dir, "missed", "result.json"), missed); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		writeResult(t, filepath.Join(dir, "set", fmt.Sprintf("rep-%d", i)), "complete", 10, 4970)
	}
	// Runs that happen to be named a and b, with no ab.json: no comparison.
	writeResult(t, filepath.Join(dir, "tour", "a", "rep-1"), "complete", 10, 4970)
	writeResult(t, filepath.Join(dir, "tour", "b", "rep-1"), "complete", 10, 4970)
	for _, side := range []string{"a", "b"} {
		for i := 1; i <= 3; i++ {
			writeResult(t, filepath.Join(dir, "abrun", side, fmt.Sprintf("rep-%d", i)), "complete", 10, 4970)
		}
	}
	if err := report.WriteJSON(filepath.Join(dir, "abrun", "ab.json"), map[string]any{"A": "/x/tpslab-a", "B": "/x/tpslab-b", "Repeat": 3, "Verdict": "no significant difference in committed TPS"}); err != nil {
		t.Fatal(err)
	}
	// find-max: its steps are runs of its own, listed with it.
	for i := 1; i <= 4; i++ {
		writeResult(t, filepath.Join(dir, "search", fmt.Sprintf("step-%d", i)), "complete", 10, 4970)
	}
	out := findmax.Outcome{Sustainable: 1850, Confirmed: true, Bracket: [2]float64{1850, 2000}, Steps: make([]findmax.Step, 4), Stopped: "bracket within 10%"}
	if err := report.WriteJSON(filepath.Join(dir, "search", "find-max.json"), map[string]any{"schema_version": 1, "objective": "p99_commit<=2s", "took_s": 60, "outcome": out}); err != nil {
		t.Fatal(err)
	}
	// An envelope sweep: a find-max folder per envelope, listed as one.
	for _, env := range []string{"cpu-0.25", "cpu-0.5"} {
		writeResult(t, filepath.Join(dir, "sweep", env, "step-1"), "complete", 10, 4970)
		if err := report.WriteJSON(filepath.Join(dir, "sweep", env, "find-max.json"), map[string]any{"schema_version": 1, "objective": "p99_commit<=2s", "took_s": 30, "outcome": out}); err != nil {
			t.Fatal(err)
		}
	}
	sweep := campaign.SweepSummary{SchemaVersion: 1, Resource: "cpu", Objective: "p99_commit<=2s", TookS: 60, Conclusion: "per node, 0.25 cores: 900 tx/s; 0.5 cores: 1,850 tx/s",
		Rows: []campaign.SweepRow{{Envelope: "0.25", Dir: "cpu-0.25", Sustainable: 900}, {Envelope: "0.5", Dir: "cpu-0.5", Sustainable: 1850}}}
	if err := report.WriteJSON(filepath.Join(dir, "sweep", campaign.SweepFile), sweep); err != nil {
		t.Fatal(err)
	}
	// why and bisect: their runs are theirs.
	writeResult(t, filepath.Join(dir, "explained", "baseline", "rep-1"), "complete", 10, 4970)
	if err := report.WriteJSON(filepath.Join(dir, "explained", campaign.WhyFile), campaign.WhySummary{SchemaVersion: 1, Run: "runs/x", Limit: "block bytes", Repeat: 3,
		Rows: []campaign.WhyRow{{Relaxation: campaign.Relaxation{Resource: "block_bytes", Named: true}, Verdict: campaign.WhyConfirmed}}, Conclusion: "block bytes confirmed: ×2 gave +110.6%"}); err != nil {
		t.Fatal(err)
	}
	writeResult(t, filepath.Join(dir, "search2", "step-1", "1-a", "rep-1"), "complete", 10, 4970)
	if err := report.WriteJSON(filepath.Join(dir, "search2", campaign.BisectFile), campaign.BisectSummary{SchemaVersion: 1, Builds: []string{"a", "b"}, Figure: "committed TPS", Repeat: 3, First: 1,
		Steps: []campaign.BisectStep{{Good: 0, Mid: 0, Bad: 1, Decided: "bad"}}, Conclusion: "first moved: b (build 2 of 2)"}); err != nil {
		t.Fatal(err)
	}
	// Pages planted in run folders: serve renders its own, never these.
	planted := "<html><script>fetch('/run/single/api/live').then(r=>r.text()).then(t=>document.title=t)</script>planted</html>"
	os.WriteFile(filepath.Join(dir, "search", "find-max.html"), []byte(planted), 0o644)
	os.WriteFile(filepath.Join(dir, "abrun", "compare.html"), []byte(planted), 0o644)

	listed, _, code := tpslabIn(t, "runs", "--dir", dir)
	srv := httptest.NewServer(cli.BrowserMux(dir, filepath.Join(dir, "history.jsonl")))
	defer srv.Close()
	get := getter(t, srv.URL)
	browse := page
	_, page := get("/")
	for _, c := range []struct{ name, what, status, result string }{
		{"single", "run", "ok", "kept up"},
		{"missed", "run", "fail", "thresholds failed: p99_commit&lt;=1ms (actual 480"},
		{"tour/a", "repetitions", "ok", "1 repetitions"},
		{"tour/b", "repetitions", "ok", "1 repetitions"},
		{"set", "repetitions", "ok", "3 repetitions (rep-1..rep-3)"},
		{"search", "find-max", "ok", "sustainable 1,850 tx/s, confirmed, under p99_commit&lt;=2s (4 steps)"},
		{"abrun", "ab", "ok", "3 pairs: no significant difference in committed TPS"},
		{"sweep", "envelopes", "ok", "per node, 0.25 cores: 900 tx/s; 0.5 cores: 1,850 tx/s"},
		{"explained", "why", "ok", "x named block bytes: block bytes confirmed: ×2 gave"},
		{"search2", "bisect", "ok", "first moved: b (build 2 of 2)"},
	} {
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(filepath.Join(dir, c.name)) + `\s+` + c.what + `\s.*\s` + c.status + `\s+.*$`).FindString(listed)
		if code != 0 || !strings.Contains(line, strings.ReplaceAll(c.result, "&lt;", "<")) {
			t.Errorf("runs: exit %d, no %s %s line with %q in:\n%s", code, c.what, c.name, c.result, listed)
		}
		row := regexp.MustCompile(`<tr data-run="` + c.name + `" data-what="` + c.what + `" data-status="` + c.status + `">.*`).FindString(page)
		if !strings.Contains(row, c.result) {
			t.Errorf("serve: no %s %s row with %q in:\n%s", c.what, c.name, c.result, page)
		}
	}
	if strings.Contains(listed, "step-1") || strings.Contains(page, "step-1") || strings.Contains(listed, "rep-1 ") {
		t.Errorf("a campaign's own runs listed apart:\n%s\n%s", listed, page)
	}
	if code, body := get("/run/search/find-max.html"); code != 200 || !strings.Contains(body, "Sustainable: 1850 tx/s") || strings.Contains(body, "planted") {
		t.Errorf("find-max's page under serve, rendered from find-max.json: %d %.300q", code, body)
	}
	if code, body := get("/run/explained/why.html"); code != 200 || !strings.Contains(body, `data-verdict="confirmed"`) {
		t.Errorf("why's page: %d %.300q", code, body)
	}
	if code, body := get("/run/search2/bisect.html"); code != 200 || !strings.Contains(body, "first moved: b") {
		t.Errorf("bisect's page: %d %.300q", code, body)
	}
	if code, body := get("/run/sweep/envelopes.html"); code != 200 || !strings.Contains(body, `href="cpu-0.5/find-max.html"`) || !strings.Contains(body, "1,850 tx/s") {
		t.Errorf("the sweep's page: %d %.300q", code, body)
	}
	if code, body := get("/run/sweep/cpu-0.5/find-max.html"); code != 200 || !strings.Contains(body, "Sustainable: 1850 tx/s") {
		t.Errorf("an envelope's search under serve: %d %.300q", code, body)
	}
	if code, body := get("/run/abrun/compare.html"); code != 200 || strings.Contains(body, "planted") || !strings.Contains(body, "committed") {
		t.Errorf("an A/B folder's page under serve, rendered from its runs: %d %.300q", code, body)
	}
	// In a browser: none of the planted pages' scripts runs on serve's
	// origin, whatever path asks for them.
	if !testing.Short() {
		evil := "<html><body>planted<script>document.body.setAttribute('data-ran','yes')</script></body></html>"
		os.WriteFile(filepath.Join(dir, "single", "report.html"), []byte(evil), 0o644)
		os.WriteFile(filepath.Join(dir, "single", "evil.html"), []byte(evil), 0o644)
		os.WriteFile(filepath.Join(dir, "search", "find-max.html"), []byte(evil), 0o644)
		for _, p := range []string{"/run/search/find-max.html", "/run/abrun/compare.html", "/run/single/report.html", "/run/single/evil.html", "/run/single/evil.html/"} {
			if dom := browse(t, srv.URL+p); strings.Contains(dom, "planted") || strings.Contains(dom, "data-ran") {
				t.Errorf("serve %s: a run folder's own page reached the browser:\n%.400s", p, dom)
			}
		}
	}
	// record points at one repetition, in one line.
	_, stderr, code := tpslabIn(t, "record", filepath.Join(dir, "set"))
	if code != 2 || !strings.Contains(stderr, "holds 3 repetitions") {
		t.Errorf("record of a set: exit %d, %q", code, stderr)
	}
}

// getter GETs paths of the server at base, answering status and body.
func getter(t *testing.T, base string) func(path string) (int, string) {
	return func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// serve lists runs and sets, serves each run's page state, report and
// compare, and nothing outside the runs directory (issue 35).
func TestServeBrowsesRuns(t *testing.T) {
	dir := t.TempDir()
	writeResult(t, filepath.Join(dir, "one"), "complete", 10, 4970)
	writeResult(t, filepath.Join(dir, "two"), "complete", 10, 4000)
	for i := 1; i <= 2; i++ {
		writeResult(t, filepath.Join(dir, "set", fmt.Sprintf("rep-%d", i)), "complete", 10, 4970)
	}
	srv := httptest.NewServer(cli.BrowserMux(dir, filepath.Join(dir, "history.jsonl")))
	defer srv.Close()
	get := getter(t, srv.URL)
	if code, body := get("/"); code != 200 || !strings.Contains(body, `data-run="one"`) || !strings.Contains(body, `data-run="set"`) || !strings.Contains(body, "2 repetitions") {
		t.Errorf("list: %d\n%s", code, body)
	}
	if code, body := get("/run/one/api/live"); code != 200 || !strings.Contains(body, `"final":true`) || !strings.Contains(body, `"committed_tps"`) {
		t.Errorf("a run's state: %d %.300s", code, body)
	}
	if code, body := get("/run/one/"); code != 200 || !strings.Contains(body, `id="figures"`) {
		t.Errorf("a run's page: %d", code)
	}
	if code, body := get("/run/one/report.html"); code != 200 || !strings.Contains(body, "uPlot") {
		t.Errorf("a run's report: %d", code)
	}
	if code, body := get("/compare?a=one&b=two"); code != 200 || !strings.Contains(body, "tpslab compare") {
		t.Errorf("compare: %d %.300s", code, body)
	}
	if code, _ := get("/run/..%2f..%2f/api/live"); code == 200 {
		t.Error("serve reached outside the runs directory")
	}
}

// A mempool left full by an earlier run is counted before the load and
// named; --mempool-wait waits for it to empty (issue 34, case 10c: expired
// payments of a run committed during the next, unannounced).
func TestMempoolLeftByAnEarlierRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	bin := testbin.Path(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	// Blocks of at most 20 payments: what a run leaves takes seconds to drain.
	if out, err := exec.Command(bin, "net", "up", "--validators", "1", "--max-block-gas", "20", "--home", home).CombinedOutput(); err != nil {
		t.Fatalf("net up: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "net", "down", "--home", home).Run() })
	run := func(name string, args ...string) *report.Result {
		t.Helper()
		out := filepath.Join(dir, name)
		args = append([]string{"run", "--net-home", home, "--duration", "2s", "--warmup", "1s", "--drain", "0s", "--out", out}, args...)
		b, err := exec.Command(bin, args...).CombinedOutput()
		r, rerr := report.ReadResult(out)
		if rerr != nil {
			t.Fatalf("%v: %v %v\n%s", args, err, rerr, b)
		}
		return r
	}
	// 200/s into 40/s of blocks, and no drain: the first run leaves its
	// payments behind.
	// 300 senders with windows of 8 leave up to 2,400, 85 blocks' worth:
	// far more than drains while the next run starts on a loaded machine
	// (100 senders' 800 at most were gone by then under load 20).
	first := run("first", "--rate", "600", "--senders", "300")
	if first.Summary.InFlightEnd == 0 {
		t.Fatalf("the first run left nothing in flight: %s", first.Verdict())
	}
	r := run("second", "--rate", "10", "--senders", "100", "--senders-offset", "300")
	named := false
	for _, n := range r.Notes {
		named = named || strings.Contains(n, "the mempool held") && strings.Contains(n, "--mempool-wait")
	}
	if r.Summary.MempoolBefore <= 0 || !named {
		t.Errorf("after a run that left payments: mempool_before %d, notes %q", r.Summary.MempoolBefore, r.Notes)
	}
	r = run("third", "--rate", "10", "--senders", "100", "--senders-offset", "400", "--mempool-wait", "120s")
	if r.Summary.MempoolBefore != 0 {
		t.Errorf("with --mempool-wait: mempool_before %d, want 0 (it waited for the block)", r.Summary.MempoolBefore)
	}
}

// `net up --reset` refuses to wipe a network a run is loading, naming the
// run's pid, unless --force (issue 52: it wiped it and the run ended
// target_failed).
func TestResetRefusedWhileARunLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network and a run")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	netUp(t, home)
	cmd, lines := startRun(t, nil, "run", "--net-home", home, "--rate", "100", "--duration", "5s", "--warmup", "1s", "--senders", "100", "--out", filepath.Join(dir, "run"))
	waitLine(t, lines, "load:", time.Minute)
	_, stderr, code := tpslabIn(t, "net", "up", "--validators", "1", "--home", home, "--reset")
	if code != 2 || !strings.Contains(stderr, fmt.Sprintf("in use by a tpslab run (pid %d)", cmd.Process.Pid)) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("net up --reset under a run: exit %d, %q; want exit 2 and one line naming pid %d", code, stderr, cmd.Process.Pid)
	}
	if code, _ := waitExit(t, cmd, time.Minute); code != 0 {
		t.Errorf("the run under the refused reset exited %d", code)
	}
}

// serve reads nothing outside RUNS_DIR (a linked run folder or file), shows
// no server path in an error, reads each result.json once until it
// changes, and does not read one past its bound (issue 52, case 6).
func TestServeBoundsWhatItReads(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeResult(t, filepath.Join(dir, "one"), "complete", 10, 4970)
	writeResult(t, filepath.Join(outside, "secret"), "complete", 10, 4000)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "linkedfile"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret", "result.json"), filepath.Join(dir, "linkedfile", "result.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bad"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bad", "result.json"), []byte("{not json"), 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	big, _ := os.Create(filepath.Join(dir, "big", "result.json"))
	big.Truncate(65 << 20) // sparse: its size, not its bytes
	big.Close()
	srv := httptest.NewServer(cli.BrowserMux(dir, filepath.Join(dir, "history.jsonl")))
	defer srv.Close()
	get := getter(t, srv.URL)
	code, list := get("/")
	if code != 200 || !strings.Contains(list, `data-run="one"`) || strings.Contains(list, "linked") {
		t.Errorf("list: %d; a linked run listed or one missing:\n%s", code, list)
	}
	if !strings.Contains(list, "not read: result.json is 65 MB") {
		t.Errorf("a result.json past the bound was read or not named:\n%s", list)
	}
	for _, p := range []string{"/run/linked/api/live", "/run/linkedfile/api/live", "/run/big/api/live"} {
		if code, body := get(p); code == 200 {
			t.Errorf("%s served: %.200s", p, body)
		}
	}
	for _, p := range []string{"/run/bad/", "/run/big/", "/"} {
		if _, body := get(p); strings.Contains(body, dir) || strings.Contains(body, outside) {
			t.Errorf("%s shows a server path: %.300s", p, body)
		}
	}
	// The same size and time: the row is not read again (a changed verdict
	// with them restored stays unseen); a new time is.
	res := filepath.Join(dir, "one", "result.json")
	st, _ := os.Stat(res)
	b, _ := os.ReadFile(res)
	os.WriteFile(res, []byte(strings.Replace(string(b), "2026", "2025", 1)), 0o644)
	os.Chtimes(res, st.ModTime(), st.ModTime())
	if _, again := get("/"); again != list {
		t.Error("the list read an unchanged result.json again")
	}
	os.Chtimes(res, st.ModTime().Add(time.Second), st.ModTime().Add(time.Second))
	if _, again := get("/"); again == list {
		t.Error("the list did not read a changed result.json")
	}
}

// Ctrl-C while net up waits for blocks stops what it started and removes
// the half-made home, so the same net up runs again without --reset
// (issue 52, case 8: it printed "context canceled" and the retry was
// refused).
func TestInterruptedNetUpLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	home := filepath.Join(t.TempDir(), "net")
	// 6 s blocks: net up waits for two, so the interruption comes first.
	cmd, lines := startRun(t, nil, "net", "up", "--validators", "1", "--timeout-commit", "6s", "--home", home)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if n, err := testnet.Load(home); err == nil && n.Running() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("net up started no node in a minute")
		}
	}
	n, _ := testnet.Load(home)
	cmd.Process.Signal(os.Interrupt)
	code, _ := waitExit(t, cmd, time.Minute)
	var said []string
	for l := range lines {
		said = append(said, l)
	}
	if code == 0 || !strings.Contains(strings.Join(said, "\n"), "net up interrupted; the half-made network in") {
		t.Errorf("interrupted net up: exit %d, said %q", code, said)
	}
	for _, nd := range n.Nodes {
		if nd.Alive() {
			t.Errorf("%s (pid %d) still runs", nd.Name, nd.PID)
		}
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the half-made home is still there: %v", err)
	}
	netUp(t, home) // the same command again, without --reset
}

// Ctrl-C during `cache build` (the terminal interrupts the whole process
// group, the compiler too) says so once, not the build's error and then
// the same again at exit, and keeps nothing half-built (issue 52).
func TestInterruptedCacheBuildSaysItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	cache := t.TempDir()
	cmd := exec.Command(testbin.Path(t), "cache", "build", "tpsd")
	work := t.TempDir() // the interrupted compiler leaves its work folder here
	cmd.Env = append(os.Environ(), "TPSLAB_CACHE="+cache, "GOTMPDIR="+work, "TMPDIR="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.HasPrefix(sc.Text(), "building tpsd") {
			time.Sleep(500 * time.Millisecond)
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			break
		}
	}
	for sc.Scan() {
		said = append(said, sc.Text())
	}
	code := exitCode(cmd.Wait())
	all := strings.Join(said, "\n")
	t.Logf("exit %d; said:\n%s", code, all)
	if code != 3 || strings.Count(all, "interrupt") != 1 || !strings.Contains(all, "cache build interrupted while building tpsd") {
		t.Errorf("exit %d; said:\n%s", code, all)
	}
	if matches, _ := filepath.Glob(filepath.Join(cache, "*", "tpsd")); len(matches) > 0 {
		t.Errorf("a half-built tpsd was kept: %v", matches)
	}
}
