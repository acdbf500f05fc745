package taler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// WithdrawStats are the wallets' set-up, measured: reserves funded and
// credited, coins withdrawn, and each withdrawal's latency.
type WithdrawStats struct {
	Reserves, Coins int
	Credited        time.Duration // funding until every reserve was credited
	Took            time.Duration // the withdrawals, all reserves at once
	Latency         *hdrhistogram.Histogram
}

func (s WithdrawStats) String() string {
	return fmt.Sprintf("taler: %d reserves funded and credited in %.1f s; %d coins withdrawn in %.1f s (%.0f withdrawals/s), latency p50 %.1f ms, p99 %.1f ms",
		s.Reserves, s.Credited.Seconds(), s.Coins, s.Took.Seconds(), float64(s.Coins)/max(s.Took.Seconds(), 1e-3),
		float64(s.Latency.ValueAtQuantile(50))/1000, float64(s.Latency.ValueAtQuantile(99))/1000)
}

// WithdrawCoins funds reserves through bank and withdraws n coins of d
// from them, the reserves in parallel (a reserve's withdrawals queue on
// its row in the exchange's database, so each reserve withdraws in turn).
func WithdrawCoins(ctx context.Context, t *Target, bank Bank, d *Denom, n, reserves int) ([]*Coin, WithdrawStats, error) {
	st := WithdrawStats{Reserves: reserves, Coins: n, Latency: hdrhistogram.New(1, 60_000_000, 3)}
	per := func(r int) int { return n/reserves + btoi(r < n%reserves) }
	rs := make([]Reserve, reserves)
	start := time.Now()
	for r := range rs {
		rs[r] = NewReserve()
		k := per(r)
		amount := FromUnits(d.Value.Currency, uint64(k)*(d.Value.Units()+d.FeeWithdraw.Units()))
		if err := bank.Fund(ctx, t.cl, rs[r], amount); err != nil {
			return nil, st, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for r := range rs {
		amount := FromUnits(d.Value.Currency, uint64(per(r))*(d.Value.Units()+d.FeeWithdraw.Units()))
		if err := WaitReserve(wctx, t.cl, t.pool.URLs[r%len(t.pool.URLs)], rs[r], amount); err != nil {
			return nil, st, err
		}
	}
	st.Credited = time.Since(start)
	coins := make([]*Coin, 0, n)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	start = time.Now()
	for r := range rs {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			base := t.pool.URLs[r%len(t.pool.URLs)]
			for k := 0; k < per(r) && ctx.Err() == nil; k++ {
				t0 := time.Now()
				c, err := Withdraw(ctx, t.cl, base, rs[r], d)
				mu.Lock()
				if err != nil {
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				_ = st.Latency.RecordValue(time.Since(t0).Microseconds())
				coins = append(coins, c)
				mu.Unlock()
			}
		}(r)
	}
	wg.Wait()
	st.Took = time.Since(start)
	if first != nil {
		return nil, st, first
	}
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	return coins, st, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
