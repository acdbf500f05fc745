package chain

import (
	"context"
	"fmt"
	"strconv"
)

// QueryFunc runs an ABCI query against the ledger (a CometBFT target's
// ABCIQuery).
type QueryFunc func(ctx context.Context, path string, data []byte) ([]byte, error)

// Reason names a result code: the ledger's names for its codespace,
// "<codespace>_<code>" for any other application.
func Reason(space string, code uint32, _ string) string {
	switch {
	case space == Codespace:
		return CodeName(code)
	case space != "":
		return space + "_" + strconv.FormatUint(uint64(code), 10)
	}
	return "code_" + strconv.FormatUint(uint64(code), 10)
}

// ReadGenesis asks a node for the ledger's genesis; an error means the
// chain is not a tpslab ledger.
func ReadGenesis(ctx context.Context, query QueryFunc) (Genesis, error) {
	v, err := query(ctx, "/genesis", nil)
	if err != nil {
		return Genesis{}, fmt.Errorf("not a tpslab ledger (its /genesis query failed: %v)", err)
	}
	return ParseGenesis(v)
}
