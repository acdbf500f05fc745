package cosmos_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/cosmos"
)

// delegateMix is a mix of bank sends and staking delegations to the
// network's validators, the delegation given only by its type URL and
// fields.
const delegateMix = `
cosmos:
  messages:
    - kind: delegate
      msgs:
        - type_url: /cosmos.staking.v1beta1.MsgDelegate
          fields: {delegator_address: "{sender}", validator_address: "{validator}", amount: {denom: "{denom}", amount: "{amount}"}}
workload:
  mix:
    - {kind: send, weight: 3}
    - {kind: delegate, weight: 1}
`

// A kind of payment made of a message tpslab has no code for, encoded from
// the chain's own descriptors: each kind's committed count equals the
// code-0 transactions of its type from our senders in the blocks.
func TestOwnMessagesOnTpsd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an SDK chain")
	}
	n, off := sharedChain(t)
	sc := bankScenario(t, n.Home, "rpc", "live")
	sc.Workload.SendersOffset = off
	if err := scenario.Apply(&sc, []byte(delegateMix)); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	ours := sendersFrom(n, off, sc.Workload.Senders)
	cl := &cometbft.Client{URL: n.Nodes[0].RPC, HTTP: http.DefaultClient}
	inBlocks := map[string]int64{}
	for h := res.Chain.FirstHeight; h <= res.Chain.LastHeight; h++ {
		b, err := cl.Block(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := cl.BlockResults(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range b.Data.Txs {
			// The first message's field 1 is the sender of both types
			// (from_address, delegator_address).
			if from, err := cosmos.Sender(tx); err != nil || !ours[from] || rs[i].Code != 0 {
				continue
			}
			switch {
			case bytes.Contains(tx, []byte("/cosmos.staking.v1beta1.MsgDelegate")):
				inBlocks["delegate"]++
			case bytes.Contains(tx, []byte("/cosmos.bank.v1beta1.MsgSend")):
				inBlocks["send"]++
			}
		}
	}
	if s.CommittedByKind["send"] != inBlocks["send"] || s.CommittedByKind["delegate"] != inBlocks["delegate"] ||
		s.CommittedByKind["send"]+s.CommittedByKind["delegate"] != s.Committed || inBlocks["delegate"] == 0 || len(s.Failed) != 0 {
		t.Errorf("committed by kind %v (total %d, failed %v); the blocks hold %v", s.CommittedByKind, s.Committed, s.Failed, inBlocks)
	}
	t.Logf("sent by kind %v, committed by kind %v; notes %q", s.SentByKind, s.CommittedByKind, res.Notes)

	// A type the chain does not have, and a field its type lacks: one line
	// each, exit 2, before any load.
	for _, c := range []struct{ from, to, want string }{
		{"/cosmos.staking.v1beta1.MsgDelegate", "/cosmos.staking.v1beta1.MsgDelegateAll", `cosmos.messages[0].msgs[0].type_url: "/cosmos.staking.v1beta1.MsgDelegateAll", expected a message the chain's descriptors have`},
		{"validator_address:", "validator:", `cosmos.messages[0].msgs[0].fields: /cosmos.staking.v1beta1.MsgDelegate: `},
	} {
		bad := bankScenario(t, n.Home, "rpc", "live")
		bad.Workload.SendersOffset = off
		bad.Load.Duration = scenario.Duration(2 * time.Second)
		if err := scenario.Apply(&bad, []byte(strings.Replace(delegateMix, c.from, c.to, 1))); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, bad)
		if exitcode.Of(err) != exitcode.BadInput || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s for %s: %v (exit %d), want one line with %q and exit 2", c.to, c.from, err, exitcode.Of(err), c.want)
		}
	}
}
