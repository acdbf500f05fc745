// Package layering holds tests of the import graph: which packages may
// depend on which (docs/architecture.md).
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/tpslab/tpslab/internal/"

// deps lists the tpslab packages pkg depends on, itself excluded.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "./"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps ./%s: %v", pkg, err)
	}
	var ds []string
	for _, l := range strings.Fields(string(out)) {
		if p, ok := strings.CutPrefix(l, mod); ok && "internal/"+p != pkg {
			ds = append(ds, p)
		}
	}
	return ds
}

// The engine takes plain typed settings: it knows neither the scenario
// (configuration) nor the report (output), nor any kind of system.
func TestEngineImportsNoConfigurationOrOutput(t *testing.T) {
	engine := []string{"schedule", "dispatch", "confirm", "measure", "workload", "sut"}
	banned := []string{"scenario", "report", "threshold", "telemetry", "kinds", "runner", "testnet", "chain"}
	for _, pkg := range engine {
		for _, d := range deps(t, "../"+pkg) {
			for _, b := range banned {
				if d == b || strings.HasPrefix(d, b+"/") {
					t.Errorf("engine package %s depends on %s", pkg, d)
				}
			}
		}
	}
}

// The system under test does not import the load generator's seam.
func TestLedgerAppImportsNoSeam(t *testing.T) {
	for _, d := range deps(t, "../chain") {
		if d == "sut" || strings.HasPrefix(d, "sut/") || d == "workload" {
			t.Errorf("the ledger application (chain) depends on %s", d)
		}
	}
}
