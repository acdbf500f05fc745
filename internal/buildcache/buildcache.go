// Package buildcache builds the external programs tpslab starts (its
// Cosmos SDK chain, geth, Kubernetes) once, into one cache outside any
// checkout, keyed by version: ${XDG_CACHE_HOME:-~/.cache}/tpslab/NAME-VERSION/NAME.
// A version is a release (geth@v1.15.11) or a hash of the sources and build
// flags, so every clone, `tpslab net up`, `cluster up` and the tests share
// one build, and a second CI run on the same machine builds nothing.
package buildcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Root is the tpslab source tree: $TPSLAB_ROOT, or the first directory up
// from the working directory whose go.mod is tpslab's.
func Root() (string, error) {
	if r := os.Getenv("TPSLAB_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/tpslab/tpslab\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tpslab source tree (set TPSLAB_ROOT, or give the program's path)")
		}
		dir = parent
	}
}

// Dir is where built programs are kept: $TPSLAB_CACHE, or tpslab under the
// user's cache directory ($XDG_CACHE_HOME, else ~/.cache).
func Dir() (string, error) {
	d := os.Getenv("TPSLAB_CACHE")
	if d == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for built programs (set TPSLAB_CACHE): %v", err)
		}
		d = filepath.Join(base, "tpslab")
	}
	return d, os.MkdirAll(d, 0o755)
}

var mu sync.Mutex

// GoBuild builds package pkg of the Go module in ROOT/moduleDir into the
// cache as name, unless a build from the same sources is there already. log
// is told when a build starts (they take minutes).
func GoBuild(name, moduleDir, pkg string, log io.Writer) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, moduleDir)
	stamp, err := sourceHash(src)
	if err != nil {
		return "", err
	}
	return cached(name, stamp, log, func(out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = src
		return cmd
	})
}

// GoBuildWith is GoBuild with an environment for the build (CGO_ENABLED=0)
// and build flags (-ldflags ...); they are part of the stamp.
func GoBuildWith(name, moduleDir, pkg string, env, flags []string, log io.Writer) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, moduleDir)
	stamp, err := sourceHash(src)
	if err != nil {
		return "", err
	}
	stamp += " " + strings.Join(env, " ") + " " + strings.Join(flags, " ")
	return cached(name, stamp, log, func(out string) *exec.Cmd {
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), pkg)...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), env...)
		return cmd
	})
}

// Command builds name with build(out) unless the cache holds a build with
// the same stamp (a program that is not Go: a C file, an image).
func Command(name, stamp string, log io.Writer, build func(out string) *exec.Cmd) (string, error) {
	return cached(name, stamp, log, build)
}

// GoInstall installs module@version's command pkg (a path inside the
// module) into the cache as name.
func GoInstall(name, pkgAtVersion string, log io.Writer) (string, error) {
	return cached(name, pkgAtVersion, log, func(out string) *exec.Cmd {
		return exec.Command("go", "install", pkgAtVersion)
	})
}

