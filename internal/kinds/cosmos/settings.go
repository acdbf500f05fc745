package cosmos

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	sdk "github.com/tpslab/tpslab/internal/targets/cosmos"
)

// Settings are a Cosmos SDK chain's: the scenario's `cosmos:` section
// (the Cosmos EVM kind reads its network part too). They were the
// target's, the network's and the workload's fields once (Moved).
type Settings struct {
	// Via is where transactions are submitted: the CometBFT RPC, the REST
	// endpoint (POST /cosmos/tx/v1beta1/txs) or gRPC.
	Via           string   `yaml:"via" json:"via"`
	APIEndpoints  []string `yaml:"api_endpoints" json:"api_endpoints,omitempty"`   // REST URLs
	GRPCEndpoints []string `yaml:"grpc_endpoints" json:"grpc_endpoints,omitempty"` // host:port
	// Denom is the denom sent, and the test denom of a network tpslab
	// starts; empty: the daemon's staking denom.
	Denom     string  `yaml:"denom" json:"denom,omitempty"`
	Prefix    string  `yaml:"bech32_prefix" json:"bech32_prefix,omitempty"` // empty: the chain's
	Fee       string  `yaml:"fee" json:"fee,omitempty"`                     // per transaction, e.g. 500uatom; "" or auto: the chain's gas price x fee_margin
	FeeMargin float64 `yaml:"fee_margin" json:"fee_margin,omitempty"`       // fee auto: times the gas price; 0: 1.5 live, 3 presigned
	Memo      string  `yaml:"memo" json:"memo,omitempty"`                   // on every transfer
	// FeeMarket and Mint are the chain's economics, written into the
	// genesis of a network tpslab starts whose daemon has the modules
	// (tpsd has both, as the Cosmos Hub does; other daemons keep theirs).
	FeeMarket FeeMarket `yaml:"fee_market" json:"fee_market"`
	Mint      bool      `yaml:"mint" json:"mint"` // x/mint's inflation; false: none minted
	// Messages are kinds of payment made of the chain's own messages, for
	// workload.mix to name; Descriptors, a FileDescriptorSet file, stands
	// in for the chain's reflection service where it has none.
	Messages    []MessageKind `yaml:"messages" json:"messages,omitempty"`
	Descriptors string        `yaml:"descriptors" json:"descriptors,omitempty"`
	// Setup is one transaction each sender sends before the load, not
	// measured (a grant its MsgExec payments need).
	Setup []Message `yaml:"setup" json:"setup,omitempty"`
}

// MessageKind is one kind of payment: a transaction of Msgs, in order.
type MessageKind struct {
	Kind string    `yaml:"kind" json:"kind"`
	Msgs []Message `yaml:"msgs" json:"msgs"`
	Gas  uint64    `yaml:"gas" json:"gas,omitempty"` // what each reserves; 0: simulated x1.5
}

// Message is one of the chain's messages: its type URL and its fields as
// the chain's JSON writes them, with placeholders ({sender}, {recipient},
// {validator}, {amount}, {denom}, {seq}, {choice:a|b}).
type Message struct {
	TypeURL string        `yaml:"type_url" json:"type_url"`
	Fields  scenario.JSON `yaml:"fields" json:"fields"`
}

// FeeMarket is the Cosmos Hub's fee market (github.com/skip-mev/feemarket):
// a base gas price that rises while blocks are fuller than half of
// MaxBlockUtilization and falls back to MinBaseGasPrice. Its fee denom is
// the network's denom.
type FeeMarket struct {
	Enabled             bool   `yaml:"enabled" json:"enabled"`
	MinBaseGasPrice     string `yaml:"min_base_gas_price" json:"min_base_gas_price"` // a decimal, per gas unit
	MaxBlockUtilization uint64 `yaml:"max_block_utilization" json:"max_block_utilization"`
}

// Settings are the defaults, in the section cosmos.
func (Kind) Settings() (string, any) {
	return "cosmos", &Settings{Via: "rpc", FeeMarket: FeeMarket{Enabled: true, MinBaseGasPrice: "1", MaxBlockUtilization: 30_000_000}, Mint: true}
}

// SettingsOf is the scenario's cosmos section.
func SettingsOf(sc *scenario.Scenario) *Settings { return kinds.SectionOf[Settings](sc, "cosmos") }

