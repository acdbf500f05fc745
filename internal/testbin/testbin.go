// Package testbin gives integration tests the programs they start: the
// tpslab binary (normal and slowverify) and CometBFT's own. test.sh builds
// tpslab once for every package and names the builds in TPSLAB_TEST_BIN and
// TPSLAB_TEST_BIN_SLOWVERIFY; a lone `go test` builds them into the cache
// (internal/buildcache), never into a temporary folder left behind.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tpslab/tpslab/internal/buildcache"
)

// binary is one program built on first use.
type binary struct {
	once sync.Once
	env  string // a prebuilt program's path, when set
	pkg  string
	name string
	tags string // build tags, if any
	path string
	err  error
}

func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func (b *binary) get(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if p := os.Getenv(b.env); p != "" {
			if _, err := os.Stat(p); err != nil {
				b.err = err
			}
			b.path = p
			return
		}
		dir, err := buildcache.Dir()
		if err != nil {
			b.err = err
			return
		}
		// go build relinks only when the sources changed.
		b.path = filepath.Join(dir, "testbin", b.name)
		args := []string{"build", "-o", b.path}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Dir = root()
		// Packages run in parallel: one links while the others wait.
		os.MkdirAll(filepath.Dir(b.path), 0o755)
		if lock, err := os.OpenFile(b.path+".lock", os.O_CREATE|os.O_RDWR, 0o644); err == nil {
			defer lock.Close()
			syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{name: b.name, out: string(out), err: err}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

var (
	tpslab = &binary{env: "TPSLAB_TEST_BIN", pkg: "./cmd/tpslab", name: "tpslab"}
	slow   = &binary{env: "TPSLAB_TEST_BIN_SLOWVERIFY", pkg: "./cmd/tpslab", name: "tpslab-slowverify", tags: "slowverify"}

	cometOnce sync.Once
	cometPath string
	cometErr  error
)

// SlowVerify builds tpslab with the slowverify tag: a node that checks every
// signature 101 times, a deliberately worse build for ab.
func SlowVerify(t testing.TB) string { return slow.get(t) }

// Path returns the path of the tpslab binary built from this tree.
func Path(t testing.TB) string { return tpslab.get(t) }

// CometBFT returns the cometbft binary of the version in go.mod (its
// built-in kvstore application is a second system under test), installed
// once into the cache.
func CometBFT(t testing.TB) string {
	t.Helper()
	cometOnce.Do(func() {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/cometbft/cometbft")
		cmd.Dir = root()
		out, err := cmd.Output()
		if err != nil {
			cometErr = err
			return
		}
		cometPath, cometErr = buildcache.GoInstall("cometbft", "github.com/cometbft/cometbft/cmd/cometbft@"+strings.TrimSpace(string(out)), nil)
	})
	if cometErr != nil {
		t.Fatal(cometErr)
	}
	return cometPath
}

type buildError struct {
	name, out string
	err       error
}

func (b *buildError) Error() string { return "build " + b.name + ": " + b.err.Error() + "\n" + b.out }
