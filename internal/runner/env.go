package runner

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/provenance"
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
		e.GitCommit, e.GitModified = GitHead()
	}
	e.BinarySHA256 = selfHash()
	m := provenance.ReadMachine()
	e.Machine = &m
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

// GitHead is the commit of the checkout tpslab runs from, and whether it
// has changes, or "" outside one (or without git).
func GitHead() (string, bool) {
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
// Hashing the ~90 MB program costs ~60 ms of CPU, a fifth of a short run's
// own CPU (bench/vs-loadtime.sh counts it), so the digest is kept in the
// cache under the program's Go build ID (which changes with its content;
// a program without one: its path, inode, size and modification time).
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
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	key := goBuildID(f)
	if key == "" {
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		key = fmt.Sprintf("%s\x00%d\x00%d", p, ino, fi.ModTime().UnixNano())
	}
	id := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", key, fi.Size()))
	var memo string
	if dir, err := buildcache.Dir(); err == nil {
		memo = filepath.Join(dir, "self-hash", hex.EncodeToString(id[:8]))
		if b, err := os.ReadFile(memo); err == nil && len(b) == 16 {
			return string(b)
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	if memo != "" && os.MkdirAll(filepath.Dir(memo), 0o755) == nil {
		tmp := fmt.Sprintf("%s.%d", memo, os.Getpid())
		if os.WriteFile(tmp, []byte(sum), 0o644) == nil {
			_ = os.Rename(tmp, memo) // whole or absent: concurrent runs agree
		}
	}
	return sum
}

// goBuildID reads the Go linker's build ID note from an ELF program ("" if
// it has none). debug/elf finds the section; the note's layout (name "Go",
// type 4) is the Go toolchain's, read here by hand as no package exports it.
func goBuildID(r io.ReaderAt) string {
	ef, err := elf.NewFile(r)
	if err != nil {
		return ""
	}
	sec := ef.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	b, err := sec.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	bo := ef.ByteOrder
	namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
	if namesz != 4 || typ != 4 || string(b[12:16]) != "Go\x00\x00" || uint64(len(b)) < 16+uint64(descsz) {
		return ""
	}
	return string(b[16 : 16+descsz])
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
