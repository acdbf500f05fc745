package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/dashboard"
	"github.com/tpslab/tpslab/internal/measure/measuretest"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
)

// On a real local Kubernetes of 2 kubelets: 4 validators as pods spread over
// both nodes, a load of 2 segments as an Indexed Job whose merged committed
// count is the blocks' own, read from a validator pod, a validator pod
// deleted mid-run (a crash the run survives and reports), net check, and
// net down and cluster down that leave nothing behind; then tpsd's and
// tpsevmd's validators as pods.
func TestLoadAndNetworkOnKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Kubernetes cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("a local cluster needs root (containerd, kubelets, network namespaces)")
	}
	bin := testbin.Path(t)
	dir := t.TempDir()
	home, netHome, out := filepath.Join(dir, "cluster"), filepath.Join(dir, "net"), filepath.Join(dir, "run")
	tpslab := func(timeout time.Duration, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		b, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	start := time.Now()
	t.Log(tpslab(40*time.Minute, "cluster", "up", "--home", home, "--nodes", "2"))
	t.Logf("cluster up took %s", time.Since(start).Round(time.Second))
	st, err := cluster.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	downCluster := func() {
		if b, err := exec.Command(bin, "cluster", "down", "--home", home).CombinedOutput(); err != nil {
			t.Errorf("cluster down: %v\n%s", err, b)
		}
	}
	defer func() {
		if _, err := cluster.Load(home); err == nil {
			downCluster()
		}
	}()
	kubeconfig := filepath.Join(home, "kubeconfig")
	tpslab(5*time.Minute, "net", "up", "--home", netHome, "--kubeconfig", kubeconfig, "--validators", "4")
	n, err := testnet.Load(netHome)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := cluster.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "tpslab/net=" + n.Kubernetes.Name})
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]int{}
	for _, p := range pods.Items {
		on[p.Spec.NodeName]++
	}
	if len(pods.Items) != 4 || on["node1"] != 2 || on["node2"] != 2 {
		t.Fatalf("validator pods %d, by node %v; expected 4, spread over node1 and node2", len(pods.Items), on)
	}

	// The live page merges the pods' seconds as the coordinator receives
	// them (issue 35): read its state while the run goes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dashAddr := ln.Addr().String()
	ln.Close()
	live := make(chan string, 1)
	go func() {
		last := "never answered"
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			resp, err := http.Get("http://" + dashAddr + "/api/live")
			if err != nil {
				continue
			}
			var st dashboard.State
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil {
				continue
			}
			var committed float64
			for _, f := range st.Figures {
				if f.Name == "committed_tps" {
					committed = f.Value
				}
			}
			last = fmt.Sprintf("%d segments, %d seconds, committed_tps %g, final %v", st.Segments, len(st.Points), committed, st.Final)
			if st.Segments == 2 && len(st.Points) > 0 && committed > 0 && !st.Final {
				live <- ""
				return
			}
		}
		live <- last
	}()
	tpslab(10*time.Minute, "run", "--kubeconfig", kubeconfig, "--segments", "2", "--net-home", netHome, "--rate", "200",
		"--duration", "16s", "--warmup", "3s", "--fault", "6s:crash:node3:5s", "--dashboard="+dashAddr, "--out", out)
	if why := <-live; why != "" {
		t.Errorf("the live page never showed the pods' merged seconds mid-run: %s", why)
	}
	r, err := report.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	measuretest.Identities(t, s.Counts)
	if r.EndedBecause != "completed" || len(r.Segments) != 2 || s.Committed < 2000 {
		t.Fatalf("ended %q, segments %+v, committed %d", r.EndedBecause, r.Segments, s.Committed)
	}
	for i, sg := range r.Segments {
		if !strings.HasPrefix(sg.Where, "pod tpslab-run-") || sg.Committed == 0 {
			t.Errorf("segment %d: %+v, expected a pod of the Job that committed payments", i, sg)
		}
	}
	if got := codeZeroTxs(t, n.Nodes[0].RPC, r.Chain.FirstHeight, r.Chain.LastHeight); got != s.Committed {
		t.Errorf("merged committed %d; validator pod node0 holds %d in blocks %d..%d", s.Committed, got, r.Chain.FirstHeight, r.Chain.LastHeight)
	}
	var down, crash bool
	for _, e := range r.Events {
		down = down || e.Kind == "node_down" && e.Target == "node3"
		crash = crash || e.Kind == "fault" && strings.Contains(e.Detail, "pod deleted")
	}
	if !down || !crash || len(s.Faults) != 1 || s.Faults[0].BeforeTPS <= 0 {
		t.Errorf("events %+v, faults %+v: expected node3's pod deleted, seen down, and measured", r.Events, s.Faults)
	}
	if s.Lost != 0 {
		t.Errorf("%d payments lost", s.Lost)
	}

	n, _ = testnet.Load(netHome) // node3 is a new pod now
	_ = n.WaitForBlocks(context.Background(), r.Chain.LastHeight+2, time.Minute)
	tpslab(3*time.Minute, "net", "check", "--home", netHome)
	tpslab(3*time.Minute, "net", "down", "--home", netHome)

	// The Cosmos SDK chain too: tpsd's validators as pods (tpsd built
	// statically into an image), a load from this machine counted against
	// a validator pod's blocks, and its audit.
	sdkHome, sdkOut := filepath.Join(dir, "sdk"), filepath.Join(dir, "sdk-run")
	tpslab(15*time.Minute, "net", "up", "--kind", "cosmos", "--home", sdkHome, "--kubeconfig", kubeconfig, "--validators", "2", "--accounts", "2000", "--node-cpu", "500m")
	sn, err := testnet.Load(sdkHome)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Kubernetes == nil || sn.Kubernetes.DaemonImage == "" || !strings.Contains(sn.Nodes[1].API, "10.244.") {
		t.Fatalf("net.json: %+v, nodes %+v", sn.Kubernetes, sn.Nodes)
	}
	tpslab(5*time.Minute, "run", "--net-home", sdkHome, "--rate", "50", "--duration", "12s", "--warmup", "2s", "--out", sdkOut)
	sr, err := report.ReadResult(sdkOut)
	if err != nil {
		t.Fatal(err)
	}
	if sr.EndedBecause != "completed" || sr.Summary.Committed < 400 {
		t.Errorf("tpsd on Kubernetes: ended %q, committed %d", sr.EndedBecause, sr.Summary.Committed)
	}
	// The pods run on this machine: their processes, and the CPU limit
	// --node-cpu gave them, are read like local nodes' (issue 63).
	for _, nd := range sn.Nodes {
		if lim := sr.Summary.Telemetry[nd.Name+".cpu_limit_cores"]; lim.Mean != 0.5 || sr.Summary.Telemetry[nd.Name+".cpu_percent"].Mean <= 0 {
			t.Errorf("%s's pod under --node-cpu 500m: cpu_limit_cores %+v, cpu_percent %+v", nd.Name, lim, sr.Summary.Telemetry[nd.Name+".cpu_percent"])
		}
	}
	row := false
	for _, e := range sr.Judge().Considered {
		row = row || e.Resource == "node0.cpu_limit" && e.Capacity == 0.5
	}
	if !row {
		t.Errorf("the judgement weighs no node0.cpu_limit of 0.5 cores: %+v", sr.Judge().Considered)
	}
	if got := codeZeroTxs(t, sn.Nodes[1].RPC, sr.Chain.FirstHeight, sr.Chain.LastHeight); got != sr.Summary.Committed {
		t.Errorf("tpsd: committed %d; validator pod node1 holds %d in blocks %d..%d", sr.Summary.Committed, got, sr.Chain.FirstHeight, sr.Chain.LastHeight)
	}
	tpslab(3*time.Minute, "net", "check", "--home", sdkHome)
	tpslab(3*time.Minute, "net", "down", "--home", sdkHome)

	// The Cosmos EVM chain (issue 53): tpsevmd's validators as pods, ERC20
	// transfers to their Ethereum JSON-RPC, counted against a validator
	// pod's receipts.
	evmHome, evmOut := filepath.Join(dir, "evm"), filepath.Join(dir, "evm-run")
	tpslab(15*time.Minute, "net", "up", "--kind", "cosmos-evm", "--home", evmHome, "--kubeconfig", kubeconfig, "--validators", "2", "--accounts", "300")
	en, err := testnet.Load(evmHome)
	if err != nil {
		t.Fatal(err)
	}
	if en.Kubernetes == nil || !strings.Contains(en.Nodes[1].LoadRPC, "10.244.") {
		t.Fatalf("net.json: %+v, nodes %+v", en.Kubernetes, en.Nodes)
	}
	tpslab(5*time.Minute, "run", "--net-home", evmHome, "--set", "workload.kind=erc20", "--senders", "300", "--rate", "50", "--duration", "8s", "--warmup", "2s", "--out", evmOut)
	er, err := report.ReadResult(evmOut)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, w := range evm.DeriveWallets(gethnet.Of(en).WalletSeed, 300) {
		ours[strings.ToLower(w.Address.Hex())] = true
	}
	// A node's JSON-RPC indexes a block after committing it: the last ones
	// may read empty for a moment (380 of 399 once, at once after the run).
	got := okReceipts(t, en.Nodes[1].LoadRPC, er.Chain.FirstHeight, er.Chain.LastHeight, ours)
	for try := 0; try < 10 && got != er.Summary.Committed; try++ {
		time.Sleep(time.Second)
		got = okReceipts(t, en.Nodes[1].LoadRPC, er.Chain.FirstHeight, er.Chain.LastHeight, ours)
	}
	if er.EndedBecause != "completed" || er.Summary.Committed < 300 || got != er.Summary.Committed {
		t.Errorf("tpsevmd on Kubernetes: ended %q, committed %d; validator pod node1's receipts in blocks %d..%d: %d succeeded",
			er.EndedBecause, er.Summary.Committed, er.Chain.FirstHeight, er.Chain.LastHeight, got)
	}
	tpslab(3*time.Minute, "net", "check", "--home", evmHome)
	tpslab(3*time.Minute, "net", "down", "--home", evmHome)
	left, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(left.Items) != 0 {
		t.Errorf("after net down: %d pods (%v)", len(left.Items), err)
	}
	downCluster()
	if l := st.Leftovers(); len(l) > 0 {
		t.Errorf("cluster down left %v", l)
	}
	if b, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(b), "tpslab-"+st.ID) {
		t.Errorf("network namespaces left: %s", b)
	}
}

// okReceipts counts the successful receipts (status 1) of blocks [from,
// to] sent by ours, by a node's Ethereum JSON-RPC.
func okReceipts(t *testing.T, rpc string, from, to int64, ours map[string]bool) (n int64) {
	t.Helper()
	for h := from; h <= to; h++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockReceipts","params":["0x%x"]}`, h)
		resp, err := http.Post(rpc, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Result []struct {
				Status string `json:"status"`
				From   string `json:"from"`
			} `json:"result"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("receipts of block %d: %v", h, err)
		}
		for _, r := range v.Result {
			if r.Status == "0x1" && ours[strings.ToLower(r.From)] {
				n++
			}
		}
	}
	return n
}
