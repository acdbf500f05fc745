package cosmos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/nettest"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// One tpsd chain serves every test that only needs a live chain: each
// takes its own range of wallets (workload.senders_offset) and counts by
// that sender set over its run's heights. Tests that break a chain, fund
// wallets or need four validators or other settings start their own.
var shared = nettest.Shared{Slice: 300, Slices: 16}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close(func(n *testnet.Net) { n.Down() })
	os.Exit(code)
}

// sharedChain returns the package's one-validator chain and the first
// wallet of a range of shared.Slice that is this caller's alone.
func sharedChain(t *testing.T) (*testnet.Net, int) {
	t.Helper()
	return shared.Get(t, func(dir string) (*testnet.Net, error) {
		bin, err := sdknet.Tpsd(testLog{t})
		if err != nil {
			return nil, err
		}
		// The chain outlives the test that starts it: its log goes to a file.
		log, err := os.Create(filepath.Join(dir, "up.log"))
		if err != nil {
			return nil, err
		}
		n, err := sdknet.Up(context.Background(), sdknet.Options{Kind: "cosmos", Binary: bin, Validators: 1, Home: filepath.Join(dir, "net"),
			ChainID: "cosmos-it", WalletSeed: "it", Wallets: shared.Slice * shared.Slices, Balance: 1_000_000_000, Settings: testnet.DefaultSettings(), Log: log})
		if err != nil {
			b, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("%v\n%s", err, b)
		}
		return n, nil
	})
}

// sendersFrom is the address set of count wallets from the off-th.
func sendersFrom(n *testnet.Net, off, count int) map[string]bool {
	m := map[string]bool{}
	ws := cosmos.DeriveWallets(sdknet.Of(n).WalletSeed, off+count, sdknet.Of(n).Prefix)
	for _, w := range ws[off:] {
		m[w.Address] = true
	}
	if len(m) != count {
		panic(fmt.Sprintf("derived %d wallets, want %d", len(m), count))
	}
	return m
}
