package telemetry

import (
	"os"
	"path/filepath"
	"testing"
)

// A group's limit is the tightest quota of it and its ancestors; its
// throttled counts are read from cpu.stat, v1 and v2 alike.
func TestCPUGroupFiles(t *testing.T) {
	root := t.TempDir()
	old := cgroupRoot
	cgroupRoot = root
	defer func() { cgroupRoot = old }()
	put := func(rel, body string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	// v1: a parent limited to half a core, the child to 1.5: half is the limit.
	put("cpu/a/cpu.cfs_quota_us", "50000\n")
	put("cpu/a/cpu.cfs_period_us", "100000\n")
	put("cpu/a/b/cpu.cfs_quota_us", "150000\n")
	put("cpu/a/b/cpu.cfs_period_us", "100000\n")
	put("cpu/a/b/cpu.stat", "nr_periods 200\nnr_throttled 50\nthrottled_time 2500000000\n")
	g := cpuGroup{dir: filepath.Join(root, "cpu/a/b")}
	if l := g.limit(); l != 0.5 {
		t.Errorf("v1 limit %g, want 0.5", l)
	}
	if s, thr, per, ok := g.throttled(); !ok || s != 2.5 || thr != 50 || per != 200 {
		t.Errorf("v1 throttled %g s, %g of %g periods, %v", s, thr, per, ok)
	}
	// v2: "max" is no limit; the child's 25000/100000 is a quarter core.
	put("x/cpu.max", "max 100000\n")
	put("x/y/cpu.max", "25000 100000\n")
	put("x/y/cpu.stat", "usage_usec 9\nnr_periods 10\nnr_throttled 9\nthrottled_usec 1500000\n")
	g = cpuGroup{dir: filepath.Join(root, "x/y"), v2: true}
	if l := g.limit(); l != 0.25 {
		t.Errorf("v2 limit %g, want 0.25", l)
	}
	if s, thr, per, ok := g.throttled(); !ok || s != 1.5 || thr != 9 || per != 10 {
		t.Errorf("v2 throttled %g s, %g of %g periods, %v", s, thr, per, ok)
	}
	if (cpuGroup{dir: filepath.Join(root, "x")}).limit() != 0 {
		t.Error("a group without a quota has a limit")
	}
}

// A memory group's limit, use and hits, v1 and v2; v1's "no limit" and
// v2's "max" are none.
func TestMemGroupFiles(t *testing.T) {
	root := t.TempDir()
	put := func(rel, body string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	put("memory/a/memory.limit_in_bytes", "268435456\n")
	put("memory/a/memory.stat", "cache 5000\nrss 100\ntotal_cache 6000\ntotal_rss 260000000\n")
	put("memory/a/memory.failcnt", "42\n")
	if l, u, h := (memGroup{dir: filepath.Join(root, "memory/a")}).read(); l != 268435456 || u != 260000000 || h != 42 {
		t.Errorf("v1: limit %g, used %g, hits %g", l, u, h)
	}
	put("memory/b/memory.limit_in_bytes", "9223372036854771712\n")
	if l, _, _ := (memGroup{dir: filepath.Join(root, "memory/b")}).read(); l != 0 {
		t.Errorf("v1 without a limit: %g", l)
	}
	put("x/memory.max", "1073741824\n")
	put("x/memory.stat", "anon 1000\nfile 99999\n")
	put("x/memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 0\n")
	if l, u, h := (memGroup{dir: filepath.Join(root, "x"), v2: true}).read(); l != 1<<30 || u != 1000 || h != 7 {
		t.Errorf("v2: limit %g, used %g, hits %g", l, u, h)
	}
	put("y/memory.max", "max\n")
	if l, _, _ := (memGroup{dir: filepath.Join(root, "y"), v2: true}).read(); l != 0 {
		t.Errorf("v2 without a limit: %g", l)
	}
}