// cached returns DIR/name-VERSION/name, building it first when missing.
// VERSION is the stamp itself when it is a plain release (v1.15.11), else
// the first 16 hex digits of its SHA-256. A file lock keeps two processes
// (parallel test packages, two clones) from building at once; a build is
// renamed into place only when it succeeded.
func cached(name, stamp string, log io.Writer, build func(out string) *exec.Cmd) (string, error) {
	dir, unlock, err := lockBuild(name)
	if err != nil {
		return "", err
	}
	defer unlock()
	vdir := filepath.Join(dir, name+"-"+version(stamp))
	out := filepath.Join(vdir, name)
	if _, err := os.Stat(out); err == nil {
		why := damaged(out)
		if why == "" {
			return out, nil
		}
		// A damaged program is never run: it is built again (issue 52: a
		// truncated tpsd crashed as "tpsd init: segmentation fault").
		if log != nil {
			fmt.Fprintf(log, "cache: %s is damaged (%s): building it again\n", out, why)
		}
		if err := os.RemoveAll(vdir); err != nil {
			return "", err
		}
	}
	if log != nil {
		fmt.Fprintf(log, "building %s into %s (once; this takes a few minutes the first time)\n", name, vdir)
	}
	start := time.Now()
	tmp, err := os.MkdirTemp(dir, ".build-"+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := build(filepath.Join(tmp, name))
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// go install's output goes to GOBIN: the build's own folder.
	cmd.Env = append(cmd.Env, "GOBIN="+tmp)
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", name, err, tail(string(o), 20))
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 {
		return "", fmt.Errorf("build %s: the build left %d files, expected the program alone", name, len(entries))
	}
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(vdir, "STAMP"), []byte(stamp+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, entries[0].Name()), out); err != nil {
		return "", err
	}
	if err := writeSum(out); err != nil {
		return "", err
	}
	if log != nil {
		fmt.Fprintf(log, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	}
	return out, nil
}

// SumFile, beside a cached program, records its SHA-256, size and
// modification time when it was built.
const SumFile = "SHA256"

// writeSum records program's hash, size and time in its folder.
func writeSum(program string) error {
	h, size, err := hashFile(program)
	if err != nil {
		return err
	}
	st, err := os.Stat(program)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%s %d %d\n", h, size, st.ModTime().UnixNano())
	return os.WriteFile(filepath.Join(filepath.Dir(program), SumFile), []byte(line), 0o644)
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// damaged says why a cached program must not run ("" when it is as
// built): not executable, another size than recorded, or, when its time
// changed, another hash. Size and time cost a stat each use; the hash is
// read only when they differ. A program cached before sums were recorded
// gets its sum now.
func damaged(program string) string { return check(program, false) }

// check is damaged; full hashes the program even when its size and time
// are as recorded (cache verify).
func check(program string, full bool) string {
	st, err := os.Stat(program)
	if err != nil {
		return err.Error()
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Sprintf("not executable (mode %s)", st.Mode())
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(program), SumFile))
	if err != nil {
		writeSum(program) // cached before sums: trusted as found
		return ""
	}
	var sum string
	var size, mtime int64
	if _, err := fmt.Sscanf(string(b), "%s %d %d", &sum, &size, &mtime); err != nil {
		return "its " + SumFile + " record is unreadable"
	}
	if st.Size() != size {
		return fmt.Sprintf("%d bytes, %d when built", st.Size(), size)
	}
	if st.ModTime().UnixNano() == mtime && !full {
		return ""
	}
	h, _, err := hashFile(program)
	if err != nil {
		return err.Error()
	}
	if h != sum {
		return "its SHA-256 differs from the one recorded when it was built"
	}
	return ""
}

// FileSHA256 is the SHA-256 of the file at path, read whole, in hex.
func FileSHA256(path string) (string, error) {
	h, _, err := hashFile(path)
	return h, err
}

// SHA256 is path's SHA-256: the one recorded beside it when the cache built
// it and its size and time are as then, else read whole (a 100 MB node
// program costs a third of a second once).
func SHA256(path string) (string, error) {
	if st, err := os.Stat(path); err == nil {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), SumFile)); err == nil {
			var sum string
			var size, mtime int64
			if _, err := fmt.Sscanf(string(b), "%s %d %d", &sum, &size, &mtime); err == nil && st.Size() == size && st.ModTime().UnixNano() == mtime {
				return sum, nil
			}
		}
	}
	return FileSHA256(path)
}

// Damaged is damaged for `tpslab cache`: why the cached program must not
// run, or "".
func Damaged(program string) string { return damaged(program) }

// Verify says what is wrong with a cached program, hashing it whole.
func Verify(program string) string { return check(program, true) }

// version names a stamp in a folder name.
func version(stamp string) string {
	if i := strings.LastIndexByte(stamp, '@'); i >= 0 && !strings.ContainsAny(stamp[i+1:], " /") {
		return stamp[i+1:]
	}
	if len(stamp) < 24 && !strings.ContainsAny(stamp, " /") {
		return stamp
	}
	sum := sha256.Sum256([]byte(stamp))
	return hex.EncodeToString(sum[:8])
}

