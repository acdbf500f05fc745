package evm

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tpslab/tpslab/internal/placeholder"
	"github.com/tpslab/tpslab/internal/sut"
)

// Any contract's calls as kinds of payment: the contract given by its
// compiled artifact (the JSON solc, Hardhat and Foundry write) or by
// address and ABI, its functions' arguments templated, encoded with
// go-ethereum's accounts/abi.

// Artifact is a compiled contract: its ABI and creation code.
type Artifact struct {
	ABI      abi.ABI
	Bytecode []byte
}

// ReadArtifact reads a contract's JSON: Hardhat's ({abi, bytecode: "0x…"}),
// Foundry's ({abi, bytecode: {object}}), solc's standard output for one
// contract ({abi, evm: {bytecode: {object}}}), or a bare ABI (a list; no
// bytecode, for a contract by address).
func ReadArtifact(path string) (*Artifact, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		ABI      json.RawMessage `json:"abi"`
		Bytecode json.RawMessage `json:"bytecode"`
		EVM      struct {
			Bytecode struct {
				Object string `json:"object"`
			} `json:"bytecode"`
		} `json:"evm"`
	}
	if len(b) > 0 && strings.TrimSpace(string(b))[0] == '[' {
		doc.ABI = b
	} else if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a contract's JSON: %v", path, err)
	}
	if len(doc.ABI) == 0 {
		return nil, fmt.Errorf("%s: no abi, expected a compiled contract's JSON (solc, Hardhat, Foundry) or an ABI", path)
	}
	a, err := abi.JSON(strings.NewReader(string(doc.ABI)))
	if err != nil {
		return nil, fmt.Errorf("%s: its abi: %v", path, err)
	}
	code := doc.EVM.Bytecode.Object
	if len(doc.Bytecode) > 0 {
		var s string
		var o struct {
			Object string `json:"object"`
		}
		if json.Unmarshal(doc.Bytecode, &s) == nil {
			code = s
		} else if json.Unmarshal(doc.Bytecode, &o) == nil {
			code = o.Object
		}
	}
	bc, err := hex.DecodeString(strings.TrimPrefix(code, "0x"))
	if err != nil {
		return nil, fmt.Errorf("%s: its bytecode is not hex (unlinked libraries?): %v", path, err)
	}
	return &Artifact{ABI: a, Bytecode: bc}, nil
}

// CallPlaceholders are what a call's arguments may name; {contract:NAME}
// is a scenario's contract's address, {choice:a|b} one of a list.
var CallPlaceholders = []string{"sender", "recipient", "amount", "seq", "next", "prev", "contract"}

// CallSpec is one call, as a scenario gives it.
type CallSpec struct {
	To       common.Address
	Contract string // its name, for messages
	Method   abi.Method
	Args     []string // templated
	Value    string   // wei, templated
}

// call is a CallSpec compiled.
type call struct {
	to        common.Address
	contract  string
	method    abi.Method
	args      []placeholder.Template
	value     placeholder.Template
	gas       uint64
	contracts map[string]common.Address
}

// FindMethod is the ABI's function named name, or given by its signature
// (transfer(address,uint256)) when the name is overloaded.
func FindMethod(a abi.ABI, name string) (abi.Method, error) {
	if m, ok := a.Methods[name]; ok {
		return m, nil
	}
	var names []string
	for _, m := range a.Methods {
		if m.Sig == strings.ReplaceAll(name, " ", "") {
			return m, nil
		}
		names = append(names, m.Sig)
	}
	return abi.Method{}, fmt.Errorf("%q, expected a function of its ABI (%s)", name, strings.Join(names, ", "))
}

