// Package layering holds tests of the import graph: which packages may
// depend on which (docs/architecture.md).
package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/kinds/all"
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
	self := strings.TrimPrefix(pkg, "../")
	for _, l := range strings.Fields(string(out)) {
		if p, ok := strings.CutPrefix(l, mod); ok && p != self {
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

// Faults act on a network and measure their effect; how a run's result is
// written is the runner's business: fault does not import report (the
// runner converts fault.Effect into the result's report.FaultEffect).
func TestFaultImportsNoOutput(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", "../fault").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == mod+"report" {
			t.Error("fault imports report")
		}
	}
}

// Outside each kind's own folder, no Go code names a kind: the registration
// list in kinds/all names them by package. The allowed strings below equal
// a kind's name by coincidence (a URL scheme, a directory, a binary).
func TestKindNamesOnlyInTheirFolders(t *testing.T) {
	allowed := map[string]string{
		"testnet/chainnet/node.go:ledger":       "the ledger application's database directory",
		"testnet/net.go:http":                   "a URL scheme",
		"scenario/validate.go:http":             "a URL scheme",
		"targets/httpclient/httpclient.go:http": "a URL scheme",
		"targets/httpapi/target.go:http":        "a URL scheme",
		"ledgersvc/service.go:http":             "a URL scheme",
		"testbin/testbin.go:cometbft":           "CometBFT's own binary",
		// A kind's network package, beside its folder, names the section of
		// net.json it reads and writes.
		"testnet/sdknet/sdknet.go:cosmos":       "its net.json section",
		"testnet/gethnet/gethnet.go:evm":        "its net.json section",
		"testnet/pgnet/pgnet.go:ledger":         "its net.json section",
		"testnet/sdknet/evmgenesis.go:evm":      "x/vm's module name in a Cosmos EVM genesis",
		"testnet/talernet/talernet.go:taler":    "its net.json section, and the exchange database's name",
		"testnet/factomnet/factomnet.go:factom": "its net.json section",
	}
	names := map[string]bool{}
	for _, n := range all.Registry().Names() {
		names[n] = true
	}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// A kind's own folder may name it (and kinds/all is names-free).
			if parts := strings.Split(rel, "/"); len(parts) == 2 && parts[0] == "kinds" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if fl, ok := n.(*ast.Field); ok {
				// Struct tags are not names (yaml:"http" is a field).
				if fl.Type != nil {
					ast.Inspect(fl.Type, func(m ast.Node) bool { return check(t, m, rel, names, allowed) })
				}
				return false
			}
			return check(t, n, rel, names, allowed)
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, n ast.Node, rel string, names map[string]bool, allowed map[string]string) bool {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return true
	}
	v, err := strconv.Unquote(lit.Value)
	if err != nil || !names[v] {
		return true
	}
	if _, ok := allowed[rel+":"+v]; !ok {
		t.Errorf("%s names the kind %q outside its folder: a kind's name belongs to internal/kinds/<kind>/ (declare a feature in kinds.Info instead)", rel, v)
	}
	return true
}

// The scenario, testnet's root and the kinds' root are kind-neutral: no
// type they declare, no field and no field's type is one kind's (a kind's
// settings are its section of the scenario, its state its section of
// net.json). The words below are the kind-specific ones that once lived
// there.
func TestNoKindSpecificTypes(t *testing.T) {
	words := []string{"Cosmos", "EVM", "Eth", "Geth", "Ledger", "FeeMarket", "Economics", "Mint", "Denom", "Bech32", "Postgres", "Tpsd"}
	for _, dir := range []string{"../scenario", "../testnet", "../kinds"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				var names []string
				switch x := n.(type) {
				case *ast.TypeSpec:
					names = append(names, x.Name.Name)
				case *ast.Field:
					for _, id := range x.Names {
						names = append(names, id.Name)
					}
					ast.Inspect(x.Type, func(m ast.Node) bool {
						if id, ok := m.(*ast.Ident); ok {
							names = append(names, id.Name)
						}
						return true
					})
				}
				for _, name := range names {
					for _, w := range words {
						if strings.Contains(name, w) {
							t.Errorf("%s: %s is one kind's (%s): it belongs to the kind's folder or its network package", path, name, w)
						}
					}
				}
				return true
			})
		}
	}
}

// The scenario (configuration) does not know the report (output): its
// thresholds are checked against the report's metrics by the registry.
func TestScenarioImportsNoReport(t *testing.T) {
	for _, d := range deps(t, "../scenario") {
		if d == mod+"report" || d == mod+"threshold" {
			t.Errorf("scenario depends on %s", d)
		}
	}
}

// No function is over 120 lines, and no type of the packages that
// orchestrate a run (runner, campaign, segment, dispatch, cli) has more
// than 15 methods: past that, a step hides inside another step.
func TestFunctionAndTypeSizes(t *testing.T) {
	orchestration := map[string]bool{"runner": true, "campaign": true, "segment": true, "dispatch": true, "cli": true}
	methods := map[string]int{}
	err := filepath.WalkDir("../../", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "chains" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkg := filepath.Base(filepath.Dir(path))
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > 120 {
				t.Errorf("%s: %s is %d lines, expected at most 120", path, fd.Name.Name, n)
			}
			if fd.Recv != nil && orchestration[pkg] {
				typ := fd.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					methods[pkg+"."+id.Name]++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for typ, n := range methods {
		if n > 15 {
			t.Errorf("%s has %d methods, expected at most 15", typ, n)
		}
	}
}
