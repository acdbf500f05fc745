package cosmos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tpslab/tpslab/internal/sut/cosmos"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// One tpsd chain serves every test that only needs a live chain: each
// takes its own range of wallets (workload.senders_offset) and counts by
// that sender set over its run's heights, as cometbft's e2e tests share one
// testnet. Tests that break a chain, fund wallets or need four validators
// or other settings start their own.
var shared struct {
	once sync.Once
	dir  string
	net  *testnet.Net
	err  error
	next atomic.Int64
}

// sliceSize is the number of wallets each test gets on the shared chain.
const sliceSize = 300

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.net != nil {
		shared.net.Down()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedChain returns the package's one-validator chain, started on first
// use, and the first wallet of a range of sliceSize that is this caller's
// alone.
func sharedChain(t *testing.T) (*testnet.Net, int) {
	t.Helper()
	shared.once.Do(func() {
		bin, err := sdknet.Tpsd(testLog{t})
		if err != nil {
			shared.err = err
			return
		}
		if shared.dir, shared.err = os.MkdirTemp("", "tpslab-cosmos-shared-"); shared.err != nil {
			return
		}
		// The chain outlives the test that starts it: its log goes to a file.
		log, err := os.Create(filepath.Join(shared.dir, "up.log"))
		if err != nil {
			shared.err = err
			return
		}
		shared.net, shared.err = sdknet.Up(context.Background(), sdknet.Options{Kind: "cosmos", Binary: bin, Validators: 1, Home: filepath.Join(shared.dir, "net"),
			ChainID: "cosmos-it", WalletSeed: "it", Wallets: 16 * sliceSize, Balance: 1_000_000_000, Settings: testnet.DefaultSettings(), Log: log})
		if shared.err != nil {
			b, _ := os.ReadFile(log.Name())
			shared.err = fmt.Errorf("%v\n%s", shared.err, b)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	off := int(shared.next.Add(1)-1) * sliceSize
	if off+sliceSize > 16*sliceSize {
		t.Fatal("the shared chain has no wallets left: raise its Wallets")
	}
	return shared.net, off
}

// sendersFrom is the address set of count wallets from the off-th.
func sendersFrom(n *testnet.Net, off, count int) map[string]bool {
	m := map[string]bool{}
	ws := cosmos.DeriveWallets(n.Cosmos.WalletSeed, off+count, n.Cosmos.Prefix)
	for _, w := range ws[off:] {
		m[w.Address] = true
	}
	if len(m) != count {
		panic(fmt.Sprintf("derived %d wallets, want %d", len(m), count))
	}
	return m
}
