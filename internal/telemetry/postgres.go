package telemetry

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Postgres reads a PostgreSQL database's own statistics: pg_stat_database,
// pg_stat_wal and pg_stat_activity every second, and at the end the
// slowest statements from pg_stat_statements.
type Postgres struct {
	url  string
	db   string
	conn *pgx.Conn
}

// NewPostgres connects to the database at url and resets its statement
// statistics, so the slowest statements are the run's.
func NewPostgres(ctx context.Context, url string) (*Postgres, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	p := &Postgres{url: url, db: conn.Config().Database, conn: conn}
	_, _ = conn.Exec(ctx, `SELECT pg_stat_statements_reset()`) // absent or not allowed: the slowest statements cover more than the run
	return p, nil
}

// Metrics are the database's.
func (p *Postgres) Metrics() []Metric {
	return []Metric{
		{Name: "db.xact_commit", Unit: "1/s", Rate: true, Help: "transactions committed in the database (every one: payments, reads, tpslab's own queries)"},
		{Name: "db.xact_rollback", Unit: "1/s", Rate: true, Better: "lower", Help: "transactions rolled back (serialization failures, deadlocks, refused payments)"},
		{Name: "db.deadlocks", Unit: "1/s", Rate: true, Better: "lower", Help: "deadlocks detected"},
		{Name: "db.tup_inserted", Unit: "1/s", Rate: true, Help: "rows inserted"},
		{Name: "db.tup_updated", Unit: "1/s", Rate: true, Help: "rows updated"},
		{Name: "db.blks_read", Unit: "1/s", Rate: true, Help: "blocks read from outside the buffer cache"},
		{Name: "db.blks_hit", Unit: "1/s", Rate: true, Help: "blocks found in the buffer cache"},
		{Name: "db.wal_bytes", Unit: "bytes/s", Rate: true, Help: "write-ahead log written"},
		{Name: "db.wal_sync", Unit: "1/s", Rate: true, Help: "write-ahead log flushes to disk (fsync): what synchronous_commit pays for"},
		{Name: "db.backends", Unit: "1", Help: "connections to the database (tpslab's own reading it left out)"},
		{Name: "db.active", Unit: "1", Help: "connections running a statement"},
		{Name: "db.lock_waits", Unit: "1", Better: "lower", Help: "connections waiting for a lock"},
	}
}

// Sample reads the statistics views.
func (p *Postgres) Sample(ctx context.Context, dst []float64) error {
	err := p.conn.QueryRow(ctx, `SELECT d.xact_commit, d.xact_rollback, d.deadlocks, d.tup_inserted, d.tup_updated, d.blks_read, d.blks_hit,
	w.wal_bytes::float8, w.wal_sync, d.numbackends - 1,
	(SELECT count(*) FROM pg_stat_activity a WHERE a.datname = d.datname AND a.state = 'active' AND a.pid <> pg_backend_pid()),
	(SELECT count(*) FROM pg_stat_activity a WHERE a.datname = d.datname AND a.wait_event_type = 'Lock')
FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = $1`, p.db).Scan(
		&dst[0], &dst[1], &dst[2], &dst[3], &dst[4], &dst[5], &dst[6], &dst[7], &dst[8], &dst[9], &dst[10], &dst[11])
	if err != nil {
		return fmt.Errorf("postgres statistics: %w", err)
	}
	dst[0]-- // this query's own transaction is not the system's
	return nil
}

// Slowest reads the statements that took the most time in all. A sample
// cut short by the run's end closes the sampling connection (pgx closes a
// connection whose query was cancelled), so a closed one is reopened.
func (p *Postgres) Slowest(ctx context.Context) ([]Statement, error) {
	if p.conn.IsClosed() {
		conn, err := pgx.Connect(ctx, p.url)
		if err != nil {
			return nil, fmt.Errorf("postgres slowest statements: %w", err)
		}
		p.conn = conn
	}
	rows, err := p.conn.Query(ctx, `SELECT s.query, s.calls, s.total_exec_time, s.mean_exec_time, s.max_exec_time, s.rows
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = $1 AND s.query NOT ILIKE '%pg_stat%'
ORDER BY s.total_exec_time DESC LIMIT 5`, p.db)
	if err != nil {
		return nil, fmt.Errorf("postgres slowest statements: %w", err)
	}
	defer rows.Close()
	var out []Statement
	for rows.Next() {
		var s Statement
		if rows.Scan(&s.Query, &s.Calls, &s.TotalMs, &s.MeanMs, &s.MaxMs, &s.Rows) == nil {
			s.Query = strings.Join(strings.Fields(s.Query), " ")
			if len(s.Query) > 200 {
				s.Query = s.Query[:200] + "..."
			}
			s.TotalMs, s.MeanMs, s.MaxMs = round(s.TotalMs), round(s.MeanMs), round(s.MaxMs)
			out = append(out, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres slowest statements: %w", err)
	}
	return out, nil
}

// Close closes the connection.
func (p *Postgres) Close() { p.conn.Close(context.Background()) }
