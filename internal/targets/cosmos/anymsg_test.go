package cosmos

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// A message given by type URL and templated JSON is encoded through its
// descriptor: what the transaction carries decodes, with the generated
// type, to the values the placeholders stood for.
func TestOwnMessageEncodesItsPlaceholders(t *testing.T) {
	c := NewCodec("c", "stake", []Coin{{Denom: "stake", Amount: "1"}}, 100_000, "", DeriveWallets("t", 4, "cosmos"), nil)
	c.SetSenders(0, 3) // {next} and {prev} wrap within wallets 0..2
	// Any message the files hold serves: descriptor.proto's own.
	err := c.AddKind("field", []MsgSpec{{TypeURL: "/google.protobuf.FieldDescriptorProto",
		Fields: `{"name": "{sender}", "number": "{seq}", "json_name": "{choice:a|b c}", "type_name": "{recipient}/{amount}{denom}", "extendee": "{prev}", "default_value": "{next}"}`}},
		protoregistry.GlobalFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for nonce := uint64(0); nonce < 20; nonce++ {
		tx, ok := c.SignKind(nil, "field", 0, []int{2}, 7, nonce)
		if !ok {
			t.Fatal("SignKind refused the kind AddKind made")
		}
		fs, _ := fields(tx)
		body, _ := first(fs, 1)
		bfs, _ := fields(body.bytes)
		anyMsg, _ := first(bfs, 1)
		afs, _ := fields(anyMsg.bytes)
		typeURL, _ := first(afs, 1)
		value, _ := first(afs, 2)
		var got descriptorpb.FieldDescriptorProto
		if err := proto.Unmarshal(value.bytes, &got); err != nil || string(typeURL.bytes) != "/google.protobuf.FieldDescriptorProto" {
			t.Fatalf("the message %q: %v", typeURL.bytes, err)
		}
		if got.GetName() != c.Wallet(0).Address || got.GetNumber() != int32(nonce) || got.GetTypeName() != c.Wallet(2).Address+"/7stake" ||
			got.GetExtendee() != c.Wallet(2).Address || got.GetDefaultValue() != c.Wallet(1).Address {
			t.Errorf("nonce %d: decoded %v", nonce, &got)
		}
		seen[got.GetJsonName()] = true
	}
	if len(seen) != 2 || !seen["a"] || !seen["b c"] {
		t.Errorf("the choices drawn: %v, want both of a and b c", seen)
	}
	// A field the type lacks, and a value its field cannot take, are
	// refused when the kind is made, naming the message.
	for fields, want := range map[string]string{
		`{"nmae": "{sender}"}`:   "unknown field",
		`{"number": "{sender}"}`: "number",
	} {
		err := c.AddKind("bad", []MsgSpec{{TypeURL: "/google.protobuf.FieldDescriptorProto", Fields: fields}}, protoregistry.GlobalFiles, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "msgs[0].fields: ") {
			t.Errorf("%s: %v, want msgs[0].fields: … %s", fields, err, want)
		}
	}
	if err := c.AddKind("bad", []MsgSpec{{TypeURL: "/google.protobuf.NoSuch", Fields: `{}`}}, protoregistry.GlobalFiles, nil); err == nil || !strings.HasPrefix(err.Error(), "msgs[0].type_url: ") {
		t.Errorf("an unknown type: %v", err)
	}
	if p := CheckTemplate(`{"a": "{sender}", "b": {"c": "{validatr}"}}`); p != "{validatr}" {
		t.Errorf("CheckTemplate found %q, want {validatr}", p)
	}
}
