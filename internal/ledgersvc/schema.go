// Package ledgersvc is tpslab's reference centralized payment service: an
// HTTP API in front of PostgreSQL, the regime of GNU Taler's exchange and of
// most bank back ends. It takes the same signed payments as the reference
// chain, verifies them, and applies each with double entry in one database
// transaction; its throughput is decided by the database settings it
// exposes (connections, batch commit, synchronous_commit, partitioning,
// isolation). See docs/ledger-service.md.
package ledgersvc

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/chain"
)

// Schema creates the tables. partition is none, hash (the payment log
// partitioned by sender, 8 ways) or range (by day of creation).
func Schema(partition string) string {
	payments := `CREATE TABLE payments (
	id        bytea       NOT NULL,
	sender    bytea       NOT NULL,
	sequence  bigint      NOT NULL,
	recipient bytea       NOT NULL,
	amount    bigint      NOT NULL CHECK (amount > 0),
	outputs   int         NOT NULL DEFAULT 1, -- a batch's recipients: amount is their total, recipient the first
	created   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (sender, sequence%s)
)%s;`
	var parts []string
	switch partition {
	case "hash":
		payments = fmt.Sprintf(payments, "", " PARTITION BY HASH (sender)")
		for i := 0; i < 8; i++ {
			parts = append(parts, fmt.Sprintf("CREATE TABLE payments_h%d PARTITION OF payments FOR VALUES WITH (MODULUS 8, REMAINDER %d);", i, i))
		}
	case "range":
		// A range partitioned table's key must hold the partition column.
		payments = fmt.Sprintf(payments, ", created", " PARTITION BY RANGE (created)")
		parts = append(parts, "CREATE TABLE payments_default PARTITION OF payments DEFAULT;")
		for d := -1; d < 8; d++ {
			parts = append(parts, fmt.Sprintf("CREATE TABLE payments_d%d PARTITION OF payments FOR VALUES FROM (date_trunc('day', now()) + interval '%d day') TO (date_trunc('day', now()) + interval '%d day');", d+1, d, d+1))
		}
	default:
		payments = fmt.Sprintf(payments, "", "")
	}
	return strings.Join(append([]string{`CREATE TABLE accounts (
	address  bytea  PRIMARY KEY,
	balance  bigint NOT NULL CHECK (balance >= 0),
	sequence bigint NOT NULL DEFAULT 0
);`, payments}, append(parts, `CREATE INDEX payments_id ON payments (id);`,
		`CREATE TABLE entries (
	payment_id bytea  NOT NULL,
	account    bytea  NOT NULL,
	amount     bigint NOT NULL
);`,
		`CREATE INDEX entries_payment ON entries (payment_id);`,
		`CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);`)...), "\n")
}

