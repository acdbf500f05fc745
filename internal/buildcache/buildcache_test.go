package buildcache

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A cached program that was truncated or lost its execute bit is never
// run: the next use builds it again and says why (issue 52: a truncated
// tpsd crashed as "segmentation fault" and `cache build` called it ready).
func TestDamagedProgramIsBuiltAgain(t *testing.T) {
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	builds := 0
	build := func(out string) *exec.Cmd {
		builds++
		return exec.Command("cp", "/bin/true", out) // a real program, built by a command
	}
	var log strings.Builder
	prog, err := Command("prog", "v1", &log, build)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(prog).Run(); err != nil {
		t.Fatalf("the cached program does not run: %v", err)
	}
	if _, err := Command("prog", "v1", &log, build); err != nil || builds != 1 {
		t.Fatalf("an intact program was built again (%d builds): %v", builds, err)
	}
	for _, damage := range []struct {
		name string
		do   func() error
		want string
	}{
		{"truncated", func() error { return os.Truncate(prog, 1000) }, "bytes"},
		{"not executable", func() error { return os.Chmod(prog, 0o644) }, "not executable"},
		{"same size, other bytes", func() error {
			b, err := os.ReadFile(prog)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return os.WriteFile(prog, b, 0o755)
		}, "SHA-256"},
	} {
		if err := damage.do(); err != nil {
			t.Fatal(err)
		}
		if why := Damaged(prog); !strings.Contains(why, damage.want) {
			t.Errorf("%s: damaged %q, want it to say %q", damage.name, why, damage.want)
		}
		before := builds
		log.Reset()
		p, err := Command("prog", "v1", &log, build)
		if err != nil || builds != before+1 || !strings.Contains(log.String(), "is damaged") {
			t.Errorf("%s: %d builds after %d, log %q, err %v", damage.name, builds, before, log.String(), err)
		}
		if err := exec.Command(p).Run(); err != nil {
			t.Errorf("%s: the rebuilt program does not run: %v", damage.name, err)
		}
	}
	// Other bytes with the recorded size and time pass each use's cheap
	// check; Verify hashes the program whole and finds them.
	st, _ := os.Stat(prog)
	b, _ := os.ReadFile(prog)
	b[len(b)/3] ^= 0xff
	os.WriteFile(prog, b, 0o755)
	os.Chtimes(prog, st.ModTime(), st.ModTime())
	if why := Damaged(prog); why != "" {
		t.Errorf("the cheap check hashed the program: %q", why)
	}
	if why := Verify(prog); !strings.Contains(why, "SHA-256") {
		t.Errorf("verify: %q, expected the SHA-256 named", why)
	}
}

// A machine without shared/sources fetches a source archive once from a
// mirror ($TPSLAB_SOURCES_URL) into the cache, checked against its pinned
// SHA-256; a mirror serving other bytes is refused, and without a mirror
// the one line names what to set (issue 52).
func TestSourceFetchedFromAMirror(t *testing.T) {
	shared := ""
	for d, _ := os.Getwd(); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "shared", "sources", "evmd-v0.6.x.tar.gz")); err == nil {
			shared = filepath.Join(d, "shared", "sources")
			break
		}
	}
	if shared == "" {
		t.Skip("no shared/sources above the tree to serve")
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(shared))) // 127.0.0.1
	defer srv.Close()
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	t.Setenv("TPSLAB_ROOT", t.TempDir()) // a tree with no shared/sources above it
	// The user's own settings, as docs/evm.md and docs/taler.md tell them
	// to set, must not answer for the mirror.
	for _, env := range []string{"TPSLAB_EVMD_SOURCE", "TPSLAB_TALER_SOURCE", "TPSLAB_FACTOMD_SOURCE", SourcesURLEnv} {
		t.Setenv(env, "")
	}
	if _, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE"); err == nil || !strings.Contains(err.Error(), SourcesURLEnv) || strings.Contains(err.Error(), "\n") {
		t.Errorf("no mirror: %v, want one line naming %s", err, SourcesURLEnv)
	}
	t.Setenv(SourcesURLEnv, srv.URL)
	p, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE")
	if err != nil {
		t.Fatal(err)
	}
	if h, _, _ := hashFile(p); h != sourceSums["evmd-v0.6.x.tar.gz"] {
		t.Errorf("fetched %s with sha256 %s", p, h)
	}
	srv.Close() // the cache's copy serves the next use
	if q, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE"); err != nil || q != p {
		t.Errorf("second use: %q, %v", q, err)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("not the archive")) }))
	defer bad.Close()
	t.Setenv(SourcesURLEnv, bad.URL)
	if _, err := SharedSource("taler-exchange-0.9.2.tar.gz", "TPSLAB_TALER_SOURCE"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a mirror serving other bytes: %v", err)
	}
}

