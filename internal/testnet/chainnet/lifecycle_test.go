package chainnet

import (
	"context"
	"github.com/tpslab/tpslab/internal/testnet"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/testbin"
)

func states(n *testnet.Net) map[string]string {
	out := map[string]string{}
	for _, s := range n.Status(context.Background()) {
		out[s.Name] = s.State
	}
	return out
}

// Nodes stopped by `net stop` or crashed come back with `net start` on
// their own state and catch up; status tells stopped from crashed. RPC
// nodes take the endpoints and join through emulated links.
func TestStopStartAndRPCNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	ctx := context.Background()
	n, err := Up(ctx, Options{Validators: 4, RPCNodes: 1, Topology: "region", ClientLinks: true, Home: filepath.Join(t.TempDir(), "net"), ChainID: "life",
		Genesis: chain.Genesis{Seed: "life", Accounts: 10, Balance: 1000}, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Down() })
	if eps := n.RPCEndpoints(); len(eps) != 1 || eps[0] != n.Nodes[4].ClientRPC || n.Validators() != 4 {
		t.Fatalf("endpoints %v (validators %d): the load must go to the RPC node through its client link", eps, n.Validators())
	}
	if len(n.Links.Links) != 6+4+5 {
		t.Fatalf("%d links, want 6 between validators, 4 from the RPC node and 5 from the generator", len(n.Links.Links))
	}
	if rtt, err := netem.ProbeHTTP(strings.TrimPrefix(n.Nodes[4].ClientRPC, "http://"), 3); err != nil || rtt < 5*time.Millisecond { // the node's own HTTP time on top: no upper bound (the 50 ms link below has one)
		t.Errorf("the generator's 5 ms link to rpc0 measured %s, %v", rtt, err)
	}
	// A 50 ms link to a real node measures at least 50 ms, and less than
	// the delay applied twice (a busy machine adds its own milliseconds).
	l := n.Links.Links[0]
	if err := netem.NewControl(&n.Links.Emulation).Set(l.Name, netem.Conditions{RTT: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if rtt, err := netem.ProbeRTT(l.Listen, 5); err != nil || rtt < 50*time.Millisecond || rtt >= 100*time.Millisecond {
		t.Errorf("%s set to 50 ms measured %s, %v", l.Name, rtt, err)
	}
	if err := n.Stop([]string{"node1"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(2); err != nil {
		t.Fatal(err)
	}
	// Two of four validators down: the chain halts while they are.
	st := states(n)
	if st["node1"] != "stopped" || st["node2"] != "crashed" || st["node0"] != "running" || st["rpc0"] != "running" {
		t.Fatalf("states %v", st)
	}
	h0, _ := testnet.Height(ctx, n.Nodes[0].RPC)
	started, err := n.Start(nil)
	if err != nil || len(started) != 2 {
		t.Fatalf("started %v: %v", started, err)
	}
	if err := n.WaitForBlocks(ctx, h0+3, time.Minute); err != nil {
		t.Fatalf("the chain did not resume with its validators back: %v", err)
	}
	if st := states(n); st["node1"] != "running" || st["node2"] != "running" {
		t.Errorf("after net start: %v", st)
	}
	if err := n.Stop([]string{"node9"}); err == nil {
		t.Error("stopping an unknown node was taken")
	}
	if r := n.Check(ctx); len(r.Problems) > 0 {
		t.Errorf("net check after stop and start: %v", r.Problems)
	}
}