// Setup creates the schema and funds the genesis accounts (derived from
// g's seed, as the chain's) with COPY.
func Setup(ctx context.Context, conn *pgx.Conn, chainID, partition string, g chain.Genesis) error {
	if _, err := conn.Exec(ctx, Schema(partition)); err != nil {
		return fmt.Errorf("create the schema: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("create extension pg_stat_statements: %w", err)
	}
	keys := chain.DeriveKeys(g.Seed, int(g.Accounts))
	// One row at a time, the keyed accounts and then the pre-loaded state
	// (net up --state): 10M rows never sit in memory.
	next := uint64(0)
	row := []any{nil, int64(g.Balance), int64(0)}
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if next >= g.Accounts+g.State {
			return nil, nil
		}
		var a chain.Address
		if next < g.Accounts {
			a = chain.AddressOf(keys[next][32:])
		} else {
			a = chain.StateAddress(g.Seed, next-g.Accounts)
		}
		next++
		row[0] = a[:]
		return row, nil
	})
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"accounts"}, []string{"address", "balance", "sequence"}, src); err != nil {
		return fmt.Errorf("fund the accounts: %w", err)
	}
	for k, v := range map[string]string{"chain_id": chainID, "supply": fmt.Sprint(g.Supply()), "partition": partition,
		"seed": g.Seed, "accounts": fmt.Sprint(g.Accounts), "balance": fmt.Sprint(g.Balance), "state": fmt.Sprint(g.State)} {
		if _, err := conn.Exec(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2)`, k, v); err != nil {
			return err
		}
	}
	return nil
}

// ReadGenesis reads the genesis the ledger was funded from (a test seed,
// as the chain's /genesis query gives it).
func ReadGenesis(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (chainID string, g chain.Genesis, err error) {
	err = q.QueryRow(ctx, `SELECT
	(SELECT value FROM meta WHERE key = 'chain_id'),
	(SELECT value FROM meta WHERE key = 'seed'),
	(SELECT value::bigint FROM meta WHERE key = 'accounts'),
	(SELECT value::bigint FROM meta WHERE key = 'balance'),
	coalesce((SELECT value::bigint FROM meta WHERE key = 'state'), 0)`).Scan(&chainID, &g.Seed, &g.Accounts, &g.Balance, &g.State)
	return chainID, g, err
}

// Check audits the ledger: the total balance equals the genesis supply,
// every payment has exactly two entries that move its amount from the
// sender to the recipient (a batch: a debit of its amount and one credit
// per output, adding up to it), and each sender's payments have the sequences
// 0..sequence-1 with no gap or repeat.
func Check(ctx context.Context, conn *pgx.Conn) (lines, problems []string) {
	var supply string
	if err := conn.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'supply'`).Scan(&supply); err != nil {
		return nil, []string{"read the genesis supply: " + err.Error()}
	}
	var total string
	var accounts, payments int64
	if err := conn.QueryRow(ctx, `SELECT sum(balance)::text, count(*) FROM accounts`).Scan(&total, &accounts); err != nil {
		return nil, []string{err.Error()}
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&payments); err != nil {
		return nil, []string{err.Error()}
	}
	lines = append(lines, fmt.Sprintf("ledger: %d accounts holding %s (genesis supply %s), %d payments", accounts, total, supply, payments))
	if total != supply {
		problems = append(problems, fmt.Sprintf("total balance %s, genesis supply %s", total, supply))
	}
	var bad int64
	if err := conn.QueryRow(ctx, `
SELECT count(*) FROM payments p
LEFT JOIN LATERAL (
	SELECT count(*) AS n, sum(amount) AS net,
	       bool_or(account = p.sender AND amount = -p.amount) AS debit,
	       bool_or(account = p.recipient AND amount = p.amount) AS credit
	FROM entries e WHERE e.payment_id = p.id) e ON true
WHERE e.n <> p.outputs + 1 OR e.net <> 0 OR NOT e.debit OR NOT (e.credit OR p.outputs > 1)`).Scan(&bad); err != nil {
		problems = append(problems, "audit the entries: "+err.Error())
	} else if bad > 0 {
		problems = append(problems, fmt.Sprintf("%d payments without exactly a matching debit and credit", bad))
	}
	var orphans int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM entries e WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = e.payment_id)`).Scan(&orphans); err == nil && orphans > 0 {
		problems = append(problems, fmt.Sprintf("%d entries without a payment", orphans))
	}
	var gaps int64
	if err := conn.QueryRow(ctx, `
SELECT count(*) FROM accounts a
LEFT JOIN (SELECT sender, count(*) AS n, max(sequence) AS hi FROM payments GROUP BY sender) p ON p.sender = a.address
WHERE coalesce(p.n, 0) <> a.sequence OR (p.n > 0 AND p.hi <> p.n - 1)`).Scan(&gaps); err != nil {
		problems = append(problems, "audit the sequences: "+err.Error())
	} else if gaps > 0 {
		problems = append(problems, fmt.Sprintf("%d accounts whose payments' sequences have gaps or repeats", gaps))
	}
	return lines, problems
}
