package runner

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/report"
)

func environment(version string) report.Environment {
	e := report.Environment{TpslabVersion: version, GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				e.GitCommit = s.Value
			case "vcs.modified":
				e.GitModified = s.Value == "true"
			}
		}
	}
	if e.GitCommit == "" {
		// go run stamps no VCS information: ask the checkout it ran from.
		e.GitCommit, e.GitModified = gitHead()
	}
	e.BinarySHA256 = selfHash()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return e
}

// gitHead is the commit of the checkout tpslab runs from, and whether it
// has changes, or "" outside one (or without git).
func gitHead() (string, bool) {
	root, err := buildcache.Root()
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	st, _ := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), len(strings.TrimSpace(string(st))) > 0
}

// selfHash is the first 16 hex digits of the running program's SHA-256.
func selfHash() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// machineCPU reads /proc/stat's aggregate line: busy, total and stolen
// jiffies (steal: time a hypervisor gave this machine's CPUs to others; it
// counts busy too, since it was not idle time anyone here could use).
func machineCPU() (busy, total, steal uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i >= 8 { // guest time is already in user and nice
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
		if i == 7 {
			steal = n
		}
	}
	return busy, total, steal
}

// loadAverage is the machine's 1-minute load average (0 when unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
