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
// too). Rows are read by serial id above a watermark below which every id
// was read; ids are handed out before their transactions commit, so a
// missing id holds the watermark until it appears, or for gapWait (an
// insert that rolled back leaves its id unused for good). Reading only
// above the watermark keeps each poll to the rows in flight: re-reading a
// fixed window made the confirmer the database's costliest statement.
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

// gapWait is how long a missing serial id holds the watermark: far longer
// than a deposit's transaction takes to commit.
const gapWait = 3 * time.Second

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
	var w watermark
	w.at = start
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		rows, err := conn.Query(ctx, `SELECT deposit_serial_id, coin_pub, h_contract_terms FROM exchange.deposits
			WHERE deposit_serial_id > $1 ORDER BY deposit_serial_id`, w.at)
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
			if w.add(serial) {
				ev.Resolved(DepositID(coin, contract), true, "", now)
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("the exchange's deposits: %w", err)
		}
		w.advance(now)
	}
}

// watermark is the highest serial id at and below which every id was read
// (or given up on), and the ids read above it.
type watermark struct {
	at      int64
	above   map[int64]bool
	missing time.Time // since when id at+1 has been missing while higher ones were read
}

// add records id; false when it was read before.
func (w *watermark) add(id int64) bool {
	if id <= w.at || w.above[id] {
		return false
	}
	if w.above == nil {
		w.above = map[int64]bool{}
	}
	w.above[id] = true
	return true
}

// advance moves the watermark over the ids read, and over an id missing
// for longer than gapWait.
func (w *watermark) advance(now time.Time) {
	for len(w.above) > 0 {
		if w.above[w.at+1] {
			delete(w.above, w.at+1)
			w.at++
			w.missing = time.Time{}
			continue
		}
		if w.missing.IsZero() {
			w.missing = now
		}
		if now.Sub(w.missing) < gapWait {
			return
		}
		w.at++ // an id no transaction will commit
		w.missing = time.Time{}
	}
}
