package telemetry

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// cpuGroup is the cgroup whose CPU controller a process runs under: v1's
// cpu controller or v2's unified hierarchy. Its files are read by hand:
// a few "key value" lines and one or two numbers, local files only.
type cpuGroup struct {
	dir string // the process's own group
	v2  bool
}

// cpuGroupOf finds the group of pid's CPU controller ("" when the machine
// has none tpslab can read).
func cpuGroupOf(fs procfs.FS, pid int) cpuGroup {
	p, err := fs.Proc(pid)
	if err != nil {
		return cpuGroup{}
	}
	cgs, err := p.Cgroups()
	if err != nil {
		return cpuGroup{}
	}
	var unified string
	for _, cg := range cgs {
		if slices.Contains(cg.Controllers, "cpu") {
			for _, mount := range []string{strings.Join(cg.Controllers, ","), "cpu", "cpu,cpuacct"} {
				dir := filepath.Join(cgroupRoot, mount, cg.Path)
				if _, err := os.Stat(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
					return cpuGroup{dir: dir}
				}
			}
		}
		if cg.HierarchyID == 0 {
			unified = cg.Path
		}
	}
	for _, mount := range []string{"", "unified"} {
		dir := filepath.Join(cgroupRoot, mount, unified)
		if _, err := os.Stat(filepath.Join(dir, "cpu.max")); err == nil {
			return cpuGroup{dir: dir, v2: true}
		}
	}
	return cpuGroup{}
}

// limit is the tightest CPU quota of the group and its ancestors, in
// cores (0: no limit).
func (g cpuGroup) limit() float64 {
	if g.dir == "" {
		return 0
	}
	tight := 0.0
	for dir := g.dir; strings.HasPrefix(dir, cgroupRoot) && len(dir) > len(cgroupRoot); dir = filepath.Dir(dir) {
		var quota, period float64
		if g.v2 {
			f := strings.Fields(readSmall(filepath.Join(dir, "cpu.max")))
			if len(f) != 2 || f[0] == "max" {
				continue
			}
			quota, _ = strconv.ParseFloat(f[0], 64)
			period, _ = strconv.ParseFloat(f[1], 64)
		} else {
			quota, _ = strconv.ParseFloat(strings.TrimSpace(readSmall(filepath.Join(dir, "cpu.cfs_quota_us"))), 64)
			period, _ = strconv.ParseFloat(strings.TrimSpace(readSmall(filepath.Join(dir, "cpu.cfs_period_us"))), 64)
		}
		if quota > 0 && period > 0 && (tight == 0 || quota/period < tight) {
			tight = quota / period
		}
	}
	return tight
}

// throttled is the time the group's limit held it back, in seconds
// summed over its CPUs, how many of its periods were throttled, and how
// many periods it ran in.
func (g cpuGroup) throttled() (seconds, throttled, periods float64, ok bool) {
	if g.dir == "" {
		return 0, 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader([]byte(readSmall(filepath.Join(g.dir, "cpu.stat")))))
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), " ")
		if !found {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		switch k {
		case "throttled_time": // v1, ns
			seconds, ok = n/1e9, true
		case "throttled_usec": // v2
			seconds, ok = n/1e6, true
		case "nr_throttled":
			throttled = n
		case "nr_periods":
			periods = n
		}
	}
	return seconds, throttled, periods, ok
}

// readSmall reads a cgroup file ("" when it cannot).
func readSmall(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// memGroup is the cgroup whose memory controller a process runs under,
// v1's memory controller or v2's unified hierarchy, read by hand as
// cpuGroup is.
type memGroup struct {
	dir string
	v2  bool
}

// memGroupOf finds the group of pid's memory controller.
func memGroupOf(fs procfs.FS, pid int) memGroup {
	p, err := fs.Proc(pid)
	if err != nil {
		return memGroup{}
	}
	cgs, err := p.Cgroups()
	if err != nil {
		return memGroup{}
	}
	var unified string
	for _, cg := range cgs {
		if slices.Contains(cg.Controllers, "memory") {
			dir := filepath.Join(cgroupRoot, "memory", cg.Path)
			if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err == nil {
				return memGroup{dir: dir}
			}
		}
		if cg.HierarchyID == 0 {
			unified = cg.Path
		}
	}
	for _, mount := range []string{"", "unified"} {
		dir := filepath.Join(cgroupRoot, mount, unified)
		if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
			return memGroup{dir: dir, v2: true}
		}
	}
	return memGroup{}
}

// noMemLimit: v1 writes "no limit" as the largest page-aligned int64.
const noMemLimit = 1 << 62

// read is the group's limit in bytes (0: none), its processes' own memory
// (anonymous: v1's total_rss, v2's anon; page cache, which the kernel
// reclaims at the limit, left out) and how many times its charge met the
// limit (v1's failcnt, v2's "max" events).
func (g memGroup) read() (limit, used, hits float64) {
	if g.dir == "" {
		return 0, 0, 0
	}
	num := func(name string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(readSmall(filepath.Join(g.dir, name))), 64)
		if err != nil {
			return 0
		}
		return v
	}
	if !g.v2 {
		if limit = num("memory.limit_in_bytes"); limit >= noMemLimit {
			limit = 0
		}
		return limit, statField(readSmall(filepath.Join(g.dir, "memory.stat")), "total_rss"), num("memory.failcnt")
	}
	limit = num("memory.max") // "max" reads 0: none
	used = statField(readSmall(filepath.Join(g.dir, "memory.stat")), "anon")
	return limit, used, statField(readSmall(filepath.Join(g.dir, "memory.events")), "max")
}

// statField is key's value in a cgroup's "key value" lines.
func statField(body, key string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
