package evm

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/placeholder"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	eth "github.com/tpslab/tpslab/internal/targets/evm"
)

// Contract is one of a scenario's contracts: deployed at set-up from its
// artifact, or at Address (its ABI from the artifact).
type Contract struct {
	Name     string        `yaml:"name" json:"name"`
	Artifact string        `yaml:"artifact" json:"artifact" path:"file"` // solc, Hardhat or Foundry JSON (abi, bytecode), or an ABI; relative to the scenario file
	Address  string        `yaml:"address" json:"address,omitempty"`     // an existing contract: not deployed
	Args     []string      `yaml:"args" json:"args,omitempty"`           // the constructor's, templated
	Value    string        `yaml:"value" json:"value,omitempty"`         // wei sent with the deploy
	artifact *eth.Artifact // read by validate
}

// Call is one call of a contract's function: a kind of payment (calls) or
// a set-up step (setup, From funder or senders).
type Call struct {
	Kind     string   `yaml:"kind" json:"kind,omitempty"` // calls: the mix's name for it
	From     string   `yaml:"from" json:"from,omitempty"` // setup: funder (once) | senders (each sender once)
	Contract string   `yaml:"contract" json:"contract"`
	Function string   `yaml:"function" json:"function"` // its name, or signature when overloaded
	Args     []string `yaml:"args" json:"args,omitempty"`
	Value    string   `yaml:"value" json:"value,omitempty"` // wei, templated
	Gas      uint64   `yaml:"gas" json:"gas,omitempty"`     // 0: estimated (x1.3)
}

var callKind = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// builtinKinds are the kinds of payment the EVM kind signs itself.
var builtinKinds = []string{"send", "native", "erc20", "contract_call"}

// MixKinds are the scenario's calls' kinds.
func (Kind) MixKinds(sc *scenario.Scenario) []string {
	var out []string
	for _, c := range settingsOf(sc).Calls {
		out = append(out, c.Kind)
	}
	return out
}

// validateContracts checks the contracts and calls before any work: the
// artifacts are read, each function found, its arguments counted and their
// placeholders named.
func (s *Settings) validateContracts() error {
	names := map[string]*Contract{}
	for i := range s.Contracts {
		c := &s.Contracts[i]
		at := fmt.Sprintf("evm.contracts[%d]", i)
		if !callKind.MatchString(c.Name) || names[c.Name] != nil {
			return fmt.Errorf("%s.name: %q, expected a name of lower-case letters, digits and _, each contract its own", at, c.Name)
		}
		if c.Artifact == "" {
			return fmt.Errorf("%s.artifact: empty, expected the contract's JSON (abi and bytecode, as solc, Hardhat or Foundry write it)", at)
		}
		a, err := eth.ReadArtifact(c.Artifact)
		if err != nil {
			return fmt.Errorf("%s.artifact: %v", at, err)
		}
		c.artifact = a
		if c.Address != "" && !common.IsHexAddress(c.Address) {
			return fmt.Errorf("%s.address: %q, expected 0x and 40 hex digits", at, c.Address)
		}
		if c.Address == "" && len(a.Bytecode) == 0 {
			return fmt.Errorf("%s.artifact: %s has no bytecode to deploy, expected a compiled contract (or give address)", at, c.Artifact)
		}
		if c.Address == "" && len(c.Args) != len(a.ABI.Constructor.Inputs) {
			return fmt.Errorf("%s.args: %d given, expected %d for its constructor", at, len(c.Args), len(a.ABI.Constructor.Inputs))
		}
		if err := checkArgs(at, c.Args, names, []string{"contract"}); err != nil {
			return err
		}
		names[c.Name] = c
	}
	kinds := map[string]bool{}
	for i, c := range s.Calls {
		at := fmt.Sprintf("evm.calls[%d]", i)
		if !callKind.MatchString(c.Kind) || kinds[c.Kind] || slices.Contains(builtinKinds, c.Kind) {
			return fmt.Errorf("%s.kind: %q, expected a name of lower-case letters, digits and _ that no other kind has (%v are the EVM kind's)", at, c.Kind, builtinKinds)
		}
		kinds[c.Kind] = true
		if c.From != "" {
			return fmt.Errorf("%s.from: %q, expected none: a call in the load is from its payment's sender (from is for evm.setup)", at, c.From)
		}
		if err := c.check(at, names); err != nil {
			return err
		}
	}
	for i, c := range s.Setup {
		at := fmt.Sprintf("evm.setup[%d]", i)
		if c.From != "funder" && c.From != "senders" {
			return fmt.Errorf("%s.from: %q, expected funder (once) or senders (each sender once)", at, c.From)
		}
		if c.Kind != "" {
			return fmt.Errorf("%s.kind: %q, expected none: a set-up call is no payment", at, c.Kind)
		}
		if err := c.check(at, names); err != nil {
			return err
		}
	}
	return nil
}

func (c Call) check(at string, names map[string]*Contract) error {
	ct := names[c.Contract]
	if ct == nil {
		return fmt.Errorf("%s.contract: %q, expected one of evm.contracts' names", at, c.Contract)
	}
	m, err := eth.FindMethod(ct.artifact.ABI, c.Function)
	if err != nil {
		return fmt.Errorf("%s.function: %v", at, err)
	}
	if len(c.Args) != len(m.Inputs) {
		return fmt.Errorf("%s.args: %d given, expected %d for %s", at, len(c.Args), len(m.Inputs), m.Sig)
	}
	return checkArgs(at, append(slices.Clone(c.Args), c.Value), names, eth.CallPlaceholders)
}

