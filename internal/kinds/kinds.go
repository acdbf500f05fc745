// Package kinds lists the kinds of system tpslab measures and composes each
// from its target and its workload: the engine (runner) gets them by name
// and knows none of them.
package kinds

import (
	"github.com/tpslab/tpslab/internal/runner"
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
