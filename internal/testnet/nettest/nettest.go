// Package nettest shares one running network among a test package's tests,
// as cometbft's e2e tests share one testnet: each test takes a range of
// accounts of its own and counts by that sender set over its run's heights.
package nettest

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tpslab/tpslab/internal/testnet"
)

// Shared is a package's network, started on first use and stopped by
// Close (from TestMain, after m.Run).
type Shared struct {
	Slice, Slices int // accounts per caller, and how many callers it funds

	once sync.Once
	dir  string
	net  *testnet.Net
	err  error
	next atomic.Int64
}

// Get returns the network, started on first use by start in a folder of
// its own that outlives the test starting it, and the first account of a
// range of Slice that is the caller's alone.
func (s *Shared) Get(t testing.TB, start func(dir string) (*testnet.Net, error)) (*testnet.Net, int) {
	t.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "tpslab-shared-"); s.err == nil {
			s.net, s.err = start(s.dir)
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	i := int(s.next.Add(1) - 1)
	if i >= s.Slices {
		t.Fatalf("the shared network funds %d ranges of %d accounts, all taken: raise Slices", s.Slices, s.Slice)
	}
	return s.net, i * s.Slice
}

// Close stops the network with down and removes its folder.
func (s *Shared) Close(down func(*testnet.Net)) {
	if s.net != nil {
		down(s.net)
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
