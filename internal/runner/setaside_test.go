package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// A scenario's network settings that the network in net_home did not
// take are named, with what it has; settings it shares, or that the
// scenario left at their defaults, are not.
func TestSetAsideNamesWhatTheNetworkDidNotTake(t *testing.T) {
	n := &testnet.Net{Nodes: make([]testnet.Node, 3), Settings: testnet.DefaultSettings()}
	sc := scenario.Default()
	if got := setAside(&sc, n, nil); len(got) != 0 {
		t.Errorf("a default scenario: %q", got)
	}
	sc.Network.Validators, sc.Network.Topology = 5, "region"
	sc.Network.TimeoutCommit = scenario.Duration(2 * time.Second)
	sc.Network.MempoolSize = n.Settings.MempoolSize // what the network has anyway
	got := setAside(&sc, n, nil)
	want := []string{"network.timeout_commit 2s (the network has 500ms)", "network.topology region (the network has none)", "network.validators 5 (the network has 3)"}
	if !slices.Equal(got, want) {
		t.Errorf("set aside %q, want %q", got, want)
	}
	n.Settings = testnet.Settings{} // a factomd network: no CometBFT settings to quote
	if got := setAside(&sc, n, nil); !slices.Contains(got, "network.timeout_commit 2s") {
		t.Errorf("without settings in net.json: %q", got)
	}
}
