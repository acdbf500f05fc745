// Package provenance records what a run ran on, so that someone else can
// check it: every program of the network tpslab started (its path,
// SHA-256 and what it says its version is), the genesis and each node's
// settings files by hash, and the machine (docs/results.md).
package provenance

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/testnet"
)

// configNames are the settings files that shape what a node does.
var configNames = map[string]bool{"config.toml": true, "app.toml": true, "client.toml": true,
	"postgresql.conf": true, "pg_hba.conf": true, "exchange.conf": true, "taler.conf": true}

// Of reads the provenance of n: its programs (each hashed once, and asked
// for its version with a 3 s bound), its genesis and its nodes' settings.
// A program that cannot be read is listed with what could be read.
func Of(ctx context.Context, n *testnet.Net) *report.Provenance {
	out := &report.Provenance{Configs: map[string]string{}}
	byPath := map[string]*report.Program{}
	var order []string
	for _, nd := range n.Nodes {
		if len(nd.Command) == 0 {
			continue
		}
		path := nd.Command[0]
		if p, err := exec.LookPath(path); err == nil {
			path = p
		}
		pr := byPath[path]
		if pr == nil {
			pr = &report.Program{Path: path}
			pr.SHA256, pr.Version = known(ctx, path)
			byPath[path] = pr
			order = append(order, path)
		}
		pr.Nodes = append(pr.Nodes, nd.Name)
		configs(nd, out.Configs)
	}
	for _, p := range order {
		out.Programs = append(out.Programs, *byPath[p])
	}
	if len(n.Nodes) > 0 {
		if h, err := buildcache.FileSHA256(filepath.Join(n.Nodes[0].Home, "config", "genesis.json")); err == nil {
			out.GenesisSHA256 = h
		}
	}
	if out.GenesisSHA256 == "" && n.Genesis.Accounts > 0 {
		// The built-in ledger's accounts derive from these three.
		b, _ := json.Marshal(n.Genesis)
		sum := sha256.Sum256(b)
		out.GenesisSHA256 = "ledger:" + hex.EncodeToString(sum[:])
	}
	return out
}

// seen are the programs this process has hashed and asked, by path, size
// and time: a process that runs many runs (a campaign, the tests) reads
// each program once.
var seen sync.Map

type seenKey struct {
	path        string
	size, mtime int64
}

type seenValue struct{ sum, version string }

// known is path's SHA-256 and version, read once per path, size and time.
func known(ctx context.Context, path string) (sum, version string) {
	st, err := os.Stat(path)
	if err != nil {
		return "", ""
	}
	k := seenKey{path, st.Size(), st.ModTime().UnixNano()}
	if v, ok := seen.Load(k); ok {
		return v.(seenValue).sum, v.(seenValue).version
	}
	sum, _ = buildcache.SHA256(path)
	version = versionOf(ctx, path)
	seen.Store(k, seenValue{sum, version})
	return sum, version
}

// configs hashes the settings files in a node's home (two levels down at
// most: config/config.toml, a database's data folder).
func configs(nd testnet.Node, into map[string]string) {
	if nd.Home == "" {
		return
	}
	filepath.WalkDir(nd.Home, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(nd.Home, p)
		if d.IsDir() && strings.Count(rel, string(filepath.Separator)) >= 2 {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || !configNames[d.Name()] {
			return nil
		}
		if h, err := buildcache.FileSHA256(p); err == nil {
			into[nd.Name+"/"+rel] = h
		}
		return nil
	})
}

// versionOf is the first line program prints for --version, or for
// version; for a Cosmos SDK daemon built without a version stamp (its
// version line is empty), what version --long --output json says of its
// version, commit, SDK and Go. Each is bounded in time; "" when none
// answers.
func versionOf(ctx context.Context, program string) string {
	if strings.HasSuffix(program, ".test") {
		return "" // a Go test binary (in-process tests): it would run its tests
	}
	run := func(args ...string) string {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		out, err := exec.CommandContext(c, program, args...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	for _, arg := range []string{"--version", "version"} {
		if line := strings.TrimSpace(strings.SplitN(run(arg), "\n", 2)[0]); line != "" {
			return line[:min(len(line), 200)]
		}
	}
	var sdk struct {
		Name, Version, Commit, Go string
		SDK                       string `json:"cosmos_sdk_version"`
	}
	if json.Unmarshal([]byte(run("version", "--long", "--output", "json")), &sdk) != nil || sdk.Go == "" {
		return ""
	}
	if sdk.Name == "" {
		sdk.Name = filepath.Base(program)
	}
	return fmt.Sprintf("%s version %q, commit %q, Cosmos SDK %s, %s", sdk.Name, sdk.Version, sdk.Commit, sdk.SDK, strings.TrimPrefix(sdk.Go, "go version "))
}

// ReadMachine reads the machine from /proc and /sys (Linux); what is not
// readable stays empty.
func ReadMachine() report.Machine {
	var m report.Machine
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); err == nil {
		m.Governor = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAverage, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemoryBytes = kb * 1024
				break
			}
		}
	}
	return m
}