// AddCall makes kind a mix's kind of payment: the call spec, reserving gas;
// contracts are the scenario's contracts' addresses ({contract:NAME}).
// Every argument is encoded once with its placeholders' values from the
// first sender, each choice in turn: a value its type cannot take is
// refused here.
func (c *Codec) AddCall(kind string, s CallSpec, gas uint64, contracts map[string]common.Address) error {
	if len(s.Args) != len(s.Method.Inputs) {
		return fmt.Errorf("args: %d given, expected %d for %s", len(s.Args), len(s.Method.Inputs), s.Method.Sig)
	}
	k := &call{to: s.To, contract: s.Contract, method: s.Method, gas: gas, contracts: contracts, value: placeholder.Compile(cmpOr(s.Value, "0"))}
	choices := k.value.Choices()
	for _, a := range s.Args {
		t := placeholder.Compile(a)
		for _, p := range t.Names() {
			if _, ok := contracts[p.Arg]; p.Name == "contract" && !ok {
				return fmt.Errorf("args: %s names no contract of evm.contracts", a)
			}
		}
		k.args = append(k.args, t)
		choices = max(choices, t.Choices())
	}
	for pick := range choices {
		if _, _, err := k.encode(c, 0, []int{1 % len(c.wallets)}, 1, 0, uint64(pick)); err != nil {
			return err
		}
	}
	if c.calls == nil {
		c.calls = map[string]*call{}
	}
	c.calls[kind] = k
	return nil
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// SetSenders says which wallets send, for {next} and {prev}.
func (c *Codec) SetSenders(offset, n int) { c.sendOffset, c.sendCount = offset, n }

func (c *Codec) step(from, d int) int {
	if c.sendCount <= 0 {
		return (from + d + len(c.wallets)) % len(c.wallets)
	}
	return c.sendOffset + ((from-c.sendOffset+d)%c.sendCount+c.sendCount)%c.sendCount
}

// encode is the call's data and value for one payment.
func (k *call) encode(c *Codec, from int, to []int, amount, nonce, pick uint64) ([]byte, *big.Int, error) {
	value := func(p placeholder.Piece) string {
		switch p.Name {
		case "sender":
			return c.wallets[from].Address.Hex()
		case "recipient":
			if len(to) > 0 {
				return c.wallets[to[0]].Address.Hex()
			}
		case "amount":
			return strconv.FormatUint(amount, 10)
		case "seq":
			return strconv.FormatUint(nonce, 10)
		case "next":
			return c.wallets[c.step(from, 1)].Address.Hex()
		case "prev":
			return c.wallets[c.step(from, -1)].Address.Hex()
		case "contract":
			return k.contracts[p.Arg].Hex()
		}
		return ""
	}
	args := make([]any, len(k.args))
	for i, t := range k.args {
		in := k.method.Inputs[i]
		v, err := ArgValue(in.Type, t.String(value, pick))
		if err != nil {
			return nil, nil, fmt.Errorf("args[%d] (%s %s): %v", i, in.Type.String(), in.Name, err)
		}
		args[i] = v
	}
	packed, err := k.method.Inputs.Pack(args...)
	if err != nil {
		return nil, nil, fmt.Errorf("args: %v", err)
	}
	wei, ok := new(big.Int).SetString(k.value.String(value, pick), 10)
	if !ok || wei.Sign() < 0 {
		return nil, nil, fmt.Errorf("value: %q, expected wei, a whole number of 0 or more", k.value.String(value, pick))
	}
	return append(append([]byte{}, k.method.ID...), packed...), wei, nil
}

// signCall appends a payment of a kind AddCall made.
func (c *Codec) signCall(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool) {
	k, ok := c.calls[kind]
	if !ok {
		return dst, false
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", from, nonce)
	data, value, err := k.encode(c, from, to, amount, nonce, h.Sum64())
	if err != nil {
		// Unreachable: AddCall encoded every argument with values of each
		// kind a placeholder takes, and each choice.
		panic(fmt.Errorf("evm.calls %s: %v", kind, err))
	}
	return c.appendCall(dst, from, k.to, value, data, k.gas, nonce), true
}

// ArgValue is s as a value of ABI type t, as accounts/abi packs it:
// addresses in hex, integers in decimal (or 1e18), bools, strings, bytes
// in hex, arrays as JSON lists of such.
func ArgValue(t abi.Type, s string) (any, error) {
	switch t.T {
	case abi.AddressTy:
		if !common.IsHexAddress(s) {
			return nil, fmt.Errorf("%q, expected an address (0x and 40 hex digits)", s)
		}
		return common.HexToAddress(s), nil
	case abi.UintTy, abi.IntTy:
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			f, _, err := big.ParseFloat(s, 10, 256, big.ToNearestEven)
			if err != nil || !f.IsInt() {
				return nil, fmt.Errorf("%q, expected a whole number", s)
			}
			n, _ = f.Int(nil)
		}
		if t.T == abi.UintTy && n.Sign() < 0 || n.BitLen() > t.Size {
			return nil, fmt.Errorf("%s out of range for %s", s, t.String())
		}
		if t.Size > 64 {
			return n, nil
		}
		rv := reflect.New(t.GetType()).Elem()
		if t.T == abi.UintTy {
			rv.SetUint(n.Uint64())
		} else {
			rv.SetInt(n.Int64())
		}
		return rv.Interface(), nil
	case abi.BoolTy:
		return strconv.ParseBool(s)
	case abi.StringTy:
		return s, nil
	case abi.BytesTy, abi.FixedBytesTy:
		b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
		if err != nil {
			return nil, fmt.Errorf("%q, expected hex bytes", s)
		}
		if t.T == abi.BytesTy {
			return b, nil
		}
		if len(b) != t.Size {
			return nil, fmt.Errorf("%q: %d bytes, expected %d", s, len(b), t.Size)
		}
		rv := reflect.New(t.GetType()).Elem()
		reflect.Copy(rv, reflect.ValueOf(b))
		return rv.Interface(), nil
	case abi.SliceTy, abi.ArrayTy:
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(s), &items); err != nil {
			return nil, fmt.Errorf("%q, expected a JSON list for %s", s, t.String())
		}
		if t.T == abi.ArrayTy && len(items) != t.Size {
			return nil, fmt.Errorf("%d items, expected %d for %s", len(items), t.Size, t.String())
		}
		rv := reflect.MakeSlice(reflect.SliceOf(t.Elem.GetType()), len(items), len(items))
		if t.T == abi.ArrayTy {
			rv = reflect.New(t.GetType()).Elem()
		}
		for i, it := range items {
			var str string
			if json.Unmarshal(it, &str) != nil {
				str = string(it) // a number or a nested list, as written
			}
			v, err := ArgValue(*t.Elem, str)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %v", i, err)
			}
			rv.Index(i).Set(reflect.ValueOf(v))
		}
		return rv.Interface(), nil
	}
	return nil, fmt.Errorf("arguments of type %s are not supported (addresses, integers, bools, strings, bytes and lists of them are)", t.String())
}

