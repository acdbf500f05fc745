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
	from *[2]atomic.Int64 // the highest serial ids before the load (deposits, withdrawals), plus one (0: not read)
	down func(error)      // told once when the database stops answering
	lost bool
}

// highestRows are the highest deposit and withdrawal (reserves_out)
// serial ids in the exchange's tables.
func highestRows(ctx context.Context, url string) (deposit, withdraw int64, err error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, 0, fmt.Errorf("the exchange's database: %w", err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, `SELECT (SELECT coalesce(max(deposit_serial_id), 0) FROM exchange.deposits),
		(SELECT coalesce(max(reserve_out_serial_id), 0) FROM exchange.reserves_out)`).Scan(&deposit, &withdraw); err != nil {
		return 0, 0, fmt.Errorf("the exchange's deposits and withdrawals: %w", err)
	}
	return deposit, withdraw, nil
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
	// tables' ends now (a payment that committed before is then missed).
	d, wd := c.from[0].Load()-1, c.from[1].Load()-1
	if d < 0 || wd < 0 {
		var err error
		if d, wd, err = highestRows(ctx, c.url); err != nil {
			return err
		}
	}
	w := [2]watermark{{at: d}, {at: wd}}
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

// poll reads new deposit and withdrawal rows over one connection until
// ctx ends or the database fails.
func (c *confirmer) poll(ctx context.Context, w *[2]watermark, ev sut.Events) error {
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
		// One statement for both tables: withdrawals carry an empty
		// contract and their blinded coin's hash.
		rows, err := conn.Query(ctx, `SELECT 0, deposit_serial_id, coin_pub, h_contract_terms FROM exchange.deposits
			WHERE deposit_serial_id > $1
			UNION ALL SELECT 1, reserve_out_serial_id, h_blind_ev, ''::bytea FROM exchange.reserves_out
			WHERE reserve_out_serial_id > $2`, w[0].at, w[1].at)
		if err != nil {
			return err
		}
		now := time.Now()
		var table int
		var serial int64
		var key, contract []byte
		_, err = pgx.ForEachRow(rows, []any{&table, &serial, &key, &contract}, func() error {
			if !w[table].add(serial) {
				return nil
			}
			if table == 0 {
				ev.Resolved(DepositID(key, contract), true, "", now)
			} else {
				ev.Resolved(WithdrawID(key), true, "", now)
			}
			return nil
		})
		if err != nil {
			return err
		}
		w[0].advance(now)
		w[1].advance(now)
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
