package runner_test

import (
	"context"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/nettest"
)

// One 4-validator network serves the tests that only need a live chain:
// each takes its own range of accounts (workload.senders_offset) and counts
// by that sender set over its run's heights. Tests that break a network
// (faults, halts, crashes), need other links or a genesis of their own
// start their own.
var shared = nettest.Shared{Slice: 300, Slices: 16}

// sharedGenesis funds every range of the shared network, with pre-loaded
// state beyond them (net up --state) that payments are drawn to as well.
var sharedGenesis = chain.Genesis{Seed: "shared", Accounts: uint64(shared.Slice * shared.Slices), Balance: 1_000_000_000, State: 50_000}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close(downFresh)
	os.Exit(code)
}

// sharedNet returns the package's network and the first account of a
// range of shared.Slice that is this caller's alone.
func sharedNet(t *testing.T) (*testnet.Net, int) {
	t.Helper()
	return shared.Get(t, func(dir string) (*testnet.Net, error) {
		return chainnet.Up(context.Background(), chainnet.Options{Validators: 4, Home: filepath.Join(dir, "net"),
			ChainID: "shared-chain", Genesis: sharedGenesis, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	})
}

// sendersFrom is the address set of count accounts of g from the off-th.
func sendersFrom(g chain.Genesis, off, count int) map[chain.Address]bool {
	m := map[chain.Address]bool{}
	for _, k := range chain.DeriveKeys(g.Seed, off+count)[off:] {
		m[chain.AddressOf(k[32:])] = true
	}
	return m
}
