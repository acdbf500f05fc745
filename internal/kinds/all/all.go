// Package all is the registration list: the one place that names every
// kind of system tpslab measures. Adding a kind is a folder under
// internal/kinds and one entry here (docs/architecture.md).
package all

import (
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/builtin"
	"github.com/tpslab/tpslab/internal/kinds/cometbft"
	"github.com/tpslab/tpslab/internal/kinds/cosmos"
	"github.com/tpslab/tpslab/internal/kinds/cosmosevm"
	"github.com/tpslab/tpslab/internal/kinds/evm"
	"github.com/tpslab/tpslab/internal/kinds/factom"
	"github.com/tpslab/tpslab/internal/kinds/http"
	"github.com/tpslab/tpslab/internal/kinds/ledger"
	"github.com/tpslab/tpslab/internal/kinds/taler"
)

// Registry is every kind; the first is the default.
func Registry() *kinds.Registry {
	return kinds.NewRegistry(builtin.Kind{}, cometbft.Kind{}, cosmos.Kind{}, evm.Kind{}, cosmosevm.Kind{}, ledger.Kind{}, http.Kind{}, taler.Kind{}, factom.Kind{})
}
