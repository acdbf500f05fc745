package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every mistake a user can make gives one line naming it, exit code 2, and
// no panic or stack trace.
// It runs in-process (cli.Main, as the program does); any executable file
// serves as ab's builds, since each case is refused before one starts.
func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	result := func(name, body string) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		file(filepath.Join(name, "result.json"), body)
		return d
	}
	good := writeResult(t, filepath.Join(dir, "good"), "complete", 10, 5000)
	v99 := result("v99", `{"schema_version": 99, "status": "complete"}`)
	vnull := result("vnull", `{"schema_version": null}`)
	empty := result("empty", `{}`)
	broken := result("broken", `{"schema_version": 2, "status": "comp`)
	existing := writeResult(t, filepath.Join(dir, "existing"), "complete", 10, 5000)
	noSeries := writeResult(t, filepath.Join(dir, "noseries"), "complete", 10, 5000)
	os.Remove(filepath.Join(noSeries, "series.jsonl"))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--rate", "abc"}, `--rate: load.rate: "abc", expected a finite number`},
		{[]string{"run", "--rate", "-5"}, `load.rate: -5, expected a rate above 0 payments per second`},
		{[]string{"run", "--duration", "0s"}, `load.duration: 0s, expected a duration > 0`},
		{[]string{"run", "--bogus"}, `unknown flag: --bogus`},
		{[]string{"run", "--set", "load.rat=5"}, `load.rat: unknown field "rat"`},
		{[]string{"run", "--threshold", "speed>1"}, `unknown metric "speed"`},
		{[]string{"run", "--target", "cometbft"}, `target.endpoints: empty`},
		{[]string{"run", "--endpoint", "localhost:1"}, `target.endpoints[0]: "localhost:1", expected an RPC URL`},
		{[]string{"run", "--senders", "20000"}, `workload.senders: 20000, expected at most the 10000 funded accounts`},
		{[]string{"run", "a.yaml", "b.yaml"}, `accepts at most 1 arg`},
		{[]string{"validate", dir + "/missing.yaml"}, `missing.yaml`},
		{[]string{"net", "up"}, `--home is required`},
		{[]string{"run", "--node-cpu", "lots"}, `network.node_cpu: "lots", expected a quantity`},
		{[]string{"run", "--validators", "2", "--node-cpu", "node2=0.5"}, `node "node2", expected node0..node1`},
		{[]string{"find-max", "--envelopes", "0.5", "--net-home", dir}, `--envelopes: with a network given (--net-home or --endpoint), expected none`},
		{[]string{"find-max", "--envelopes", "node0=0.5"}, `--envelopes: "node0=0.5", expected one limit for every node`},
		{[]string{"find-max", "--envelopes", "1", "--envelope-resource", "disk"}, `--envelope-resource: "disk", expected cpu or memory`},
		{[]string{"net", "up", "--home", dir + "/n", "--validators", "0"}, `--validators: 0, expected 1..64`},
		{[]string{"net", "status", "--home", dir}, `no net.json there`},
		{[]string{"compare", dir}, `requires at least 2 arg`},
		{[]string{"compare", t.TempDir(), t.TempDir()}, `no result.json`},
		{[]string{"report", dir}, `not a run directory`},
		{[]string{"export", dir}, `--csv is the only format`},
		{[]string{"find-max", "--factor", "1"}, `--factor: 1, expected > 1`},
		{[]string{"find-max", "--slo", "p99<1"}, `unknown metric "p99"`},
		// find-max takes --threshold into its objective; a bad one is one line.
		{[]string{"find-max", "--threshold", "p98<1"}, `threshold "p98<1": unknown metric "p98"`},
		// Hostile input (issue 8): each used to panic, run out of memory or be accepted.
		{[]string{"run", "--rate", "NaN"}, `load.rate: "NaN", expected a finite number`},
		{[]string{"run", "--rate", "1e12", "--duration", "5s"}, `load.rate: 1e+12, expected at most 1000000 payments per second`},
		{[]string{"run", "--duration", "100000h"}, `load.duration: 100000h0m0s, expected at most 168h0m0s`},
		{[]string{"run", "--rate", "1000000", "--duration", "160h"}, `workload.mode: presigned: `},
		{[]string{"validate", file("empty.yaml", "")}, `the file is empty, expected a YAML mapping`},
		{[]string{"validate", file("noversion.yaml", "load:\n  rate: 5\n")}, "version: missing, expected `version: 1`"},
		{[]string{"validate", file("dup.yaml", "version: 1\nload:\n  rate: 5\n  rate: 6\n")}, `load.rate: given twice (lines 3 and 4)`},
		{[]string{"run", "--set", "workload.chain_id=" + strings.Repeat("c", 65)}, `workload.chain_id: 65 characters, expected at most 64`},
		{[]string{"run", "--threshold", "reject_rate<200%"}, `expected a percentage between 0% and 100%`},
		{[]string{"run", "--threshold", "p99_commit<="}, `expected a duration such as 2s or 500ms`},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"net", "bogus"}, `unknown command "bogus"`},
		{[]string{"report", v99}, `schema_version 99, expected 1..2`},
		{[]string{"report", vnull}, `it has no schema_version: not a tpslab result`},
		{[]string{"export", empty, "--csv"}, `it has no schema_version`},
		{[]string{"compare", good, v99}, `schema_version 99`},
		{[]string{"compare", good, broken}, `not valid JSON`},
		{[]string{"runs", "--dir", dir}, `result(s) in`},
		// Issue 23: a missing series, and faults that cannot apply, before anything starts.
		{[]string{"compare", good, noSeries}, `series.jsonl: missing`},
		{[]string{"export", noSeries, "--csv"}, `has no per-second series`},
		{[]string{"run", "--fault", "5s:crash:node9:3s"}, `"node9" is not a node of the network`},
		{[]string{"run", "--out", "/proc/tpslab-cannot-write"}, `out: `},
		{[]string{"run", "--out", existing}, `already holds a run (result.json)`},
		// Issue 25: a load spread over segments.
		{[]string{"run", "--segments", "0"}, `--segments: 0, expected 1..1024`},
		{[]string{"run", "--segments", "1000"}, `--segments: 1000, expected 1..`},
		// Issues 34 and 35: what a run prints and serves, and what it waits for.
		{[]string{"run", "--summary", "short"}, `--summary: "short", expected compact or full`},
		{[]string{"run", "--progress", "100ms"}, `--progress: 100ms, expected 1s or more`},
		{[]string{"run", "--mempool-wait", "-1s"}, `target.mempool_wait: -1s, expected a duration between`},
		{[]string{"run", "--dashboard=127.0.0.1:notaport"}, `--dashboard: `},
		{[]string{"summary", "/nonexistent/run"}, `not a run directory`},
		{[]string{"serve", "/nonexistent/runs"}, `serve: /nonexistent/runs is not a directory of runs`},
		{[]string{"run", "--connections", "8", "--max-connections", "4"}, `load.max_connections: 4, expected 0 (8 times load.connections) or 8..10000 (at least load.connections)`},
		{[]string{"run", "--segments", "3", "--senders", "2"}, `workload.senders: 2, expected at least one per segment (3)`},
		{[]string{"run", "--segments", "2", "--repeat", "2"}, `--segments: with --repeat 2; expected one of them`},
		{[]string{"run", "--segment", "2/2", "--coordinator", "http://127.0.0.1:1"}, `--segment: "2/2", expected I/N with 0 <= I < N`},
		{[]string{"run", "--segment", "0/2"}, `--segment: needs --coordinator URL`},
		// Issue 54: the first hour's mistakes, each answered in words.
		{[]string{"run", "--rat", "5"}, `run: unknown flag: --rat; did you mean --rate?`},
		{[]string{"net", "up", "--validatrs", "2"}, `net up: unknown flag: --validatrs; did you mean --validators?`},
		{[]string{"run", "--dashboard", "127.0.0.1:5665"}, `"127.0.0.1:5665" is no file but reads as an address: give it to its flag with =, as in --dashboard=127.0.0.1:5665`},
		{[]string{"run", "--set", "load.duratoin=5s"}, `did you mean duration?`},
		{[]string{"compare", dir + "/none-a", dir + "/none-b"}, `none-a: no such run directory`},
		// Issue 27: ab, history and the markdown summary.
		{[]string{"ab", "--binary-b", bin}, `--binary-a: empty, expected the path of a node program`},
		{[]string{"ab", "--binary-a", bin, "--binary-b", dir}, `--binary-b: "` + dir + `" is not an executable file`},
		{[]string{"ab", "--binary-a", bin, "--binary-b", bin, "--repeat", "0"}, `--repeat: 0, expected at least 1`},
		{[]string{"ab", "--binary-a", bin, "--binary-b", bin, "--endpoint", "http://127.0.0.1:1"}, `ab starts a fresh network of each build`},
		{[]string{"ab", "--binary-a", bin, "--binary-b", bin, "--summary-format", "html"}, `--summary-format: "html", expected text or markdown`},
		{[]string{"compare", good, good, "--summary-format", "md"}, `--summary-format: "md", expected text or markdown`},
		{[]string{"history", "add", noSeries, "--store", dir + "/h.jsonl", "--label", "x", "--series", "s"}, ``},
		{[]string{"history", "show", "nope", "--store", dir + "/h.jsonl"}, `series "nope": no entries`},
		{[]string{"history", "check", "s", "--store", dir + "/h.jsonl", "--metric", "speed"}, `--metric: "speed" is not a metric tpslab keeps`},
		{[]string{"history", "check", "s", "--store", dir + "/h.jsonl", "--strict"}, `series "s": 1 entries, expected at least 4`},
		{[]string{"history", "add", dir, "--label", "x"}, `not a run directory`},
		{[]string{"history", "check", "a", "b"}, `accepts 1 arg`},
		// Issue 34: a mix kind the system lacks is bad input, found once the
		// system is known: one line, exit 2, not an empty summary.
		{[]string{"run", "--endpoint", sinkURL(t), "--duration", "2s", "--warmup", "1s", "--set", "workload.mix=[{kind: erc20, weight: 1}]", "--out", dir + "/mix"}, `workload.mix[0].kind: "erc20", expected one of [send multi_send] for cometbft`},
		// Issue 52: so is a trace's kind (it was exit 3 with a run directory left).
		{[]string{"run", "--endpoint", sinkURL(t), "--trace", file("kinds.csv", "offset_s,kind\n0,send\n0.5,erc20\n"), "--warmup", "0s", "--out", dir + "/tracekind"}, `load.trace: kind erc20, expected a kind this system's payments have (send, multi_send)`},
		// Issue 67: a system's own messages and calls, checked before any
		// work: a placeholder naming nothing, a function the ABI lacks, a
		// mix naming a kind no message defines.
		{[]string{"run", "--target", "cosmos", "--endpoint", sinkURL(t), "--set", `cosmos.messages=[{kind: d, msgs: [{type_url: /a.B, fields: {a: "{validatr}"}}]}]`, "--out", dir + "/msg"},
			`cosmos.messages[0].msgs[0].fields: {validatr} names nothing, expected one of {sender}`},
		{[]string{"run", "--target", "evm", "--endpoint", sinkURL(t), "--set", "evm.contracts=[{name: nft, artifact: ../../examples/contracts/NFT.json}]",
			"--set", "evm.calls=[{kind: mint, contract: nft, function: mintt, args: []}]", "--out", dir + "/call"}, `evm.calls[0].function: "mintt", expected a function of its ABI (`},
		{[]string{"run", "--target", "cosmos", "--endpoint", sinkURL(t), "--set", "workload.mix=[{kind: delegate, weight: 1}]", "--out", dir + "/mixown"},
			`workload.mix[0].kind: "delegate", expected one of [send multi_send] for cosmos`},
	}
	for _, c := range cases {
		_, stderr, code := tpslabIn(t, c.args...)
		if c.want == "" { // a step that must succeed, for the cases after it
			if code != 0 {
				t.Errorf("%v: exit %d (stderr %q)", c.args, code, stderr)
			}
			continue
		}
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
			continue
		}
		out := strings.TrimSpace(stderr)
		if !strings.Contains(out, c.want) {
			t.Errorf("%v: stderr %q, want it to contain %q", c.args, out, c.want)
		}
		if strings.Count(out, "\n") > 0 || strings.Contains(out, "goroutine") {
			t.Errorf("%v: more than one line: %q", c.args, out)
		}
	}
	for _, name := range []string{"mix", "tracekind"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("bad input found once the system was known left a run directory %s", name)
		}
	}
}

// A target that does not answer ends the run before its load: one line
// saying why, exit 3, no empty summary, and `runs` lists no run (issue 34,
// case 12).
func TestDeadEndpointIsOneLine(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := tpslabIn(t, "run", "--endpoint", "http://127.0.0.1:1", "--duration", "2s", "--warmup", "1s", "--out", filepath.Join(dir, "dead"))
	if code != 3 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "does not answer") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if out, _, _ := tpslabIn(t, "runs", "--dir", dir); strings.Contains(out, "dead") {
		t.Errorf("runs lists a run that never loaded:\n%s", out)
	}
}

// A checkout's build says which commit it is (issue 54: "dev" said nothing).
func TestVersionNamesTheCommit(t *testing.T) {
	out, _, code := tpslabIn(t, "--version")
	if code != 0 || !regexp.MustCompile(`^tpslab version dev, commit [0-9a-f]{12} \(`).MatchString(out) {
		t.Errorf("exit %d: %q", code, out)
	}
}
