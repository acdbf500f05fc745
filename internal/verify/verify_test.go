package verify_test

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	if out, err := exec.Command(bin, "run", "--net-home", home, "--rate", "200", "--duration", "3s", "--warmup", "1s", "--out", run).CombinedOutput(); err != nil {
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
