package talernet

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
)

// units is an amount column pair (value, 10^-8 fraction) in SQL, summed
// as one number of 10^-8 units.
func units(v, f string) string {
	return fmt.Sprintf("(%s::numeric * 100000000 + %s)", v, f)
}

// audits are the exchange database's books, each a query that counts the
// rows breaking one rule (0: it holds).
var audits = []struct{ rule, query string }{
	{"every reserve's credits equal its balance plus its withdrawals",
		`SELECT count(*) FROM exchange.reserves r WHERE
		  (SELECT coalesce(sum(` + units("credit_val", "credit_frac") + `), 0) FROM exchange.reserves_in i WHERE i.reserve_pub = r.reserve_pub)
		  <> ` + units("r.current_balance_val", "r.current_balance_frac") + ` +
		  (SELECT coalesce(sum(` + units("amount_with_fee_val", "amount_with_fee_frac") + `), 0) FROM exchange.reserves_out o WHERE o.reserve_uuid = r.reserve_uuid)`},
	{"every coin's deposits plus what remains equal its value",
		`SELECT count(*) FROM exchange.known_coins k JOIN exchange.denominations d USING (denominations_serial) WHERE
		  (SELECT coalesce(sum(` + units("amount_with_fee_val", "amount_with_fee_frac") + `), 0) FROM exchange.deposits p WHERE p.coin_pub = k.coin_pub)
		  + ` + units("k.remaining_val", "k.remaining_frac") + ` <> ` + units("d.coin_val", "d.coin_frac")},
}

// Check audits the exchange's database (net check).
func Check(ctx context.Context, n *testnet.Net) (lines, problems []string) {
	return pgnet.Audit(ctx, n, Of(n).DatabaseURL, "the exchange's database", func(ctx context.Context, conn *pgx.Conn) (lines, problems []string) {
		var reserves, withdrawals, coins, deposits int64
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM exchange.reserves), (SELECT count(*) FROM exchange.reserves_out),
		(SELECT count(*) FROM exchange.known_coins), (SELECT count(*) FROM exchange.deposits)`).Scan(&reserves, &withdrawals, &coins, &deposits); err != nil {
			return nil, []string{"read the exchange's database: " + err.Error()}
		}
		lines = append(lines, fmt.Sprintf("exchange database: %d reserves, %d withdrawals, %d coins seen, %d deposits", reserves, withdrawals, coins, deposits))
		for _, a := range audits {
			var bad int64
			err := conn.QueryRow(ctx, a.query).Scan(&bad)
			switch {
			case err == pgx.ErrNoRows:
			case err != nil:
				problems = append(problems, a.rule+": "+err.Error())
			case bad != 0:
				problems = append(problems, fmt.Sprintf("%s: %d rows break it", a.rule, bad))
			}
		}
		return lines, problems
	})
}

// Status is `net status`: the database's deposits as HEIGHT, its
// connections as PEERS; each exchange process's /config.
func Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	out := make([]testnet.NodeStatus, len(n.Nodes))
	cl := &http.Client{Timeout: 3 * time.Second}
	for i, nd := range n.Nodes {
		out[i] = nd.BaseStatus()
		if !out[i].Running {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		switch {
		case nd.Role == "database":
			h, p, err := pgnet.DatabaseStatus(cctx, Of(n).DatabaseURL, `SELECT (SELECT count(*) FROM exchange.deposits), (SELECT count(*) FROM pg_stat_activity WHERE datname = 'taler')`)
			if err != nil {
				out[i].Err = err.Error()
			} else {
				out[i].Height, out[i].Peers = h, p
			}
		case nd.Role == "service":
			if res, err := cl.Get(nd.RPC + "config"); err != nil {
				out[i].Err = err.Error()
			} else {
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					out[i].Err = res.Status
				}
			}
		}
		cancel()
	}
	return out
}
