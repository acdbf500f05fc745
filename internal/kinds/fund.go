package kinds

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/tpslab/tpslab/internal/scenario"
)

// FundProgress prints a funding's progress to log every tenth of the way.
func FundProgress(log io.Writer, start time.Time) func(done, total int) {
	next := 0
	return func(done, total int) {
		if done >= next || done == total {
			fmt.Fprintf(log, "funding: %d of %d wallets (%.0f%%) in %.1f s\n", done, total, 100*float64(done)/float64(total), time.Since(start).Seconds())
			next = done + max(total/10, 1)
		}
	}
}

// GoMemoryMB is the memory tpslab's Go runtime took from the system so far
// (it never gives back the peak's address space): a funding's cost.
func GoMemoryMB() float64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}

// LedgerWallets says whether a built-in ledger run pays from test wallets
// funded before the load (workload.wallet_seed other than the genesis
// seed) rather than from genesis accounts, and how many: workload.accounts,
// or as many as the senders need.
func LedgerWallets(sc *scenario.Scenario, genesisSeed string) (seed string, n int, ok bool) {
	w := sc.Workload
	if w.Kind == "raw" || w.WalletSeed == "" || w.WalletSeed == genesisSeed {
		return "", 0, false
	}
	n = int(w.Accounts)
	if n == 0 {
		n = w.SendersOffset + w.Senders
	}
	return w.WalletSeed, n, true
}