// EstimateCall asks the chain what a payment of kind from wallet from
// would use (eth_estimateGas); a call that would revert says why.
func (c *Codec) EstimateCall(ctx context.Context, kind string, from int) (uint64, error) {
	k, ok := c.calls[kind]
	if !ok {
		return 0, fmt.Errorf("no kind %q", kind)
	}
	data, value, err := k.encode(c, from, []int{c.step(from, 1)}, 1, 0, 0)
	if err != nil {
		return 0, err
	}
	var out string
	err = c.rpc.Call(ctx, &out, "eth_estimateGas", map[string]string{"from": c.wallets[from].Address.Hex(), "to": k.to.Hex(),
		"data": "0x" + hex.EncodeToString(data), "value": "0x" + value.Text(16)})
	if err != nil {
		return 0, revertError(err)
	}
	return strconv.ParseUint(strings.TrimPrefix(out, "0x"), 16, 64)
}

// SetCallGas sets what a kind's payments reserve.
func (c *Codec) SetCallGas(kind string, gas uint64) { c.calls[kind].gas = gas }

// revertError names a revert's reason (Error(string)) when the node gave
// its data.
func revertError(err error) error {
	var re *rpcError
	if errors.As(err, &re) && len(re.Data) > 0 {
		var data string
		if json.Unmarshal(re.Data, &data) == nil {
			if b, herr := hex.DecodeString(strings.TrimPrefix(data, "0x")); herr == nil {
				if reason, uerr := abi.UnpackRevert(b); uerr == nil {
					return fmt.Errorf("reverted: %s", reason)
				}
			}
		}
	}
	return err
}