// An archive used from shared/sources (or $env) is kept in the cache, so
// tpslab run outside the tree finds the same archive, and so the same
// build, without a mirror (issue 64: net up --kind factom outside the
// tree failed although the cache held factomd).
func TestSourceKeptForUseOutsideTheTree(t *testing.T) {
	src := ""
	for d, _ := os.Getwd(); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if p := filepath.Join(d, "shared", "sources", "evmd-v0.6.x.tar.gz"); fileExists(p) {
			src = p
			break
		}
	}
	if src == "" {
		t.Skip("no shared/sources above the tree")
	}
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	t.Setenv(SourcesURLEnv, "")
	t.Setenv("TPSLAB_EVMD_SOURCE", "")
	in, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE")
	if err != nil || in != src {
		t.Fatalf("inside the tree: %q, %v; want %s", in, err, src)
	}
	t.Setenv("TPSLAB_ROOT", t.TempDir()) // now outside it
	out, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE")
	if err != nil || out == src {
		t.Fatalf("outside the tree: %q, %v; want the cache's copy", out, err)
	}
	a, _ := ArchiveStamp("evmd", in, "script")
	b, _ := ArchiveStamp("evmd", out, "script")
	if a != b {
		t.Errorf("stamps differ: %s inside, %s outside", a, b)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A tree installed from an archive is found again by its release without
// the archive (issue 54: a cached Taler exchange still asked for its
// source).
func TestInstalledBeforeNeedsNoArchive(t *testing.T) {
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	if _, ok := InstalledBefore("tree", "tree 1.0"); ok {
		t.Fatal("found a build in an empty cache")
	}
	prefix, err := Installed("tree", "tree 1.0 abc123", nil, func(prefix string) *exec.Cmd {
		return exec.Command("mkdir", "-p", filepath.Join(prefix, "bin"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := InstalledBefore("tree", "tree 1.0"); !ok || got != prefix {
		t.Errorf("InstalledBefore: %q %v, want %q", got, ok, prefix)
	}
	if _, ok := InstalledBefore("tree", "tree 2.0"); ok {
		t.Error("another release's build was taken")
	}
}

// A mirror that stops sending, or sends without end, is refused within
// its bounds: the idle time, and the archive's pinned size.
func TestSourceFetchBounded(t *testing.T) {
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	t.Setenv("TPSLAB_ROOT", t.TempDir())
	t.Setenv("TPSLAB_EVMD_SOURCE", "")
	defer func(d time.Duration) { fetchIdle = d }(fetchIdle)
	fetchIdle = 300 * time.Millisecond
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("some"))
		w.(http.Flusher).Flush()
		select { // then nothing, until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	t.Setenv(SourcesURLEnv, hang.URL)
	if _, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE"); err == nil || !strings.Contains(err.Error(), "nothing came for") {
		t.Errorf("a mirror gone quiet: %v", err)
	}
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	t.Setenv(SourcesURLEnv, endless.URL)
	_, err := SharedSource("evmd-v0.6.x.tar.gz", "TPSLAB_EVMD_SOURCE")
	if err == nil || !strings.Contains(err.Error(), "sent more than the archive's 318840 bytes") {
		t.Errorf("a mirror without end: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(os.Getenv("TPSLAB_CACHE"), "sources", "*"))
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
