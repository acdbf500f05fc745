// Package testbin builds the tpslab binary once per test process, for
// integration tests that start real validator processes.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
)

// Path returns the path of a freshly built tpslab binary.
func Path(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, e := os.MkdirTemp("", "tpslab-bin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "tpslab")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/tpslab")
		cmd.Dir = root
		if out, e := cmd.CombinedOutput(); e != nil {
			err = &buildError{out: string(out), err: e}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

type buildError struct {
	out string
	err error
}

func (b *buildError) Error() string { return "build tpslab: " + b.err.Error() + "\n" + b.out }

var (
	cmtOnce sync.Once
	cmtPath string
	cmtErr  error
)

// CometBFT builds the cometbft binary (the version in go.mod), whose
// built-in kvstore application is a second system under test.
func CometBFT(t testing.TB) string {
	t.Helper()
	cmtOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, e := os.MkdirTemp("", "cometbft-bin-")
		if e != nil {
			cmtErr = e
			return
		}
		cmtPath = filepath.Join(dir, "cometbft")
		cmd := exec.Command("go", "build", "-o", cmtPath, "github.com/cometbft/cometbft/cmd/cometbft")
		cmd.Dir = root
		if out, e := cmd.CombinedOutput(); e != nil {
			cmtErr = &buildError{out: string(out), err: e}
		}
	})
	if cmtErr != nil {
		t.Fatal(cmtErr)
	}
	return cmtPath
}
