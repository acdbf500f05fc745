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
	down func(error)   // told once when the database stops answering
	lost bool
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

// OnOutage: Run reads on through the database's outage (sut.Resilient).
func (c *confirmer) OnOutage(down func(error)) { c.down = down }

// Run polls the deposits table every 20 ms until ctx ends. When the
// database stops answering it says so once (OnOutage) and reconnects every
// retryEvery: deposits that committed before the database stopped are
// read when it answers again (issue 52: they were counted expired).
func (c *confirmer) Run(ctx context.Context, _ int64, ev sut.Events) error {
	// Rows from before the load are not ours; without a probe first, the
	// table's end now (a deposit that committed before is then missed).
	start := c.from.Load() - 1
	if start < 0 {
		var err error
		if start, err = highestDeposit(ctx, c.url); err != nil {
			return err
		}
	}
	w := watermark{at: start}
	for {
		err := c.poll(ctx, &w, ev)
		if ctx.Err() != nil {
			return nil
		}
		if c.down == nil {
			return err
		}
		if !c.lost {
			c.lost = true
			c.down(fmt.Errorf("the exchange's database stopped answering: %w", err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryEvery):
		}
	}
}

// retryEvery is how often a lost database is dialled again.
const retryEvery = 250 * time.Millisecond

// poll reads new deposit rows over one connection until ctx ends or the
// database fails.
func (c *confirmer) poll(ctx context.Context, w *watermark, ev sut.Events) error {
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		rows, err := conn.Query(ctx, `SELECT deposit_serial_id, coin_pub, h_contract_terms FROM exchange.deposits
			WHERE deposit_serial_id > $1 ORDER BY deposit_serial_id`, w.at)
		if err != nil {
			return err
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
		if err != nil {
			return err
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