// Deployer sends a funder's calls and deploys, one at a time, each waited
// for and checked (a reverted one is an error).
type Deployer struct {
	f *funding
}

// NewDeployer sends from funder.
func NewDeployer(ctx context.Context, c *Codec, sub sut.Submitter, funder Wallet) (*Deployer, error) {
	f, err := newFunding(ctx, c, sub, funder)
	if err != nil {
		return nil, err
	}
	return &Deployer{f: f}, nil
}

// Deploy deploys code with its constructor's arguments packed, and returns
// its address.
func (d *Deployer) Deploy(ctx context.Context, code, args []byte) (common.Address, error) {
	addr := crypto.CreateAddress(d.f.funder.Address, d.f.nonce)
	if err := d.f.send(ctx, nil, new(big.Int), append(append([]byte{}, code...), args...), 8_000_000); err != nil {
		return addr, err
	}
	_, err := d.f.wait(ctx)
	return addr, err
}

// Call sends one call and waits for it.
func (d *Deployer) Call(ctx context.Context, to common.Address, data []byte, value *big.Int) error {
	if err := d.f.send(ctx, &to, value, data, 2_000_000); err != nil {
		return err
	}
	_, err := d.f.wait(ctx)
	return err
}

// SetupCalls sends kind's call from each of senders (one each, not
// measured) and waits until each is mined with status 1.
func (c *Codec) SetupCalls(ctx context.Context, sub sut.Submitter, kind string, senders []int) error {
	k := c.calls[kind]
	hashes := map[string]int{}
	for _, from := range senders {
		nonce, err := c.Nonce(ctx, from)
		if err != nil {
			return err
		}
		data, value, err := k.encode(c, from, []int{c.step(from, 1)}, 1, nonce, 0)
		if err != nil {
			return err
		}
		raw := c.appendCall(nil, from, k.to, value, data, k.gas, nonce)
		if r := sub.Submit(ctx, sut.Tx{ID: c.ID(raw), Bytes: raw}); r.Status != sut.Pending && r.Status != sut.Committed {
			return fmt.Errorf("sender %d's %s was refused: %s: %s", from, k.method.Sig, r.Reason, r.Detail)
		}
		hashes["0x"+hex.EncodeToString(crypto.Keccak256(raw))] = from
	}
	moved := time.Now()
	for len(hashes) > 0 {
		for h, from := range hashes {
			r, err := c.rpc.Receipt(ctx, h)
			if err != nil || r == nil {
				continue
			}
			if r.Status != 1 {
				return fmt.Errorf("sender %d's %s of %s reverted (transaction %s)", from, k.method.Sig, k.contract, h)
			}
			delete(hashes, h)
			moved = time.Now()
		}
		if len(hashes) == 0 {
			break
		}
		if time.Since(moved) > 2*time.Minute || ctx.Err() != nil {
			return fmt.Errorf("%d set-up calls of %s not mined after 2 minutes", len(hashes), k.method.Sig)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// EncodeOnce is kind's call data and value for the funder's set-up: the
// placeholders take the first sender's values.
func (c *Codec) EncodeOnce(kind string) (common.Address, []byte, *big.Int, error) {
	k := c.calls[kind]
	data, value, err := k.encode(c, 0, []int{1 % len(c.wallets)}, 1, 0, 0)
	return k.to, data, value, err
}
