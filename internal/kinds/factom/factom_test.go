package factom_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/factomnet"
)

// call posts one JSON-RPC call to a node's API, apart from tpslab's own
// client: the test reads the blocks on its own.
func call(t *testing.T, node, method string, params any, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(node+"/v2", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s %s: %v", node, method, err)
	}
	defer resp.Body.Close()
	var a struct {
		Result json.RawMessage
		Error  any
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.Error != nil {
		t.Fatalf("%s %s: %v %v", node, method, err, a.Error)
	}
	if err := json.Unmarshal(a.Result, out); err != nil {
		t.Fatalf("%s %s: %v", node, method, err)
	}
}

// held is what directory blocks from..to on node hold: entries of chains
// that existed before (entry), first entries of new chains (chain),
// factoid transactions with inputs (factoid: the coinbase has none), each
// by id; and each block's key Merkle root.
type held struct {
	byKind map[string]map[string]bool
	keymr  map[int64]string
}

func readBlocks(t *testing.T, node string, from, to int64) held {
	h := held{byKind: map[string]map[string]bool{"entry": {}, "chain": {}, "factoid": {}}, keymr: map[int64]string{}}
	for ht := from; ht <= to; ht++ {
		var d struct {
			DBlock struct {
				KeyMR   string                            `json:"keymr"`
				Entries []struct{ ChainID, KeyMR string } `json:"dbentries"`
			} `json:"dblock"`
		}
		call(t, node, "dblock-by-height", map[string]int64{"height": ht}, &d)
		h.keymr[ht] = d.DBlock.KeyMR
		for _, e := range d.DBlock.Entries {
			switch {
			case e.ChainID == strings.Repeat("0", 63)+"f":
				var f struct {
					FBlock struct {
						Txs []struct {
							TxID   string `json:"txid"`
							Inputs []any  `json:"inputs"`
						} `json:"transactions"`
					} `json:"fblock"`
				}
				call(t, node, "factoid-block", map[string]string{"keymr": e.KeyMR}, &f)
				for _, tx := range f.FBlock.Txs {
					if len(tx.Inputs) > 0 {
						h.byKind["factoid"][tx.TxID] = true
					}
				}
			case !strings.HasPrefix(e.ChainID, strings.Repeat("0", 62)):
				var eb struct {
					Header struct {
						Seq int64 `json:"blocksequencenumber"`
					} `json:"header"`
					Entries []struct {
						Hash string `json:"entryhash"`
					} `json:"entrylist"`
				}
				call(t, node, "entry-block", map[string]string{"keymr": e.KeyMR}, &eb)
				for i, x := range eb.Entries {
					k := "entry"
					if eb.Header.Seq == 0 && i == 0 {
						k = "chain"
					}
					h.byKind[k][x.Hash] = true
				}
			}
		}
	}
	return h
}

// evidence are the run's committed ids by the height the run saw them in.
func evidence(t *testing.T, dir string) (ids map[string]int64, from, to int64) {
	f, err := os.Open(filepath.Join(dir, "evidence.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids = map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l report.EvidenceLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Height == 0 {
			continue
		}
		if from == 0 || l.Height < from {
			from = l.Height
		}
		to = max(to, l.Height)
		for _, id := range l.OK {
			ids[id] = l.Height
		}
	}
	return ids, from, to
}

func tpslab(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(testbin.Path(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tpslab %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestFactomNetwork starts 3 factomd nodes (node0 leads, two follow over
// P2P), runs entries and then MainNet's mix, and checks what the run
// counted against the directory blocks as the test reads them from a
// follower; net check; net down leaves nothing behind.
func TestFactomNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts factomd")
	}
	if os.Geteuid() != 0 {
		t.Skip("a network namespace per node needs root")
	}
	home := filepath.Join(t.TempDir(), "net")
	up := []string{"net", "up", "--kind", "factom", "--validators", "3", "--accounts", "40", "--block-time", "2", "--home", home, "--reset"}
	// A net up killed at each point of its making: net down removes all it
	// made, and the last one's home takes `net up --reset` (the network
	// the rest of the test uses).
	for _, at := range []string{"bridge", "node", "started"} {
		tag := killNetUp(t, up, home, at)
		if at != "started" {
			tpslab(t, "net", "down", "--home", home)
			leftNothing(t, "net down after net up was killed at "+at, tag, home)
		}
	}
	tpslab(t, up...)
	n, err := testnet.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Down()
	f := factomnet.Of(n)
	if f == nil || len(f.Namespaces) != 3 || f.Wallets != 40 {
		t.Fatalf("net.json's factom section: %+v", f)
	}
	follower := n.Nodes[2].RPC
	// factomd binds every interface of its namespace: nothing of it may
	// listen in the machine's own (API 8088, P2P 8110+, Prometheus 9876).
	if ss, err := exec.Command("ss", "-ltnH").Output(); err == nil {
		for _, l := range strings.Split(string(ss), "\n") {
			for _, p := range []string{":8088 ", ":8110 ", ":8111 ", ":8112 ", ":9876 "} {
				if strings.Contains(l, p) {
					t.Errorf("a factomd port listens outside the nodes' namespaces: %s", l)
				}
			}
		}
	}

	t.Run("entries", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		log := tpslab(t, "run", "--net-home", home, "--rate", "100", "--duration", "20s", "--warmup", "3s", "--senders", "40", "--window", "64",
			"--factom-mix", "entries", "--out", out)
		r, err := report.ReadResult(out)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Summary
		ids, from, to := evidence(t, out)
		h := readBlocks(t, follower, from, to)
		inBlocks := len(h.byKind["entry"]) + len(h.byKind["chain"]) + len(h.byKind["factoid"])
		// Exactly what the directory blocks hold (how many a loaded machine
		// commits is its own business; the identities hold everywhere).
		if s.Committed == 0 || int(s.Committed) != inBlocks || len(ids) != inBlocks || s.Counts.Check() != nil {
			t.Errorf("committed %d (evidence %d), the directory blocks %d..%d hold %d entries and transactions: expected equal and some (%v)\n%s", s.Committed, len(ids), from, to, inBlocks, s.Counts.Check(), log)
		}
		for id := range ids {
			if !h.byKind["entry"][id] {
				t.Errorf("%s counted committed, not an entry of blocks %d..%d on %s", id, from, to, follower)
				break
			}
		}
		for _, nd := range n.Nodes[:2] {
			other := readBlocks(t, nd.RPC, from, to)
			for ht, k := range h.keymr {
				if other.keymr[ht] != k {
					t.Errorf("directory block %d: %s holds %s, %s holds %s", ht, follower, k, nd.RPC, other.keymr[ht])
				}
			}
		}
		if len(s.Units) < 2 || !strings.Contains(s.Units[0], "EPS committed") || !strings.Contains(strings.Join(s.Units, "\n"), "messages sent per committed entry") {
			t.Errorf("units: %q, expected the report's EPS, TPS and MPS, and the nodes' own P2P counters", s.Units)
		}
		// The health watch follows each node's directory block height; no
		// signatures are said (the leader alone signs factomd's blocks).
		if hh := s.Health; hh == nil || !hh.Chain || !hh.Unsigned || len(hh.Nodes) != 3 || hh.CaughtUpS < 0 || strings.Contains(hh.Line(), "signature") {
			t.Errorf("health: %+v, expected 3 nodes' heights followed, caught up after the load, no signatures said", hh)
		}
		if p := s.LatencyMs.Proposed; p.Count < 20 || p.P50 <= 0 || p.P50 > s.LatencyMs.Commit.P50 {
			t.Errorf("proposed (the leader's TransactionACK, sampled): %+v, expected about 60 samples before commit (p50 %.0f ms)", p, s.LatencyMs.Commit.P50)
		}
		if m := s.Telemetry["factom.p2p_messages_sent"]; m.Mean <= 0 {
			t.Errorf("factomd's P2P messages sent: %+v, expected the followers and the leader to send", m)
		}
		if v := tpslab(t, "verify", out, "--rpc", n.Nodes[1].RPC); !strings.Contains(v, "verified:") {
			t.Errorf("verify: %s", v)
		}
	})

	t.Run("mainnet mix", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		log := tpslab(t, "run", "--net-home", home, "--rate", "200", "--duration", "15s", "--warmup", "3s", "--senders", "40", "--window", "64", "--out", out)
		var res struct {
			Summary struct {
				Committed       int64            `json:"committed"`
				CommittedByKind map[string]int64 `json:"committed_by_kind"`
			} `json:"summary"`
		}
		b, _ := os.ReadFile(filepath.Join(out, "result.json"))
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		ids, from, to := evidence(t, out)
		h := readBlocks(t, follower, from, to)
		for _, k := range []string{"entry", "chain", "factoid"} {
			ours := 0
			for id := range ids {
				if h.byKind[k][id] {
					ours++
				}
			}
			if int64(ours) != res.Summary.CommittedByKind[k] || int64(len(h.byKind[k])) != res.Summary.CommittedByKind[k] {
				t.Errorf("%s: committed %d, the blocks %d..%d hold %d of the run's ids of that kind and %d in all\n%s", k, res.Summary.CommittedByKind[k], from, to, ours, len(h.byKind[k]), log)
			}
		}
		if res.Summary.CommittedByKind["chain"] == 0 || res.Summary.CommittedByKind["entry"] <= res.Summary.CommittedByKind["chain"] {
			t.Errorf("committed %d, by kind %v: expected entries with some new chains among them (0.7%% of the mix)", res.Summary.Committed, res.Summary.CommittedByKind)
		}
	})

	t.Run("find-max", func(t *testing.T) { findMax(t, home, 300) })

	if out := tpslab(t, "net", "check", "--home", home); !strings.Contains(out, "ok: every node holds the same directory blocks") {
		t.Errorf("net check: %s", out)
	}
	tpslab(t, "net", "down", "--home", home)
	leftNothing(t, "net down", strings.TrimSuffix(strings.TrimPrefix(f.Bridge, "tpf"), "br"), home)
}

// killNetUp starts `tpslab net up` and SIGKILLs it once net.json shows the
// point at (the bridge made, a node's pid, every node started); it returns
// the network's tag.
func killNetUp(t *testing.T, args []string, home, at string) string {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			t.Fatalf("net up ended (%v) before it reached %q:\n%s", err, at, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		n, err := testnet.Load(home)
		if err != nil {
			continue // not written yet, or being written
		}
		f := factomnet.Of(n)
		if f == nil || f.Bridge == "" {
			continue
		}
		reached := false
		switch at {
		case "bridge":
			reached = exec.Command("ip", "link", "show", f.Bridge).Run() == nil
		case "node":
			reached = n.Nodes[len(n.Nodes)-1].PID != 0
		case "started":
			reached = !n.Started.IsZero()
		}
		if reached {
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return strings.TrimSuffix(strings.TrimPrefix(f.Bridge, "tpf"), "br")
		}
	}
}

// leftNothing fails unless no namespace, link or process of the network
// tagged tag remains (waiting for the kernel to finish what a kill began).
func leftNothing(t *testing.T, what, tag, home string) {
	t.Helper()
	var left string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		left = ""
		if ns, _ := exec.Command("ip", "netns", "list").Output(); bytes.Contains(ns, []byte("tpslab-"+tag)) {
			left += "namespaces:\n" + string(ns)
		}
		if links, _ := exec.Command("ip", "-o", "link", "show").Output(); bytes.Contains(links, []byte("tpf"+tag)) {
			left += "links:\n" + string(links)
		}
		if ps, _ := exec.Command("pgrep", "-af", home).Output(); len(ps) > 0 {
			left += "processes:\n" + string(ps)
		}
		if left == "" {
			return
		}
	}
	t.Errorf("%s left:\n%s", what, left)
}

