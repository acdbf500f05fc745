package telemetry

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// Process reads a local process and its children (a PostgreSQL server's
// backends) from /proc: CPU, memory, threads, open files and disk I/O.
type Process struct {
	Name     string // prefix of the metric names, e.g. the node's name
	Role     string // database, service, validator
	PID      int
	Children bool
	// PIDOf, when set, gives the current pid before each sample: a node
	// restarted during the run (a crash fault) is followed.
	PIDOf func() int
	fs    procfs.FS
	ok    bool
	// limited: the process ran under a CPU limit when it was first read
	// (a cgroup quota): its limit and throttled time are read too.
	limited bool
	group   cpuGroup
	groupOf int // the pid group was found for
	// periods and throttled are the group's counts at the last sample.
	periods, throttled float64
	// memLimited: the process ran under a memory limit when first read.
	memLimited bool
	mem        memGroup
	memOf      int
}

// NewProcess reads pid (and its children when children is set) as name.
func NewProcess(name, role string, pid int, children bool) *Process {
	p := &Process{Name: name, Role: role, PID: pid, Children: children}
	if fs, err := procfs.NewDefaultFS(); err == nil {
		p.fs, p.ok = fs, true
		p.group, p.groupOf = cpuGroupOf(fs, pid), pid
		p.limited = p.group.limit() > 0
		p.mem, p.memOf = memGroupOf(fs, pid), pid
		limit, _, _ := p.mem.read()
		p.memLimited = limit > 0
	}
	return p
}

// Metrics are the process's.
func (p *Process) Metrics() []Metric {
	n := p.Name + "."
	ms := []Metric{
		{Name: n + "cpu_percent", Unit: "%", Rate: true, Better: "lower", Help: "CPU time used, in percent of one core (the process and its children)"},
		{Name: n + "rss_bytes", Unit: "bytes", Help: "resident memory"},
		{Name: n + "threads", Unit: "1", Help: "threads"},
		{Name: n + "fds", Unit: "1", Help: "open file descriptors"},
		{Name: n + "read_bytes", Unit: "bytes/s", Rate: true, Help: "bytes read from storage"},
		{Name: n + "write_bytes", Unit: "bytes/s", Rate: true, PerPayment: true, Help: "bytes written to storage"},
	}
	if p.limited {
		ms = append(ms,
			Metric{Name: n + "cpu_limit_cores", Unit: "cores", Help: "the CPU limit of the process's cgroup (its quota over its period; the tightest of its ancestors')"},
			Metric{Name: n + "cpu_throttled_percent", Unit: "%", Better: "lower", Help: "the share of the cgroup's scheduling periods in which its CPU limit held it back (nr_throttled over nr_periods, each second)"},
			Metric{Name: n + "cpu_throttled_s", Unit: "s/s", Rate: true, Better: "lower", Help: "the cgroup's throttled time a second, summed over its CPUs"})
	}
	if p.memLimited {
		ms = append(ms,
			Metric{Name: n + "memory_limit_bytes", Unit: "bytes", Help: "the memory limit of the process's cgroup"},
			Metric{Name: n + "memory_limit_used_bytes", Unit: "bytes", Help: "its cgroup's processes' own (anonymous) memory against that limit; page cache, which the kernel reclaims at the limit, left out"},
			Metric{Name: n + "memory_limit_hits", Unit: "1/s", Rate: true, Better: "lower", Help: "times a second the cgroup's use met its limit and the kernel reclaimed or refused memory (v1 memory.failcnt, v2 memory.events max)"})
	}
	for i := range ms {
		ms[i].Role = p.Role
	}
	return ms
}

// Sample sums the process and, if asked, its live children; CPU includes
// the children it has reaped, so it never goes back.
func (p *Process) Sample(_ context.Context, dst []float64) error {
	if !p.ok {
		return fmt.Errorf("%s: /proc is not readable", p.Name)
	}
	if p.PIDOf != nil {
		p.PID = p.PIDOf()
	}
	root, err := p.fs.Proc(p.PID)
	if err != nil {
		return fmt.Errorf("%s: pid %d: %w", p.Name, p.PID, err)
	}
	procs := []procfs.Proc{root}
	if p.Children {
		for _, pid := range p.children() {
			if c, err := p.fs.Proc(pid); err == nil {
				procs = append(procs, c)
			}
		}
	}
	var cpu, rss, threads, fds, rd, wr float64
	ioOK := true
	for i, pr := range procs {
		st, err := pr.Stat()
		if err != nil {
			if i == 0 {
				return fmt.Errorf("%s: pid %d: %w", p.Name, p.PID, err)
			}
			continue // a child that just exited
		}
		cpu += st.CPUTime()
		if i == 0 {
			cpu += float64(st.CUTime+st.CSTime) / 100 // USER_HZ
		}
		rss += float64(st.ResidentMemory())
		threads += float64(st.NumThreads)
		if n, err := pr.FileDescriptorsLen(); err == nil {
			fds += float64(n)
		}
		if io, err := pr.IO(); err == nil {
			rd += float64(io.ReadBytes)
			wr += float64(io.WriteBytes)
		} else if i == 0 {
			ioOK = false
		}
	}
	dst[0], dst[1], dst[2], dst[3] = cpu*100, rss, threads, fds
	if ioOK {
		dst[4], dst[5] = rd, wr
	}
	if p.limited {
		if p.groupOf != p.PID { // restarted: it may run in another group
			p.group, p.groupOf = cpuGroupOf(p.fs, p.PID), p.PID
		}
		dst[6] = p.group.limit()
		if sec, thr, per, ok := p.group.throttled(); ok {
			dst[7] = 0
			if d := per - p.periods; d > 0 && p.periods > 0 {
				dst[7] = 100 * (thr - p.throttled) / d
			}
			p.periods, p.throttled, dst[8] = per, thr, sec
		}
	}
	if p.memLimited {
		i := 6
		if p.limited {
			i = 9
		}
		if p.memOf != p.PID { // restarted: it may run in another group
			p.mem, p.memOf = memGroupOf(p.fs, p.PID), p.PID
		}
		dst[i], dst[i+1], dst[i+2] = p.mem.read()
	}
	return nil
}

// children lists the process's children from its main thread's children
// file (what forks them; PostgreSQL's postmaster does), or by scanning
// /proc when the kernel has no such file.
func (p *Process) children() []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.PID, p.PID))
	if err != nil {
		var out []int
		all, _ := p.fs.AllProcs()
		for _, c := range all {
			if st, err := c.Stat(); err == nil && st.PPID == p.PID {
				out = append(out, c.PID)
			}
		}
		return out
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Close does nothing.
func (p *Process) Close() {}
