package testnet

import (
	"strings"
	"testing"
)

// --node-cpu and --node-memory read as Kubernetes quantities, for all
// nodes or one, and bad values are named with what was expected.
func TestParseEnvelopes(t *testing.T) {
	envs, err := ParseEnvelopes("0.25,node3=500m", "1Gi")
	if err != nil {
		t.Fatal(err)
	}
	if all, one := envs[""], envs["node3"]; all.CPU != 0.25 || all.Memory != 1<<30 || one.CPU != 0.5 || one.Memory != 0 {
		t.Errorf("all %+v, node3 %+v", all, one)
	}
	for cpu, want := range map[string]string{"lots": `--node-cpu: "lots", expected a quantity`, "1m": "at least 10m", "node1=x": `"node1=x"`} {
		if _, err := ParseEnvelopes(cpu, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--node-cpu %s: %v, want %q", cpu, err, want)
		}
	}
	if _, err := ParseEnvelopes("", "1Ki"); err == nil || !strings.Contains(err.Error(), "at least 16Mi") {
		t.Errorf("--node-memory 1Ki: %v", err)
	}
}
