package verify_test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// A run's committed payments are re-counted from the chain through
// another node than the one the run read first; an edited number in
// result.json or evidence.jsonl, a dropped line, or another chain each
// fail in one line naming what differs (issue 55).
func TestVerifyRecountsFromTheChain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	bin := testbin.Path(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "net")
	if out, err := exec.Command(bin, "net", "up", "--validators", "2", "--home", home).CombinedOutput(); err != nil {
		t.Fatalf("net up: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "net", "down", "--home", home).Run() })
	run := filepath.Join(dir, "run")
	if out, err := exec.Command(bin, "run", "--net-home", home, "--rate", "200", "--duration", "6s", "--warmup", "2s", "--out", run).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	n, err := testnet.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(d string, args ...string) (string, int) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"verify", d}, args...)...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return strings.TrimSpace(string(out)), code
	}
	out, code := verify(run, "--rpc", n.Nodes[1].RPC)
	if code != 0 || !strings.HasPrefix(out, "verified: ") || !strings.Contains(out, n.Nodes[1].RPC) {
		t.Fatalf("verify through node1: exit %d: %s", code, out)
	}
	t.Log(out)
	// A copy edited three ways, each on its own.
	tampered := func(name string, edit func(d string)) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		for _, f := range []string{"result.json", "series.jsonl", "blocks.jsonl", "evidence.jsonl"} {
			b, _ := os.ReadFile(filepath.Join(run, f))
			os.WriteFile(filepath.Join(d, f), b, 0o644)
		}
		edit(d)
		return d
	}
	rewrite := func(d, f string, change func([]byte) []byte) {
		b, _ := os.ReadFile(filepath.Join(d, f))
		os.WriteFile(filepath.Join(d, f), change(b), 0o644)
	}
	for _, c := range []struct {
		name, want string
		edit       func(d string)
	}{
		{"an id changed", "its digest does not follow", func(d string) {
			rewrite(d, "evidence.jsonl", func(b []byte) []byte {
				i := bytes.Index(b, []byte(`"ok":["`)) + 7
				b[i] = map[byte]byte{'0': '1'}[b[i]] | '0'
				return b
			})
		}},
		{"a line dropped", "its digest does not follow", func(d string) {
			rewrite(d, "evidence.jsonl", func(b []byte) []byte { return b[bytes.IndexByte(b, '\n')+1:] })
		}},
		{"committed edited", "result.json says", func(d string) {
			rewrite(d, "result.json", func(b []byte) []byte { return bytes.Replace(b, []byte(`"committed": `), []byte(`"committed": 1`), 1) })
		}},
		// Forgeries that recompute the running digest as docs/results.md
		// describes it: every id listed twice and the count doubled; the
		// committed rate multiplied.
		{"ids twice", "twice", func(d string) {
			lines := readLines(t, filepath.Join(d, "evidence.jsonl"))
			var total int
			for i := range lines {
				lines[i].OK = append(lines[i].OK, lines[i].OK...)
				total += len(lines[i].OK)
			}
			writeLines(t, filepath.Join(d, "evidence.jsonl"), lines)
			var res map[string]any
			b, _ := os.ReadFile(filepath.Join(d, "result.json"))
			json.Unmarshal(b, &res)
			res["summary"].(map[string]any)["committed"] = total
			b, _ = json.Marshal(res)
			os.WriteFile(filepath.Join(d, "result.json"), b, 0o644)
		}},
		{"committed_tps edited", "committed_tps", func(d string) {
			var res map[string]any
			b, _ := os.ReadFile(filepath.Join(d, "result.json"))
			json.Unmarshal(b, &res)
			s := res["summary"].(map[string]any)
			s["committed_tps"] = 10 * s["committed_tps"].(float64)
			b, _ = json.Marshal(res)
			os.WriteFile(filepath.Join(d, "result.json"), b, 0o644)
		}},
	} {
		out, code := verify(tampered(strings.ReplaceAll(c.name, " ", "-"), c.edit), "--rpc", n.Nodes[1].RPC)
		if code != 1 || !strings.Contains(out, c.want) || strings.Count(out, "\n") > 0 {
			t.Errorf("%s: exit %d, %q; want exit 1 naming %q in one line", c.name, code, out, c.want)
		}
	}
	// Another chain of the same name: tpslab's sink answers as a chain
	// "tpslab" whose blocks hold nothing.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sink.NewSink("tpslab", testnet.DefaultGenesis())}
	go srv.Serve(l)
	defer srv.Close()
	if out, code := verify(run, "--rpc", "http://"+l.Addr().String()); code != 3 || strings.Count(out, "\n") > 0 {
		t.Errorf("another chain: exit %d, %q; want exit 3 in one line", code, out)
	}
}

func readLines(t *testing.T, path string) []report.EvidenceLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []report.EvidenceLine
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e report.EvidenceLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// writeLines writes evidence lines with their running digest recomputed.
func writeLines(t *testing.T, path string, lines []report.EvidenceLine) {
	t.Helper()
	var buf bytes.Buffer
	digest := ""
	for _, l := range lines {
		digest = report.EvidenceDigest(digest, l.Where(), l.Hash, l.OK)
		l.Digest = digest
		b, _ := json.Marshal(l)
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
