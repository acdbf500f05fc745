package sdknet

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// alignedStake is what each validator bonds on a Cosmos EVM chain whose
// genesis tpslab aligned (evmd's): cosmos/evm's chains count voting power
// in 10^18 base units (its power reduction), so the SDK's usual 10^12 is
// worth no power and the validator set is empty after InitGenesis.
const alignedStake = "1000000000000000000000" // 10^21: 1000 units of power

// alignEVMGenesis makes a Cosmos EVM daemon's default genesis (node 0's,
// after init) one that starts, as cosmos/evm's own local-node script does:
// one denom — x/vm's evm_denom unless --denom names another — for staking,
// minting, governance deposits and x/vm; 18-decimal bank metadata for it
// when the daemon's genesis has none (x/vm's coin info is read from it at
// start); and a finite block gas limit. It reports whether it changed
// anything (tpsevmd's genesis is already aligned: it is left as it is).
func alignEVMGenesis(path, denom string) (aligned bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var g map[string]any
	if err := json.Unmarshal(b, &g); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	app, _ := g["app_state"].(map[string]any)
	evm := dig(app, "evm", "params")
	if evm == nil {
		return false, fmt.Errorf("%s: no app_state.evm.params: not a Cosmos EVM daemon's genesis", path)
	}
	evmDenom, _ := evm["evm_denom"].(string)
	if denom == "" {
		denom = evmDenom
	}
	if denom == "" {
		return false, fmt.Errorf("%s: app_state.evm.params.evm_denom is empty; give --denom", path)
	}
	set := func(m map[string]any, k string, v any) {
		if m != nil && m[k] != v {
			m[k], aligned = v, true
		}
	}
	set(evm, "evm_denom", denom)
	set(dig(app, "staking", "params"), "bond_denom", denom)
	set(dig(app, "mint", "params"), "mint_denom", denom)
	if gov := dig(app, "gov", "params"); gov != nil {
		for _, k := range []string{"min_deposit", "expedited_min_deposit"} {
			if coins, ok := gov[k].([]any); ok {
				for _, c := range coins {
					if c, ok := c.(map[string]any); ok {
						set(c, "denom", denom)
					}
				}
			}
		}
	}
	bank := dig(app, "bank")
	metas, _ := bank["denom_metadata"].([]any)
	found := false
	for _, m := range metas {
		if m, ok := m.(map[string]any); ok && m["base"] == denom {
			found = true
		}
	}
	if !found && bank != nil {
		display := strings.TrimPrefix(denom, "a")
		if display == denom || display == "" {
			display = denom + "18"
		}
		bank["denom_metadata"] = append(metas, map[string]any{
			"description": "the chain's coin, 18 decimals (written by tpslab: the daemon's genesis had none)",
			"denom_units": []any{
				map[string]any{"denom": denom, "exponent": 0, "aliases": []any{}},
				map[string]any{"denom": display, "exponent": 18, "aliases": []any{}},
			},
			"base": denom, "display": display, "name": display, "symbol": strings.ToUpper(display), "uri": "", "uri_hash": "",
		})
		aligned = true
	}
	if !aligned {
		return false, nil
	}
	if block := dig(g, "consensus", "params", "block"); block != nil && (block["max_gas"] == "-1" || block["max_gas"] == nil) {
		block["max_gas"] = "100000000"
	}
	out, err := json.Marshal(g)
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(path, out, 0o644)
}

// dig walks nested JSON objects; nil when a key is missing.
func dig(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}