// checkArgs checks each argument's placeholders: known, and a contract
// named one of names.
func checkArgs(at string, args []string, names map[string]*Contract, allowed []string) error {
	for _, a := range args {
		if p := placeholder.Unknown(a, allowed); p != "" {
			return fmt.Errorf("%s.args: %s names nothing here, expected one of {%s} or {choice:a|b}", at, p, strings.Join(allowed, "}, {"))
		}
		for _, p := range placeholder.Compile(a).Names() {
			if p.Name == "contract" && names[p.Arg] == nil {
				return fmt.Errorf("%s.args: {contract:%s} names no contract above it in evm.contracts", at, p.Arg)
			}
		}
	}
	return nil
}

// defaultCallGas is what a call reserves when the chain cannot estimate it
// (a call that reverts).
const defaultCallGas = 300_000

// setUpContracts deploys the scenario's contracts from funder, makes its
// calls the codec's kinds, runs the set-up, and estimates each kind's gas.
func setUpContracts(ctx context.Context, sys *kinds.System, sc *scenario.Scenario, codec *eth.Codec, sub sut.Submitter, funder eth.Wallet) error {
	s := settingsOf(sc)
	if len(s.Contracts) == 0 {
		return nil
	}
	if err := s.validateContracts(); err != nil { // the artifacts, read again in this process
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	start := time.Now()
	addrs := map[string]common.Address{}
	var d *eth.Deployer
	for i, c := range s.Contracts {
		if c.Address != "" {
			addrs[c.Name] = common.HexToAddress(c.Address)
			continue
		}
		if d == nil {
			var err error
			if d, err = eth.NewDeployer(ctx, codec, sub, funder); err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
		}
		args, err := constructorArgs(c, addrs)
		if err != nil {
			return exitcode.BadInputf("evm.contracts[%d].args: %v", i, err)
		}
		if addrs[c.Name], err = d.Deploy(ctx, c.artifact.Bytecode, args); err != nil {
			return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("deploy evm.contracts[%d] (%s): %w", i, c.Name, err))
		}
	}
	spec := func(c Call) (eth.CallSpec, error) {
		ct := s.contract(c.Contract)
		m, err := eth.FindMethod(ct.artifact.ABI, c.Function)
		return eth.CallSpec{To: addrs[c.Contract], Contract: c.Contract, Method: m, Args: c.Args, Value: c.Value}, err
	}
	for i, c := range s.Setup {
		sp, err := spec(c)
		if err == nil {
			err = codec.AddCall("setup", sp, max(c.Gas, defaultCallGas), addrs)
		}
		if err != nil {
			return exitcode.BadInputf("evm.setup[%d].%v", i, err)
		}
		if c.From == "funder" {
			if d == nil {
				if d, err = eth.NewDeployer(ctx, codec, sub, funder); err != nil {
					return exitcode.Wrap(exitcode.TargetFailed, err)
				}
			}
			to, data, value, err := codec.EncodeOnce("setup")
			if err == nil {
				err = d.Call(ctx, to, data, value)
			}
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("evm.setup[%d] (%s.%s from the funder): %w", i, c.Contract, c.Function, err))
			}
			continue
		}
		w := sc.Workload
		senders := make([]int, w.Senders)
		for j := range senders {
			senders[j] = w.SendersOffset + j
		}
		if err := codec.SetupCalls(ctx, sub, "setup", senders); err != nil {
			return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("evm.setup[%d]: %w", i, err))
		}
	}
	for i, c := range s.Calls {
		sp, err := spec(c)
		if err == nil {
			err = codec.AddCall(c.Kind, sp, max(c.Gas, 1), addrs)
		}
		if err != nil {
			return exitcode.BadInputf("evm.calls[%d].%v", i, err)
		}
		if c.Gas != 0 {
			continue
		}
		gas, why := uint64(defaultCallGas), ""
		if est, err := codec.EstimateCall(ctx, c.Kind, sc.Workload.SendersOffset); err != nil {
			why = fmt.Sprintf("not estimated (%v), so %d", err, gas)
		} else {
			gas = (uint64(math.Ceil(float64(est)*1.3)) + 999) / 1000 * 1000
			why = fmt.Sprintf("estimated at %d, so %d (x1.3)", est, gas)
		}
		codec.SetCallGas(c.Kind, gas)
		if sys.Note != nil {
			sys.Note(fmt.Sprintf("%s: %s.%s at %s; its gas %s", c.Kind, c.Contract, c.Function, addrs[c.Contract].Hex(), why))
		}
	}
	if sys.Note != nil {
		sys.Note(fmt.Sprintf("contracts: %d deployed or found and %d set-up step(s) made in %.1f s, before the load (not measured)", len(s.Contracts), len(s.Setup), time.Since(start).Seconds()))
	}
	return nil
}

func (s *Settings) contract(name string) *Contract {
	for i := range s.Contracts {
		if s.Contracts[i].Name == name {
			return &s.Contracts[i]
		}
	}
	return nil
}

// constructorArgs packs a deploy's arguments: literals and the addresses
// of contracts deployed before it.
func constructorArgs(c Contract, addrs map[string]common.Address) ([]byte, error) {
	in := c.artifact.ABI.Constructor.Inputs
	vals := make([]any, len(c.Args))
	for i, a := range c.Args {
		s := placeholder.Compile(a).String(func(p placeholder.Piece) string { return addrs[p.Arg].Hex() }, 0)
		v, err := eth.ArgValue(in[i].Type, s)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %v", i, err)
		}
		vals[i] = v
	}
	return in.Pack(vals...)
}

// needsFunder says the scenario deploys or sets up from the funder.
func (s *Settings) needsFunder() bool {
	for _, c := range s.Contracts {
		if c.Address == "" {
			return true
		}
	}
	for _, c := range s.Setup {
		if c.From == "funder" {
			return true
		}
	}
	return false
}
