package taler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/sut"
)

// confirmer finds deposits in the exchange's database: a deposit counts
// as committed when its row (coin, contract) is in exchange.deposits, not
// when the exchange answered 200 (an idempotent replay is answered 200
// too). Rows are read by serial id; ids are handed out before their
// transactions commit, so each poll reads again from a little before the
// last one seen and skips the rows it reported.
type confirmer struct {
	url  string
	from *atomic.Int64 // the highest serial id before the load, plus one (0: not read)
}

// highestDeposit is the highest deposit serial id in the table.
func highestDeposit(ctx context.Context, url string) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("the exchange's database: %w", err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(deposit_serial_id), 0) FROM exchange.deposits`).Scan(&n); err != nil {
		return 0, fmt.Errorf("the exchange's deposits: %w", err)
	}
	return n, nil
}

// lookback is how many serial ids before the highest seen each poll reads
// again: more than the deposits in flight at once.
const lookback = 20_000

// Watch: every row is read; the tracker ignores rows not its own.
func (c *confirmer) Watch(sut.TxID) {}

// Run polls the deposits table every 20 ms until ctx ends.
func (c *confirmer) Run(ctx context.Context, _ int64, ev sut.Events) error {
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return fmt.Errorf("the exchange's database: %w", err)
	}
	defer conn.Close(context.Background())
	// Rows from before the load are not ours; without a probe first, the
	// table's end now (a deposit that committed before is then missed).
	start := c.from.Load() - 1
	if start < 0 {
		if start, err = highestDeposit(ctx, c.url); err != nil {
			return err
		}
	}
	seen := map[int64]bool{}
	high := start
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		rows, err := conn.Query(ctx, `SELECT deposit_serial_id, coin_pub, h_contract_terms FROM exchange.deposits
			WHERE deposit_serial_id > $1 ORDER BY deposit_serial_id`, max(start, high-lookback))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the exchange's deposits: %w", err)
		}
		now := time.Now()
		var serial int64
		var coin, contract []byte
		_, err = pgx.ForEachRow(rows, []any{&serial, &coin, &contract}, func() error {
			if !seen[serial] {
				seen[serial] = true
				ev.Resolved(DepositID(coin, contract), true, "", now)
			}
			high = max(high, serial)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("the exchange's deposits: %w", err)
		}
		for s := range seen {
			if s <= high-lookback {
				delete(seen, s)
			}
		}
	}
}
