package sdknet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/testnet"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Log(string(b)); return len(b), nil }

func TestUpCheckDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Cosmos SDK chain")
	}
	bin, err := Tpsd(testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	for _, vals := range []int{1, 4} {
		home := filepath.Join(t.TempDir(), "net")
		start := time.Now()
		n, err := Up(context.Background(), Options{Binary: bin, Validators: vals, Home: home, ChainID: "sdk-test", WalletSeed: "t",
			Wallets: 500, Balance: 1_000_000_000, Settings: testnet.DefaultSettings(), Log: testLog{t}})
		if err != nil {
			t.Fatalf("%d validators: %v", vals, err)
		}
		t.Logf("%d validators committing after %s", vals, time.Since(start))
		audits, problems := Check(context.Background(), n)
		if len(problems) > 0 || len(audits) != vals {
			t.Errorf("check: %v %v", problems, audits)
		}
		if _, err := os.Stat(Of(n).FunderKey); err != nil {
			t.Error(err)
		}
		if err := n.Down(); err != nil {
			t.Fatal(err)
		}
		if n.Running() != 0 {
			t.Fatal("nodes left running")
		}
	}
}
