// Package testbin builds binaries once per test process, for integration
// tests that start real validator processes.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// binary is one program built on first use.
type binary struct {
	once sync.Once
	pkg  string
	name string
	tags string // build tags, if any
	path string
	err  error
}

func (b *binary) get(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", b.name+"-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, b.name)
		args := []string{"build", "-o", b.path}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Dir = root
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
	tpslab   = &binary{pkg: "./cmd/tpslab", name: "tpslab"}
	cometbft = &binary{pkg: "github.com/cometbft/cometbft/cmd/cometbft", name: "cometbft"}
	slow     = &binary{pkg: "./cmd/tpslab", name: "tpslab-slowverify", tags: "slowverify"}
)

// SlowVerify builds tpslab with the slowverify tag: a node that checks every
// signature 101 times, a deliberately worse build for ab.
func SlowVerify(t testing.TB) string { return slow.get(t) }

// Path returns the path of a freshly built tpslab binary.
func Path(t testing.TB) string { return tpslab.get(t) }

// CometBFT builds the cometbft binary (the version in go.mod), whose
// built-in kvstore application is a second system under test.
func CometBFT(t testing.TB) string { return cometbft.get(t) }

type buildError struct {
	name, out string
	err       error
}

func (b *buildError) Error() string { return "build " + b.name + ": " + b.err.Error() + "\n" + b.out }
