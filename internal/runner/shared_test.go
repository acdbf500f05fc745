package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// One 4-validator network serves the tests that only need a live chain:
// each takes its own range of accounts (workload.senders_offset) and counts
// by that sender set over its run's heights. Tests that break a network
// (faults, halts, crashes), need other links or a genesis of their own
// start their own.
var shared struct {
	once sync.Once
	dir  string
	net  *testnet.Net
	err  error
	next atomic.Int64
}

// sharedGenesis funds 16 ranges of sliceSize accounts.
var sharedGenesis = chain.Genesis{Seed: "shared", Accounts: 16 * sliceSize, Balance: 1_000_000_000}

const sliceSize = 300

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.net != nil {
		downFresh(shared.net)
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedNet returns the package's network, started on first use, and the
// first account of a range of sliceSize that is this caller's alone.
func sharedNet(t *testing.T) (*testnet.Net, int) {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "tpslab-runner-shared-"); shared.err != nil {
			return
		}
		shared.net, shared.err = testnet.Up(context.Background(), testnet.Options{Validators: 4, Home: filepath.Join(shared.dir, "net"),
			ChainID: "shared-chain", Genesis: sharedGenesis, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	off := int(shared.next.Add(1)-1) * sliceSize
	if uint64(off+sliceSize) > sharedGenesis.Accounts {
		t.Fatal("the shared network has no accounts left: raise sharedGenesis.Accounts")
	}
	return shared.net, off
}

// sendersFrom is the address set of count accounts of g from the off-th.
func sendersFrom(g chain.Genesis, off, count int) map[chain.Address]bool {
	m := map[chain.Address]bool{}
	for _, k := range chain.DeriveKeys(g.Seed, off+count)[off:] {
		m[chain.AddressOf(k[32:])] = true
	}
	return m
}
