package testnet

import (
	"encoding/json"
	"strings"
	"testing"
)

// A kind's section of net.json survives a write and a read beside the
// core, and cannot take a core field's name.
func TestNetSection(t *testing.T) {
	n := Net{Version: 1, Kind: "zed", Home: "/h", Nodes: []Node{{Name: "z0"}}}
	if err := n.SetSection("zed", map[string]int{"depth": 3}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetSection("nodes", 1); err == nil {
		t.Errorf("a section named like a core field was taken")
	}
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\"zed\": {\n    \"depth\": 3\n  }") {
		t.Errorf("net.json:\n%s\nwants the section at the top level", b)
	}
	var back Net
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var z struct{ Depth int }
	if ok, err := back.Section("zed", &z); !ok || err != nil || z.Depth != 3 || back.Kind != "zed" || back.Nodes[0].Name != "z0" {
		t.Errorf("read back: %v %v %+v %+v", ok, err, z, back)
	}
	if ok, _ := back.Section("other", &z); ok {
		t.Errorf("a section never written was found")
	}
}