// findMax names a sustainable EPS on the network and what limits it: a
// coarse search (a bracket within 40%, at most 4 steps) of 10 s steps, 4
// directory blocks of 2 s each after the step's warm-up, and a
// confirmation run. committed/offered is judged at the headline's 97%:
// with 4 blocks in a step a block's edge moves the rate by a percent.
func findMax(t *testing.T, home string, start int) {
	out := filepath.Join(t.TempDir(), "fm")
	args := []string{"find-max", "--net-home", home, "--start", fmt.Sprint(start), "--step", "10s", "--step-warmup", "2s", "--confirm-run", "10s",
		"--tolerance", "0.4", "--min-ratio", "0.97", "--slo", "p99_commit<=10s", "--max-steps", "4", "--senders", "40", "--window", "512",
		"--factom-mix", "entries", "--out", out}
	b, err := exec.Command(testbin.Path(t), args...).CombinedOutput()
	log := string(b)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3 && regexp.MustCompile(`(?m)^what limits it:\n  - limit at \d+ tx/s: .*ended with: (panic|fatal error): `).MatchString(log):
		// factomd itself crashed under the load (a panic or fatal error in
		// its own log): find-max must end there, name it as the limit with
		// the node's last words, and exit 3; which rate it dies at is
		// factomd's, not tpslab's.
		t.Logf("factomd crashed during the search; find-max named it:\n%s", log)
		return
	case err != nil:
		t.Fatalf("tpslab %s: %v\n%s", strings.Join(args, " "), err, log)
	}
	if !strings.Contains(log, "sustainable rate: ") || !strings.Contains(log, "what limits it:") {
		t.Errorf("find-max names no sustainable rate and no limit:\n%s", log)
	}
	t.Logf("find-max:\n%s", log)
}

// TestFactomFindMaxOnOneNode: the leader alone.
func TestFactomFindMaxOnOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts factomd")
	}
	if os.Geteuid() != 0 {
		t.Skip("a network namespace per node needs root")
	}
	home := filepath.Join(t.TempDir(), "net")
	tpslab(t, "net", "up", "--kind", "factom", "--accounts", "40", "--block-time", "2", "--home", home)
	defer tpslab(t, "net", "down", "--home", home)
	findMax(t, home, 1000)
}
