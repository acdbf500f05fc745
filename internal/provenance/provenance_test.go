package provenance

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/testnet"
)

// A network's programs are named by path, hash and version, once each
// with the nodes that ran them; its genesis and settings files by hash.
func TestOfNamesProgramsGenesisAndSettings(t *testing.T) {
	home := t.TempDir()
	n := &testnet.Net{Home: home}
	for _, name := range []string{"node0", "node1"} {
		dir := filepath.Join(home, name, "config")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "config.toml"), []byte("timeout_commit = \"1s\"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "genesis.json"), []byte(`{"chain_id":"x"}`), 0o644)
		n.Nodes = append(n.Nodes, testnet.Node{Name: name, Home: filepath.Join(home, name), Command: []string{"/bin/true", "start"}})
	}
	p := Of(context.Background(), n)
	hex := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if len(p.Programs) != 1 || p.Programs[0].Path != "/bin/true" || !hex.MatchString(p.Programs[0].SHA256) ||
		!strings.Contains(p.Programs[0].Version, "true") || len(p.Programs[0].Nodes) != 2 {
		t.Errorf("programs: %+v", p.Programs)
	}
	if !hex.MatchString(p.GenesisSHA256) || len(p.Configs) != 2 || !hex.MatchString(p.Configs["node1/config/config.toml"]) {
		t.Errorf("genesis %q, configs %v", p.GenesisSHA256, p.Configs)
	}
	if m := ReadMachine(); m.Kernel == "" || m.MemoryBytes <= 0 {
		t.Errorf("machine: %+v", m)
	}
}
