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
		{"http without path", "target:\n  kind: http\n  endpoints: [http://127.0.0.1:1]", `http.path: empty`},
		{"rest for evm", "target:\n  kind: evm\ncosmos:\n  via: rest", `cosmos.via: set, but target kind evm reads only evm`},
		{"a denom for the built-in network", "cosmos:\n  denom: uatom", `cosmos.denom: set, but target kind builtin reads no section`},
		{"cosmos rest without api", "target:\n  kind: cosmos\n  endpoints: [http://127.0.0.1:1]\ncosmos:\n  via: rest", `cosmos.api_endpoints: empty`},
		{"via's old place", "target:\n  kind: cosmos\n  via: rest", `target.via: moved to cosmos.via`},
		{"fee market's old place", "network:\n  fee_market:\n    enabled: false", `network.fee_market: moved to cosmos.fee_market`},
		{"cosmos fee", "target:\n  kind: cosmos\ncosmos:\n  fee: lots", `cosmos.fee: "lots", expected an amount and a denom`},
		{"builtin senders beyond accounts", "network:\n  accounts: 10\nworkload:\n  senders: 20", `workload.senders: 20, expected at most the 10 funded accounts`},
		{"fault on a node the network will not have", "network:\n  validators: 4\nfaults:\n  - {at: 5s, action: crash, target: node9, for: 5s}", `faults[0].target: "node9" is not a node of the network, expected one of node0, node1, node2, node3`},
		{"partition of every node", "network:\n  validators: 2\nfaults:\n  - {at: 5s, action: partition, target: node0+node1, for: 5s}", `faults[0].target: "node0+node1" is every node`},
		{"scenario rule still checked", "target:\n  kind: cosmos\nload:\n  rate: -5", `load.rate: -5`},
		{"ledger settings' old place", "network:\n  ledger:\n    batch: 2", `network.ledger: moved to ledger (a kind's settings are its own section`},
		{"ledger's own check", "target:\n  kind: ledger\nledger:\n  batch: 0", `ledger.batch: 0, expected 1..10000`},
		{"evm depth's old place", "target:\n  kind: evm\n  depth: 2", `target.depth: moved to evm.depth`},
		{"evm tx type's old place", "workload:\n  tx_type: legacy", `workload.tx_type: moved to evm.tx_type`},
		{"evm's own check", "target:\n  kind: evm\nevm:\n  depth: -1", `evm.depth: -1, expected 0..1000 blocks`},
		{"cosmos-evm reads the evm section", "target:\n  kind: cosmos-evm\nevm:\n  tx_type: eip", `evm.tx_type: "eip", expected one of [dynamic legacy]`},
		{"http's old place", "target:\n  kind: http\n  http:\n    path: /pay", `target.http: moved to http (a kind's settings`},
		{"http confirm for the ledger", "target:\n  kind: ledger\nhttp:\n  confirm: later", `http.confirm: "later", expected one of [sync poll callback]`},
		{"ledger's unknown field", "ledger:\n  batches: 2", `ledger.batches: unknown field, expected one of batch, batch_wait, db_connections`},
		// Issue 53: every kind with local processes takes every fault; a
		// kind given only by its URLs, none.
		{"delay on an http target", "target:\n  kind: http\nfaults:\n  - {at: 5s, action: delay, target: node0, value: 50ms, for: 5s}", `faults[0]: delay on a http target, which takes no faults (builtin, cosmos, evm, cosmos-evm, ledger, taler, factom networks do)`},
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
	s := scenario.Default()
	if err := scenario.Set(&s, "workload.max_fee", "1gwei"); err == nil || !strings.Contains(err.Error(), "workload.max_fee: moved to evm.max_fee") {
		t.Errorf("--set workload.max_fee: %v, expected where it moved", err)
	}
	for _, name := range reg.Names() {
		s := scenario.Default()
		s.Target.Kind = name
		s.Target.Endpoints = []string{"http://127.0.0.1:1"}
		if name == "http" {
			if err := scenario.Set(&s, "http.path", "/payments"); err != nil {
				t.Fatal(err)
			}
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

// Every example scenario reads and validates, kinds' sections and rules
// included.
func TestExampleScenariosValidate(t *testing.T) {
	files, _ := filepath.Glob("../../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example scenarios found")
	}
	reg := Registry()
	for _, f := range files {
		s, err := scenario.ReadFile(f)
		if err == nil {
			err = reg.Validate(&s)
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
