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

// setupMix is delegateMix after a set-up: each sender delegates once
// before the load, not measured.
var setupMix = strings.Replace(delegateMix, "cosmos:\n", `cosmos:
  setup:
    - type_url: /cosmos.staking.v1beta1.MsgDelegate
      fields: {delegator_address: "{sender}", validator_address: "{validator}", amount: {denom: "{denom}", amount: "1000"}}
`, 1)

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
	// The first message's field 1 is the sender of both types
	// (from_address, delegator_address).
	ok, _ := countTypes(t, cl, res.Chain.FirstHeight, res.Chain.LastHeight, ours)
	inBlocks := map[string]int64{"delegate": ok[typeDelegate], "send": ok[typeSend]}
	if s.CommittedByKind["send"] != inBlocks["send"] || s.CommittedByKind["delegate"] != inBlocks["delegate"] ||
		s.CommittedByKind["send"]+s.CommittedByKind["delegate"] != s.Committed || inBlocks["delegate"] == 0 || len(s.Failed) != 0 {
		t.Errorf("committed by kind %v (total %d, failed %v); the blocks hold %v", s.CommittedByKind, s.Committed, s.Failed, inBlocks)
	}
	t.Logf("sent by kind %v, committed by kind %v; notes %q", s.SentByKind, s.CommittedByKind, res.Notes)

	// A set-up before the load: one transaction from each sender, in the
	// blocks between the two runs, each code 0, and not counted.
	su := bankScenario(t, n.Home, "rpc", "live")
	su.Workload.SendersOffset = off
	if err := scenario.Apply(&su, []byte(setupMix)); err != nil {
		t.Fatal(err)
	}
	first := res
	if res, err = run(t, su); err != nil {
		t.Fatal(err)
	}
	ok, all := countTypes(t, cl, first.Chain.LastHeight+1, res.Chain.FirstHeight-1, ours)
	if ok[typeDelegate] != int64(su.Workload.Senders) || all[typeDelegate] != ok[typeDelegate] || all[typeSend] != 0 {
		t.Errorf("between the runs our senders' transactions: %v, of them code 0: %v; want %d delegations, all code 0", all, ok, su.Workload.Senders)
	}
	inRun, _ := countTypes(t, cl, res.Chain.FirstHeight, res.Chain.LastHeight, ours)
	if s := res.Summary; s.CommittedByKind["delegate"] != inRun[typeDelegate] || s.CommittedByKind["send"] != inRun[typeSend] || len(s.Failed) != 0 {
		t.Errorf("after the set-up: committed by kind %v (failed %v); the run's blocks hold %v", s.CommittedByKind, s.Failed, inRun)
	}
	t.Logf("set-up: notes %q", res.Notes)

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

const (
	typeDelegate = "/cosmos.staking.v1beta1.MsgDelegate"
	typeSend     = "/cosmos.bank.v1beta1.MsgSend"
)

// countTypes counts our senders' transactions in blocks from..to by their
// first message's type: those with code 0, and all.
func countTypes(t *testing.T, cl *cometbft.Client, from, to int64, ours map[string]bool) (ok, all map[string]int64) {
	ok, all = map[string]int64{}, map[string]int64{}
	for h := from; h <= to; h++ {
		b, err := cl.Block(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := cl.BlockResults(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range b.Data.Txs {
			if from, err := cosmos.Sender(tx); err != nil || !ours[from] {
				continue
			}
			for _, typ := range []string{typeDelegate, typeSend} {
				if bytes.Contains(tx, []byte(typ)) {
					all[typ]++
					if rs[i].Code == 0 {
						ok[typ]++
					}
					break
				}
			}
		}
	}
	return ok, all
}