// sourceHash hashes a module's go.mod, go.sum and Go files.
func sourceHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			h.Write([]byte(rel))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// InstalledBefore is the prefix of a finished Installed build of name
// whose stamp begins with release ("taler-exchange 0.9.2"), newest first:
// a build the cache holds needs no source archive to be used again.
func InstalledBefore(name, release string) (string, bool) {
	dir, err := Dir()
	if err != nil {
		return "", false
	}
	dirs, _ := filepath.Glob(filepath.Join(dir, name+"-*"))
	var best string
	var bestAt time.Time
	for _, vdir := range dirs {
		st, err := os.Stat(filepath.Join(vdir, "STAMP"))
		if err != nil {
			continue
		}
		stamp, err := os.ReadFile(filepath.Join(vdir, "STAMP"))
		if err != nil || !strings.HasPrefix(string(stamp), release+" ") {
			continue
		}
		if best == "" || st.ModTime().After(bestAt) {
			best, bestAt = filepath.Join(vdir, name), st.ModTime()
		}
	}
	return best, best != ""
}

// Installed builds a program that installs a tree (bin, lib, share) into a
// prefix, once per stamp: build(prefix) must install into prefix, which is
// DIR/name-VERSION/name, its final place (autotools programs find their
// libraries and data by the prefix they were configured with). A build
// that failed half-way is removed and made again.
func Installed(name, stamp string, log io.Writer, build func(prefix string) *exec.Cmd) (string, error) {
	dir, unlock, err := lockBuild(name)
	if err != nil {
		return "", err
	}
	defer unlock()
	vdir := filepath.Join(dir, name+"-"+version(stamp))
	prefix := filepath.Join(vdir, name)
	if _, err := os.Stat(filepath.Join(vdir, "STAMP")); err == nil {
		return prefix, nil
	}
	if err := os.RemoveAll(vdir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return "", err
	}
	if log != nil {
		fmt.Fprintf(log, "building %s into %s (once; this takes a few minutes the first time)\n", name, vdir)
	}
	start := time.Now()
	if o, err := build(prefix).CombinedOutput(); err != nil {
		os.RemoveAll(vdir)
		return "", fmt.Errorf("build %s: %v\n%s", name, err, tail(string(o), 25))
	}
	// The stamp is written last: it marks a finished build.
	if err := os.WriteFile(filepath.Join(vdir, "STAMP"), []byte(stamp+"\n"), 0o644); err != nil {
		return "", err
	}
	if log != nil {
		fmt.Fprintf(log, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	}
	return prefix, nil
}

// SharedSource finds a source archive of a system no registry serves:
// $env, else archive in a shared/sources folder beside the tpslab tree or
// above it (../shared/sources for a checkout beside it), else the cache's
// copy, fetched once from $TPSLAB_SOURCES_URL and checked against its
// pinned SHA-256.
func SharedSource(archive, env string) (string, error) {
	if s := os.Getenv(env); s != "" {
		keepSource(archive, s)
		return s, nil
	}
	root, rootErr := Root()
	for d := root; rootErr == nil; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "sources", archive)
		if _, err := os.Stat(p); err == nil {
			keepSource(archive, p)
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	// A user's machine has no shared/sources: the archive is fetched once
	// into the cache from a mirror and checked against its pinned hash.
	sum, pinned := sourceSums[archive]
	if !pinned {
		return "", fmt.Errorf("%s: not in a shared/sources folder above the tpslab tree: set %s to its path", archive, env)
	}
	return fetchSource(archive, sum, env)
}

// keepSource copies an archive found outside the cache into it when it is
// the pinned one: its builds are keyed by its bytes, so tpslab run from
// outside the tree (no shared/sources above it) finds them again.
func keepSource(archive, path string) {
	sum, pinned := sourceSums[archive]
	dir, err := Dir()
	if !pinned || err != nil {
		return
	}
	dst := filepath.Join(dir, "sources", archive)
	if _, err := os.Stat(dst); err == nil {
		return
	}
	b, err := os.ReadFile(path)
	if h := sha256.Sum256(b); err != nil || hex.EncodeToString(h[:]) != sum {
		return
	}
	if os.MkdirAll(filepath.Dir(dst), 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".keep-"+archive+"-")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		_ = os.Rename(tmp.Name(), dst)
	}
}

// sourceSums are the SHA-256 of the source archives tpslab builds from
// (the exports described in shared/sources/README.md: tpslab's build
// scripts expect their layout, which the upstream release archives do not
// have).
var sourceSums = map[string]string{
	"taler-exchange-0.9.2.tar.gz": "e857324afd45454127fb3a90137cd77a2e5147586b4d2cd1f380bdfd80c27be8",
	"evmd-v0.6.x.tar.gz":          "de0b2b0c91584515e3cff724c3e996f07753df8c2374883fe7634a5027abc703",
	"factomd-v6.17.1-2.tar.gz":    "91aa4559c181281085cc7ebdb2c4fc5f31efeb3ae6439429bf3acc6bb30f1fab",
}

