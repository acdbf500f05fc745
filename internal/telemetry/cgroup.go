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