// Moved: where each setting was.
func (Kind) Moved() map[string]string {
	return map[string]string{"target.via": "cosmos.via", "target.api_endpoints": "cosmos.api_endpoints", "target.grpc_endpoints": "cosmos.grpc_endpoints",
		"network.denom": "cosmos.denom", "workload.denom": "cosmos.denom", "network.bech32_prefix": "cosmos.bech32_prefix", "workload.bech32_prefix": "cosmos.bech32_prefix",
		"workload.fee": "cosmos.fee", "workload.fee_margin": "cosmos.fee_margin", "workload.memo": "cosmos.memo",
		"network.fee_market": "cosmos.fee_market", "network.mint": "cosmos.mint"}
}

// Flags set the section; the network's settings on net up as well.
func (Kind) Flags() []kinds.Flag {
	return []kinds.Flag{
		{Name: "via", Path: "cosmos.via", Help: "cosmos: where transactions are submitted: rpc | rest | grpc"},
		{Name: "api-endpoint", Path: "cosmos.api_endpoints", Help: "cosmos: REST URL, repeatable (for --via rest)"},
		{Name: "grpc-endpoint", Path: "cosmos.grpc_endpoints", Help: "cosmos: gRPC host:port, repeatable (for --via grpc)"},
		{Name: "denom", Path: "cosmos.denom", Help: "cosmos: the denom sent, and a network's test denom (default: the chain's staking denom)", NetUp: true},
		{Name: "bech32-prefix", Path: "cosmos.bech32_prefix", Help: "cosmos: the address prefix (default: the chain's)", NetUp: true},
		{Name: "fee", Path: "cosmos.fee", Help: "cosmos: fee per transaction, e.g. 500uatom, or auto: gas x the chain's gas price x --fee-margin"},
		{Name: "fee-margin", Path: "cosmos.fee_margin", Help: "cosmos, fee auto: times the chain's gas price (default 1.5 live, 3 presigned)"},
		{Name: "memo", Path: "cosmos.memo", Help: "cosmos: memo on every transfer"},
		{Name: "fee-market", Path: "cosmos.fee_market.enabled", Help: "cosmos: the Hub's fee market on (where the daemon has it; tpsd does)", NetUp: true},
		{Name: "min-base-gas-price", Path: "cosmos.fee_market.min_base_gas_price", Help: "cosmos: the fee market's lowest gas price", NetUp: true},
		{Name: "max-block-utilization", Path: "cosmos.fee_market.max_block_utilization", Help: "cosmos: the fee market's gas per block (its target is half); also the consensus block.max_gas unless --max-block-gas", NetUp: true},
		{Name: "mint", Path: "cosmos.mint", Help: "cosmos: x/mint's inflation on (where the daemon has it; tpsd does)", NetUp: true},
	}
}

var (
	denomFormat = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9/:._-]{2,127}$`)
	feeFormat   = regexp.MustCompile(`^[0-9]+[a-zA-Z][a-zA-Z0-9/:._-]{2,127}(,[0-9]+[a-zA-Z][a-zA-Z0-9/:._-]{2,127})*$`)
	// decimal is an SDK decimal as genesis files write it (no sign, no
	// exponent).
	decimal = regexp.MustCompile(`^[0-9]{1,30}(\.[0-9]{1,18})?$`)
)

// validate checks the section's settings.
func (s *Settings) validate() error {
	if s.Via != "rpc" && s.Via != "rest" && s.Via != "grpc" {
		return fmt.Errorf("cosmos.via: %q, expected one of [rpc rest grpc]", s.Via)
	}
	for i, e := range s.APIEndpoints {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("cosmos.api_endpoints[%d]: %q, expected a REST URL such as http://127.0.0.1:1317", i, e)
		}
	}
	for i, e := range s.GRPCEndpoints {
		if _, port, err := net.SplitHostPort(e); err != nil || port == "" {
			return fmt.Errorf("cosmos.grpc_endpoints[%d]: %q, expected host:port such as 127.0.0.1:9090", i, e)
		}
	}
	switch {
	case s.FeeMargin != 0 && (s.FeeMargin < 1 || s.FeeMargin > 100):
		return fmt.Errorf("cosmos.fee_margin: %g, expected 0 (1.5 live, 3 presigned) or 1..100 times the chain's gas price", s.FeeMargin)
	case len(s.Memo) > 256:
		return fmt.Errorf("cosmos.memo: %d characters, expected at most 256", len(s.Memo))
	case s.Fee != "" && s.Fee != "auto" && !feeFormat.MatchString(s.Fee):
		return fmt.Errorf("cosmos.fee: %q, expected an amount and a denom such as 500uatom, or auto", s.Fee)
	}
	if err := s.validateMessages(); err != nil {
		return err
	}
	return s.validateNet() // the denom, and the network's settings
}

var (
	kindName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	typeURL  = regexp.MustCompile(`^/[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)
)