// sourceSizes are the archives' sizes: a fetch reads no byte more.
var sourceSizes = map[string]int64{
	"taler-exchange-0.9.2.tar.gz": 6327935,
	"evmd-v0.6.x.tar.gz":          318840,
	"factomd-v6.17.1-2.tar.gz":    2823980,
}

// Bounds of a fetch from the mirror: to connect and for its first answer,
// and the longest it may go without sending a byte.
var (
	fetchConnect = 10 * time.Second
	fetchIdle    = 30 * time.Second
)

// SourcesURLEnv names the mirror that serves the source archives (a folder
// of them over HTTP: ARCHIVE is fetched from $TPSLAB_SOURCES_URL/ARCHIVE).
const SourcesURLEnv = "TPSLAB_SOURCES_URL"

// fetchSource returns archive from the cache, fetching it first from the
// mirror when absent; its SHA-256 must be sum, or it is refused.
func fetchSource(archive, sum, env string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "sources", archive)
	if h, _, err := hashFile(dst); err == nil && h == sum {
		return dst, nil
	}
	base := os.Getenv(SourcesURLEnv)
	if base == "" {
		return "", fmt.Errorf("%s: not in a shared/sources folder above the tpslab tree nor in the cache: set %s to its path, or %s to a mirror serving it (sha256 %s)", archive, env, SourcesURLEnv, sum)
	}
	url := strings.TrimSuffix(base, "/") + "/" + archive
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".fetch-"+archive+"-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	// Ctrl-C and SIGTERM end the fetch; a mirror that does not answer, stops
	// sending, or sends more than the archive's size is refused.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: fetchConnect}).DialContext,
		TLSHandshakeTimeout:   fetchConnect,
		ResponseHeaderTimeout: fetchConnect,
		Proxy:                 http.ProxyFromEnvironment,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		tmp.Close()
		return "", fmt.Errorf("%s: %s=%s: %v", archive, SourcesURLEnv, base, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		tmp.Close()
		return "", fmt.Errorf("%s: fetching %s: %v (offline? set %s to a local copy)", archive, url, err, env)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tmp.Close()
		return "", fmt.Errorf("%s: fetching %s: %s (set %s to a local copy)", archive, url, resp.Status, env)
	}
	size, sized := sourceSizes[archive]
	if !sized {
		size = 64 << 20
	}
	idle := time.AfterFunc(fetchIdle, cancel)
	defer idle.Stop()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(&idleReader{r: resp.Body, t: idle}, size+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case ctx.Err() != nil && err != nil:
		return "", fmt.Errorf("%s: fetching %s: stopped (interrupted, or nothing came for %s)", archive, url, fetchIdle)
	case err != nil:
		return "", fmt.Errorf("%s: fetching %s: %v", archive, url, err)
	case n > size:
		return "", fmt.Errorf("%s: %s sent more than the archive's %d bytes: refused", archive, url, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return "", fmt.Errorf("%s: %s served an archive with sha256 %s, expected %s: refused", archive, url, got, sum)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return dst, nil
}

// ArchiveStamp is a stamp for a build from an archive by a script: both
// hashed, with the release named first.
func ArchiveStamp(release, archive, script string) (string, error) {
	f, err := os.ReadFile(archive)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(f, script...))
	return release + " " + hex.EncodeToString(sum[:]), nil
}

// lockBuild takes the cache's lock for building name, in this process and
// across processes (parallel test packages, two clones); it returns the
// cache's folder and the unlock.
func lockBuild(name string) (dir string, unlock func(), err error) {
	mu.Lock()
	if dir, err = Dir(); err != nil {
		mu.Unlock()
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		mu.Unlock()
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		mu.Unlock()
		return "", nil, err
	}
	return dir, func() { lock.Close(); mu.Unlock() }, nil
}

// idleReader pushes its timer back on every read that brings bytes: the
// fetch ends only when the mirror goes quiet.
type idleReader struct {
	r io.Reader
	t *time.Timer
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 {
		i.t.Reset(fetchIdle)
	}
	return n, err
}
