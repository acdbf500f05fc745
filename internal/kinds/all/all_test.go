package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/scenario"
)

// The kind-specific checks left the scenario package for the kinds; these
// cases were scenario_test's and keep their assertions.
func TestValidateKinds(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"target kind", "target:\n  kind: bitcoin", `target.kind: "bitcoin", expected one of [builtin cometbft`},
		{"cometbft without endpoints", "target:\n  kind: cometbft", `target.endpoints: empty, expected at least one RPC URL`},
		{"http without endpoints", "target:\n  kind: http", `target.endpoints: empty, expected the API's base URL for target kind http`},
		{"http without path", "target:\n  kind: http\n  endpoints: [http://127.0.0.1:1]", `target.http.path: empty`},
		{"rest for evm", "target:\n  kind: evm\n  via: rest", `target.via: "rest", expected rpc: target kind evm`},
		{"cosmos rest without api", "target:\n  kind: cosmos\n  via: rest\n  endpoints: [http://127.0.0.1:1]", `target.api_endpoints: empty`},
		{"builtin senders beyond accounts", "network:\n  accounts: 10\nworkload:\n  senders: 20", `workload.senders: 20, expected at most the 10 funded accounts`},
		{"fault on a node the network will not have", "network:\n  validators: 4\nfaults:\n  - {at: 5s, action: crash, target: node9, for: 5s}", `faults[0].target: "node9" is not a node of the network, expected one of node0, node1, node2, node3`},
		{"partition of every node", "network:\n  validators: 2\nfaults:\n  - {at: 5s, action: partition, target: node0+node1, for: 5s}", `faults[0].target: "node0+node1" is every node`},
		{"scenario rule still checked", "target:\n  kind: cosmos\nload:\n  rate: -5", `load.rate: -5`},
	}
	dir := t.TempDir()
	reg := Registry()
	for _, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte("version: 1\n"+c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := scenario.ReadFile(path)
		if err == nil {
			err = reg.Validate(&s)
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.want)
		}
	}
	for _, name := range reg.Names() {
		s := scenario.Default()
		s.Target.Kind = name
		s.Target.Endpoints = []string{"http://127.0.0.1:1"}
		if name == "http" {
			s.Target.HTTP.Path = "/payments"
		}
		if err := reg.Validate(&s); err != nil {
			t.Errorf("kind %s with an endpoint: %v", name, err)
		}
	}
}

// An empty kind is the first registered; flag endpoints make the built-in
// kind's scenario a CometBFT chain's, unless the kind was named.
func TestResolve(t *testing.T) {
	reg := Registry()
	s := scenario.Default()
	if err := reg.Resolve(&s, false); err != nil || s.Target.Kind != reg.Names()[0] {
		t.Fatalf("empty kind resolved to %q (%v), want %q", s.Target.Kind, err, reg.Names()[0])
	}
	s.Target.Endpoints = []string{"http://127.0.0.1:1"}
	if err := reg.Resolve(&s, true); err != nil || s.Target.Kind != reg.Names()[0] {
		t.Fatalf("kept kind resolved to %q (%v)", s.Target.Kind, err)
	}
	if err := reg.Resolve(&s, false); err != nil || s.Target.Kind != reg.Names()[0+1] {
		t.Fatalf("endpoints resolved to %q (%v), want %q", s.Target.Kind, err, reg.Names()[1])
	}
}
