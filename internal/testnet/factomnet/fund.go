package factomnet

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/tpslab/tpslab/internal/targets/factom"
	"github.com/tpslab/tpslab/internal/testnet"
)

// The LOCAL network's prefunded address at genesis (20,000 FCT, in
// factoshis) and its entry-credit rate (factoshis per credit), as factomd
// answers factoid-balance and entry-credit-rate on a fresh network.
const (
	LocalFunds  int64 = 20_000 * 100_000_000
	LocalECRate int64 = 1000
)

// perTx is how many wallets one funding transaction pays (an entry-credit
// and a factoid output each, well under the 10 KiB a transaction may be).
const perTx = 40

// fund buys each wallet's entry credits and pays its factoid address from
// the LOCAL network's prefunded address, then waits until every node holds
// the last wallet's balances.
func fund(ctx context.Context, n *testnet.Net, f *Factom, log io.Writer) error {
	if f.Wallets == 0 {
		return nil
	}
	cl := factom.NewClient(n.Nodes[0].RPC)
	rate, err := cl.ECRate(ctx)
	if err != nil {
		return err
	}
	f.ECRate = rate
	start, from := time.Now(), factom.Funder()
	// Checked here too: another build's genesis may fund less than LOCAL's.
	need := int64(f.Wallets) * (f.EntryCredits*int64(rate) + f.Factoshis)
	if have, err := cl.FactoidBalance(ctx, from.String()); err != nil || have < need {
		return fmt.Errorf("the prefunded address %s holds %d factoshis (%v), the %d wallets need %d", from.String(), have, err, f.Wallets, need)
	}
	for w := 0; w < f.Wallets; w += perTx {
		var outs, ecs []factom.Out
		for i := w; i < min(w+perTx, f.Wallets); i++ {
			ecs = append(ecs, factom.Out{Address: factom.ECWallet(f.WalletSeed, i).PubBytes(), Amount: uint64(f.EntryCredits) * rate})
			if f.Factoshis > 0 {
				outs = append(outs, factom.Out{Address: factom.FactoidWallet(f.WalletSeed, i).RCDHash(), Amount: uint64(f.Factoshis)})
			}
		}
		raw, _, err := factom.FactoidTx(from, outs, ecs, rate, uint64(time.Now().UnixMilli())+uint64(w))
		if err != nil {
			return err
		}
		if err := cl.Call(ctx, "factoid-submit", map[string]string{"transaction": hex.EncodeToString(raw)}, nil); err != nil {
			return fmt.Errorf("factoid-submit: %w", err)
		}
	}
	last := factom.ECWallet(f.WalletSeed, f.Wallets-1).String()
	deadline := time.Now().Add(time.Duration(3*f.BlockTime+30) * time.Second)
	for _, nd := range n.Nodes {
		c := factom.NewClient(nd.RPC)
		for {
			b, err := c.ECBalance(ctx, last)
			if err == nil && b >= f.EntryCredits {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				hs, herr := c.Heights(ctx)
				return fmt.Errorf("%s: wallet %d holds %d entry credits after %.0f s, expected %d (%v); its heights: %+v %v", nd.Name, f.Wallets-1, b, time.Since(start).Seconds(), f.EntryCredits, err, hs, herr)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	fmt.Fprintf(log, "factom: %d test wallets bought %d entry credits each (and hold %d factoshis) in %.1f s\n", f.Wallets, f.EntryCredits, f.Factoshis, time.Since(start).Seconds())
	return nil
}
