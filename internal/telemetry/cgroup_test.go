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
