package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tpslab/tpslab/internal/placeholder"
)

// Any message of the chain's, given by its type URL and its fields as
// JSON with placeholders: encoded through the chain's own descriptors
// (protobuf's dynamic messages), signed like a bank send. The bank send
// keeps its hand-encoded path (proto.go): this one costs a JSON decode per
// message, which a message no one has compiled in cannot avoid.

// MsgSpec is one message of a custom kind, as a scenario gives it.
type MsgSpec struct {
	TypeURL string
	Fields  string // a JSON object; its strings may hold placeholders
}

// Placeholders a message's fields may name; {choice:a|b|c} picks one of
// its list.
// {next} and {prev} are the senders after and before this one (a grant's
// grantee at set-up, its granter in the load).
var Placeholders = []string{"sender", "recipient", "validator", "amount", "denom", "seq", "next", "prev"}

// CheckTemplate says which placeholder in s names nothing ("" when all
// name something).
func CheckTemplate(s string) string { return placeholder.Unknown(s, Placeholders) }

type compiledMsg struct {
	typeURL string
	desc    protoreflect.MessageDescriptor
	fields  placeholder.Template
	types   *dynamicpb.Types // resolves an Any's "@type" (MsgExec's messages)
}

// values are what one payment's placeholders stand for.
type values struct {
	sender, recipient, validator, amount, denom, next, prev string
	seq                                                     uint64
	pick                                                    uint64 // a choice's draw
}

// render writes the message's JSON for v.
func (m *compiledMsg) render(v values) []byte {
	return m.fields.Append(nil, func(p placeholder.Piece) string {
		switch p.Name {
		case "sender":
			return v.sender
		case "recipient":
			return v.recipient
		case "validator":
			return v.validator
		case "amount":
			return v.amount
		case "denom":
			return v.denom
		case "next":
			return v.next
		case "prev":
			return v.prev
		case "seq":
			return strconv.FormatUint(v.seq, 10)
		}
		return ""
	}, v.pick, jsonString)
}

// jsonString appends s escaped as inside a JSON string.
func jsonString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q[1:len(q)-1]...)
}

// encode is the message's protobuf bytes for v.
func (m *compiledMsg) encode(v values) ([]byte, error) {
	msg := dynamicpb.NewMessage(m.desc)
	if err := (protojson.UnmarshalOptions{Resolver: m.types}).Unmarshal(m.render(v), msg); err != nil {
		return nil, fmt.Errorf("%s: %v", m.typeURL, err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(msg)
}

func compile(spec MsgSpec, files *protoregistry.Files) (*compiledMsg, error) {
	name := strings.TrimPrefix(spec.TypeURL, "/")
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil, fmt.Errorf("type_url: %q, expected a message the chain's descriptors have", spec.TypeURL)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("type_url: %q names a %T, expected a message", spec.TypeURL, d)
	}
	m := &compiledMsg{typeURL: "/" + name, desc: md, types: dynamicpb.NewTypes(files), fields: placeholder.Compile(spec.Fields)}
	return m, nil
}

// Descriptors are the chain's protobuf files: from its reflection service
// (cosmos.reflection.v1, which SDK chains serve through ABCI queries), or
// from file, a FileDescriptorSet (buf build -o, protoc
// --descriptor_set_out) when given.
func Descriptors(ctx context.Context, query QueryFunc, file string) (*protoregistry.Files, error) {
	set := &descriptorpb.FileDescriptorSet{}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if err := proto.Unmarshal(b, set); err != nil {
			return nil, fmt.Errorf("%s: not a FileDescriptorSet: %v", file, err)
		}
	} else {
		b, err := query(ctx, "/cosmos.reflection.v1.ReflectionService/FileDescriptors", nil)
		if err != nil {
			return nil, fmt.Errorf("the chain's reflection service (cosmos.reflection.v1) does not answer: %v; give the descriptors as a file", err)
		}
		// FileDescriptorsResponse{files: [FileDescriptorProto]} is a
		// FileDescriptorSet on the wire (both: repeated field 1).
		if err := proto.Unmarshal(b, set); err != nil {
			return nil, fmt.Errorf("the reflection service's answer: %v", err)
		}
	}
	seen := map[string]bool{}
	var files []*descriptorpb.FileDescriptorProto
	for _, f := range set.File {
		if !seen[f.GetName()] {
			seen[f.GetName()] = true
			files = append(files, f)
		}
	}
	set.File = files
	return protodesc.FileOptions{AllowUnresolvable: true}.NewFiles(set)
}

