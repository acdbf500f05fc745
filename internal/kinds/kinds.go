// Package kinds lists the kinds of system tpslab measures and composes each
// from its target and its workload: the engine (runner) gets them by name
// and knows none of them.
package kinds

import (
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/workload"
)

// All is every kind, by the name target.kind gives it.
func All() runner.Kinds {
	return runner.Kinds{
		"builtin":  ledger{startsNet: true},
		"cometbft": ledger{},
		"cosmos":   sdk{},
		"evm":      ethereum{},
		// cosmos-evm: the EVM target against tpslab's Cosmos EVM chain.
		"cosmos-evm": ethereum{cosmos: true},
		"ledger":     restAPI{ledger: true},
		"http":       restAPI{},
	}
}

// paymentsConfig is the payment lanes' settings a scenario gives, for every
// kind that sends signed payments.
func paymentsConfig(sc *scenario.Scenario) workload.PaymentsConfig {
	w := sc.Workload
	return workload.PaymentsConfig{Senders: w.Senders, Offset: w.SendersOffset, Window: w.Window,
		Amount: workload.Amount(w.Amount), SenderChoice: workload.Choice(w.SenderChoice),
		RecipientChoice: workload.Choice(w.RecipientChoice), Seed: sc.Seed}
}
