package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startKVStore runs CometBFT's own kvstore application as a single
// validator on loopback and returns its RPC URL.
func startKVStore(t *testing.T) string {
	t.Helper()
	bin := testbin.CometBFT(t)
	home := filepath.Join(t.TempDir(), "kvstore")
	if out, err := exec.Command(bin, "init", "--home", home).CombinedOutput(); err != nil {
		t.Fatalf("cometbft init: %v\n%s", err, out)
	}
	rpc := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, _ := os.Create(filepath.Join(home, "node.log"))
	cmd := exec.Command(bin, "start", "--home", home, "--proxy_app", "kvstore",
		"--rpc.laddr", "tcp://"+rpc, "--p2p.laddr", fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t)),
		"--log_level", "error")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	url := "http://" + rpc
	c, _ := rpchttp.New(url, "/websocket")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if st, err := c.Status(context.Background()); err == nil && st.SyncInfo.LatestBlockHeight >= 1 {
			return url
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(home, "node.log"))
			t.Fatalf("kvstore did not start:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The same engine measures CometBFT's kvstore with the raw workload, and its
// count matches the blocks.
func TestKVStoreRawWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a CometBFT kvstore node")
	}
	url := startKVStore(t)
	sc := scenario.Default()
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = []string{url}
	sc.Workload.Kind = "raw"
	sc.Load.Rate = 500
	sc.Load.Duration = scenario.Duration(6 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Out = filepath.Join(t.TempDir(), "run")
	res, err := run(t, context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Committed < 2000 {
		t.Fatalf("only %d committed", res.Summary.Committed)
	}
	c, _ := rpchttp.New(url, "/websocket")
	var ours int64
	for h := res.Chain.FirstHeight; h <= res.Chain.LastHeight; h++ {
		b, err := c.Block(context.Background(), &h)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Block.Txs {
			if bytes.HasPrefix(tx, []byte("tpslab-")) && strings.Contains(string(tx), "=") {
				ours++
			}
		}
	}
	if ours != res.Summary.Committed {
		t.Fatalf("result says %d committed, blocks hold %d", res.Summary.Committed, ours)
	}
}