// Validators are the chain's validators' operator addresses (its first
// hundred), what {validator} stands for.
func Validators(ctx context.Context, query QueryFunc) ([]string, error) {
	b, err := query(ctx, "/cosmos.staking.v1beta1.Query/Validators", nil)
	if err != nil {
		return nil, err
	}
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fs {
		if f.num != 1 {
			continue
		}
		vf, err := fields(f.bytes)
		if err != nil {
			return nil, err
		}
		if a, ok := first(vf, 1); ok {
			out = append(out, string(a.bytes))
		}
	}
	return out, nil
}

// AddKind makes kind a mix's kind of payment: a transaction of specs'
// messages, in order. validators fill {validator}.
func (c *Codec) AddKind(kind string, specs []MsgSpec, files *protoregistry.Files, validators []string) error {
	var ms []*compiledMsg
	for i, s := range specs {
		m, err := compile(s, files)
		if err != nil {
			return fmt.Errorf("msgs[%d].%v", i, err)
		}
		// Every field must be the message's and take what its placeholders
		// stand for: real addresses and numbers, each choice in turn.
		for pick := range m.fields.Choices() {
			if _, err := m.encode(c.valuesFor(0, []int{1 % len(c.wallets)}, 1, 0, uint64(pick), validators)); err != nil {
				return fmt.Errorf("msgs[%d].fields: %v", i, err)
			}
		}
		ms = append(ms, m)
	}
	if c.custom == nil {
		c.custom = map[string][]*compiledMsg{}
	}
	c.custom[kind] = ms
	c.validators = validators
	return nil
}

// valuesFor are a payment's placeholders' values.
func (c *Codec) valuesFor(from int, to []int, amount, nonce, pick uint64, validators []string) values {
	v := values{sender: c.wallets[from].Address, amount: strconv.FormatUint(amount, 10), denom: c.Denom, seq: nonce, pick: pick,
		next: c.wallets[c.step(from, 1)].Address, prev: c.wallets[c.step(from, -1)].Address}
	if len(to) > 0 {
		v.recipient = c.wallets[to[0]].Address
	}
	if len(validators) > 0 {
		v.validator = validators[pick%uint64(len(validators))]
	}
	return v
}

// signCustom appends a signed transaction of kind's messages, when kind is
// one AddKind made.
func (c *Codec) signCustom(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool) {
	ms, ok := c.custom[kind]
	if !ok {
		return dst, false
	}
	gas, fee := c.gasFor(nonce)
	if g := c.kindGas[kind]; g > 0 {
		// The kind's own reservation; a sender's first payment, which also
		// stores its key, at least what a first bank send reserves.
		if nonce == 0 {
			g = max(g, c.FirstGas)
		}
		gas, fee = g, scaleFee(c.fee(), g, c.Gas)
	}
	return c.customTx(dst, kind, ms, from, to, amount, nonce, gas, fee), true
}

// SetKindGas sets what a kind AddKind made reserves (0: the bank send's).
func (c *Codec) SetKindGas(kind string, gas uint64) {
	if c.kindGas == nil {
		c.kindGas = map[string]uint64{}
	}
	c.kindGas[kind] = gas
}

// customTx signs ms for a payment reserving gas.
func (c *Codec) customTx(dst []byte, kind string, ms []*compiledMsg, from int, to []int, amount, nonce, gas uint64, fee []Coin) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", from, nonce)
	v := c.valuesFor(from, to, amount, nonce, h.Sum64(), c.validators)
	s := c.scratch.Get().(*scratch)
	defer c.scratch.Put(s)
	s.body = s.body[:0]
	for _, m := range ms {
		b, err := m.encode(v)
		if err != nil {
			// Unreachable: AddKind encoded every field with values of each
			// kind a placeholder takes, and each choice.
			panic(fmt.Errorf("cosmos.messages.%s: %v", kind, err))
		}
		s.body = appendAny(s.body, 1, m.typeURL, b)
	}
	return c.signBody(dst, s, c.wallets[from], c.numbers[from].Load(), nonce, gas, fee)
}
