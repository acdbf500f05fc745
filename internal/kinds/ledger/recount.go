package ledger

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/ledgersvc"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
)

// RecountSource is the network's database.
func (Kind) RecountSource(n *testnet.Net) string { return pgnet.Of(n).DatabaseURL }

// recountBatch bounds one query's ids (a second's at 10,000/s).
const recountBatch = 10000

// Recount reads the payments table for ids: a row there is a payment the
// service committed (its entries went in the same transaction).
func (Kind) Recount(ctx context.Context, source, chainID string, ids []string) (map[string]bool, error) {
	conn, err := pgx.Connect(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("the ledger's database: %v", err)
	}
	defer conn.Close(ctx)
	id, _, err := ledgersvc.ReadGenesis(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("%s holds no ledger (its meta table: %v)", shown(source), err)
	}
	if chainID != "" && id != chainID {
		return nil, fmt.Errorf("%s is the ledger of chain %q; the run's was %q", shown(source), id, chainID)
	}
	found := make(map[string]bool, len(ids))
	for lo := 0; lo < len(ids); lo += recountBatch {
		batch := ids[lo:min(lo+recountBatch, len(ids))]
		keys := make([][]byte, 0, len(batch))
		for _, s := range batch {
			b, err := hex.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("id %q: not hex", s)
			}
			keys = append(keys, b)
		}
		rows, err := conn.Query(ctx, `SELECT id FROM payments WHERE id = ANY($1)`, keys)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return nil, err
			}
			found[hex.EncodeToString(b)] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// shown is a database URL without its password (keys and secrets are
// never printed).
func shown(source string) string {
	u, err := url.Parse(source)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}
