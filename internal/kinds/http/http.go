// Package http is the kind of any payment system behind a REST API,
// measured through the generic HTTP target: target.http describes the
// request and the answers. Payments are the reference ledger's signed
// payments, in whatever form the request template gives them. The ledger
// service's kind is this one with its API's defaults.
package http

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/sut/httpapi"
	"github.com/tpslab/tpslab/internal/sut/ledgerclient"
	"github.com/tpslab/tpslab/internal/workload"
)

// API is the HTTP target and the ledger's payments, for any REST API.
type API struct {
	// Defaults fills what target.http leaves empty (a known API's shape).
	Defaults func(scenario.HTTP, *scenario.Scenario) scenario.HTTP
	// Genesis asks the service which ledger it keeps, for endpoints given
	// without workload.genesis_seed; nil: the scenario must say.
	Genesis func(ctx context.Context, endpoint string) (string, chain.Genesis, error)
}

// Kind is any REST payment API.
type Kind struct{ API }

// Info names the kind.
func (Kind) Info() kinds.Info {
	return kinds.Info{Name: "http", About: "any REST payment API target.http describes: request template, answer rules, sync, poll or callback confirmation"}
}

// Validate needs the API's base URL and a described request.
func (Kind) Validate(sc *scenario.Scenario) error {
	if err := kinds.ViaRPC(sc, "http"); err != nil {
		return err
	}
	if t := sc.Target; len(t.Endpoints) == 0 && t.NetHome == "" {
		return fmt.Errorf("target.endpoints: empty, expected the API's base URL for target kind http (--endpoint)")
	}
	return sc.Target.HTTP.ValidateAPI()
}

// decodePayment reads the reference ledger's payment for the templates (a
// batch's fields are its first output's: only {{tx}} carries all of it).
func decodePayment(tx []byte, f *httpapi.Fields) error {
	p, err := chain.Decode(tx)
	if err != nil {
		return err
	}
	a := chain.AddressOf(p.Sender)
	f.ChainID, f.SenderPub, f.Recipient = p.ChainID, p.Sender, append(f.Recipient[:0], p.Recipient[:]...)
	f.Sender = append(f.Sender[:0], a[:]...)
	f.Amount, f.Sequence, f.Signature = p.Amount, p.Sequence, p.Signature
	return nil
}

// Target is the HTTP target on the endpoints.
func (k API) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	t := sc.Target
	if t.Via != "rpc" || t.Broadcast != "sync" || t.Confirm != "websocket" {
		return nil, exitcode.BadInputf("target.via, target.broadcast and target.confirm are for chains: an HTTP API is confirmed as target.http.confirm says (sync | poll | callback)")
	}
	h := t.HTTP
	if k.Defaults != nil {
		h = k.Defaults(h, sc)
	}
	chainID := sc.Workload.ChainID
	if sys.Net != nil && chainID == "" {
		chainID = sys.Net.ChainID
	}
	tgt, err := httpapi.New(httpapi.Options{Endpoints: append([]string(nil), sys.Endpoints...), ChainID: chainID,
		Method: h.Method, Path: h.Path, Headers: h.Headers, Body: h.Body, Accept: h.Accept,
		StatusField: h.StatusField, Committed: h.Committed, Failed: h.Failed, ReasonField: h.ReasonField, DetailField: h.DetailField,
		IDField: h.IDField, Confirm: h.Confirm, PollPath: h.PollPath, PollInterval: h.PollInterval.D(), GiveUp: sc.CommitTimeout.D(),
		CallbackListen: h.CallbackListen, HealthPath: h.HealthPath, AccountPath: h.AccountPath, SequenceField: h.SequenceField,
		ThrottleRetries: h.ThrottleRetries, MaxRetryAfter: h.MaxRetryAfter.D(), Timeout: h.Timeout.D(),
		Connections: sc.Load.Connections, Decode: decodePayment})
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	return tgt, nil
}

// Workload is the reference ledger's payments: keys derived from the
// genesis seed (the service's, or workload.genesis_seed for any API),
// sequences read through the account path.
func (k API) Workload(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, t sut.Target) (workload.Workload, error) {
	tgt := t.(*httpapi.Target)
	w := sc.Workload
	if w.Kind != "payment" {
		return nil, exitcode.BadInputf("workload.kind: %q, expected payment for an HTTP payment API", w.Kind)
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tgt.Probe(qctx); err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("target %s does not answer: %w", strings.Join(sys.Endpoints, ", "), err))
	}
	var chainID string
	var g chain.Genesis
	switch {
	case sys.Net != nil:
		chainID, g = sys.Net.ChainID, sys.Net.Genesis
	case k.Genesis != nil:
		var err error
		if chainID, g, err = k.Genesis(qctx, sys.Endpoints[0]); err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
	default:
		if w.ChainID == "" || w.GenesisSeed == "" || w.Accounts == 0 {
			return nil, exitcode.BadInputf("workload.chain_id, workload.genesis_seed and workload.accounts: expected all three for target kind http (the payments are signed with keys derived from the seed)")
		}
	}
	chainID, g, err := kinds.LedgerGenesis(sc, chainID, g)
	if err != nil {
		return nil, err
	}
	client := ledgerclient.NewClientNonce(chainID, g, w.Padding, func(ctx context.Context, a chain.Address) (uint64, error) {
		return tgt.Sequence(ctx, a[:])
	})
	p, err := workload.NewPayments(ctx, kinds.PaymentsConfig(sc), client)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	return p, nil
}