// validateMessages checks the message kinds as far as the scenario can:
// whether a type exists and has the fields is the chain's to say.
func (s *Settings) validateMessages() error {
	if s.Descriptors != "" {
		if st, err := os.Stat(s.Descriptors); err != nil || st.IsDir() {
			return fmt.Errorf("cosmos.descriptors: %q, expected a file of the chain's descriptors (a FileDescriptorSet, as buf build -o writes)", s.Descriptors)
		}
	}
	seen := map[string]bool{"send": true, "multi_send": true, sdk.SetupKind: true}
	for i, k := range s.Messages {
		at := fmt.Sprintf("cosmos.messages[%d]", i)
		switch {
		case !kindName.MatchString(k.Kind):
			return fmt.Errorf("%s.kind: %q, expected a name of lower-case letters, digits and _ (up to 32)", at, k.Kind)
		case seen[k.Kind]:
			return fmt.Errorf("%s.kind: %q, expected a name no other kind has (send and multi_send are the bank's, setup is cosmos.setup's)", at, k.Kind)
		case len(k.Msgs) == 0:
			return fmt.Errorf("%s.msgs: empty, expected at least one message", at)
		}
		seen[k.Kind] = true
		if err := checkMessages(at+".msgs", k.Msgs); err != nil {
			return err
		}
	}
	return checkMessages("cosmos.setup", s.Setup)
}

// checkMessages checks each message's form.
func checkMessages(at string, ms []Message) error {
	for j, m := range ms {
		at := fmt.Sprintf("%s[%d]", at, j)
		if !typeURL.MatchString(m.TypeURL) {
			return fmt.Errorf("%s.type_url: %q, expected a message's type URL such as /cosmos.staking.v1beta1.MsgDelegate", at, m.TypeURL)
		}
		if !strings.HasPrefix(string(m.Fields), "{") {
			return fmt.Errorf("%s.fields: %q, expected the message's fields as a mapping", at, m.Fields)
		}
		if p := sdk.CheckTemplate(string(m.Fields)); p != "" {
			return fmt.Errorf("%s.fields: %s names nothing, expected one of {%s} or {choice:a|b}", at, p, strings.Join(sdk.Placeholders, "}, {"))
		}
	}
	return nil
}

// MessageSpecs are the messages of each kind, as the codec takes them;
// the set-up's under sdk.SetupKind.
func (s *Settings) MessageSpecs() map[string][]sdk.MsgSpec {
	out := map[string][]sdk.MsgSpec{}
	add := func(kind string, ms []Message) {
		for _, m := range ms {
			out[kind] = append(out[kind], sdk.MsgSpec{TypeURL: m.TypeURL, Fields: string(m.Fields)})
		}
	}
	for _, k := range s.Messages {
		add(k.Kind, k.Msgs)
	}
	add(sdk.SetupKind, s.Setup)
	return out
}

// validateNet checks what a network tpslab starts is created with.
func (s *Settings) validateNet() error {
	if !decimal.MatchString(s.FeeMarket.MinBaseGasPrice) {
		return fmt.Errorf("cosmos.fee_market.min_base_gas_price: %q, expected a decimal gas price of 0 or more, such as 1 or 0.005", s.FeeMarket.MinBaseGasPrice)
	}
	if u := s.FeeMarket.MaxBlockUtilization; u < 100_000 || u > 1<<53 {
		return fmt.Errorf("cosmos.fee_market.max_block_utilization: %d, expected 100000..%d gas per block", u, uint64(1)<<53)
	}
	if s.Denom != "" && !denomFormat.MatchString(s.Denom) {
		return fmt.Errorf("cosmos.denom: %q, expected a denom such as uatom (3..128 letters, digits, /:._-)", s.Denom)
	}
	return nil
}
