package cosmos

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// The few Cosmos SDK messages a bank-send load needs, encoded field by field
// with protowire. Importing the SDK would pull some 300 modules into the
// load generator for four message types; and appending into reused buffers
// keeps the hot path free of allocations. The layouts are the SDK's
// (cosmos/tx/v1beta1/tx.proto, cosmos/bank/v1beta1/tx.proto, ...), fields in
// ascending order with minimal varints as ADR-027 requires; the real chain
// in the integration tests decodes and verifies every transaction.

const (
	typeMsgSend      = "/cosmos.bank.v1beta1.MsgSend"
	typeMsgMultiSend = "/cosmos.bank.v1beta1.MsgMultiSend"
	typeSecp256k1    = "/cosmos.crypto.secp256k1.PubKey"
	signModeDirect   = 1
	broadcastSync    = 2
)

func appendString(b []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, field protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendUint(b []byte, field protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendMessage appends a length-delimited sub-message built by f; scratch
// is reused for its body.
func appendMessage(b []byte, field protowire.Number, scratch *[]byte, f func([]byte) []byte) []byte {
	body := f((*scratch)[:0])
	*scratch = body
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, body)
}

// Coin is cosmos.base.v1beta1.Coin.
type Coin struct {
	Denom  string
	Amount string // decimal
}

func appendCoin(b []byte, field protowire.Number, c Coin) []byte {
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(c.Denom)) + protowire.SizeTag(2) + protowire.SizeBytes(len(c.Amount))
	b = protowire.AppendTag(b, field, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = appendString(b, 1, c.Denom)
	return appendString(b, 2, c.Amount)
}

// appendAny appends a google.protobuf.Any holding value of typeURL.
func appendAny(b []byte, field protowire.Number, typeURL string, value []byte) []byte {
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(typeURL)) + protowire.SizeTag(2) + protowire.SizeBytes(len(value))
	b = protowire.AppendTag(b, field, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = appendString(b, 1, typeURL)
	return appendBytes(b, 2, value)
}

// field is one decoded protobuf field.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	bytes []byte
	u     uint64
}

// fields decodes the top-level fields of a message.
func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(b)
		case protowire.Fixed64Type:
			f.u, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.u = uint64(v)
		default:
			return nil, fmt.Errorf("unsupported wire type %d", typ)
		}
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

func first(fs []field, num protowire.Number) (field, bool) {
	for _, f := range fs {
		if f.num == num {
			return f, true
		}
	}
	return field{}, false
}

// Account is the part of an auth account tpslab needs.
type Account struct {
	Address  string
	Number   uint64
	Sequence uint64
}

// decodeAccountResponse reads a cosmos.auth.v1beta1.QueryAccountResponse
// whose account is a BaseAccount (or a type embedding one as field 1).
func decodeAccountResponse(b []byte) (Account, error) {
	fs, err := fields(b)
	if err != nil {
		return Account{}, err
	}
	anyF, ok := first(fs, 1)
	if !ok {
		return Account{}, errors.New("no account in the answer")
	}
	afs, err := fields(anyF.bytes)
	if err != nil {
		return Account{}, err
	}
	val, _ := first(afs, 2)
	base, err := fields(val.bytes)
	if err != nil {
		return Account{}, err
	}
	// Module and vesting accounts embed the BaseAccount as their field 1
	// (a message, where a BaseAccount's field 1 is its address string).
	for depth := 0; depth < 3; depth++ {
		f, ok := first(base, 1)
		if !ok || isAddress(f.bytes) {
			break
		}
		if base, err = fields(f.bytes); err != nil {
			return Account{}, err
		}
	}
	var a Account
	for _, f := range base {
		switch f.num {
		case 1:
			a.Address = string(f.bytes)
		case 3:
			a.Number = f.u
		case 4:
			a.Sequence = f.u
		}
	}
	return a, nil
}

// isAddress says b reads as a bech32 address (hrp, '1', data).
func isAddress(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// decodeCoinResponse reads a response whose field 1 is a Coin (bank
// QueryBalanceResponse, QuerySupplyOfResponse).
func decodeCoinResponse(b []byte) (Coin, error) {
	fs, err := fields(b)
	if err != nil {
		return Coin{}, err
	}
	cf, ok := first(fs, 1)
	if !ok {
		return Coin{}, nil
	}
	cfs, err := fields(cf.bytes)
	if err != nil {
		return Coin{}, err
	}
	var c Coin
	for _, f := range cfs {
		switch f.num {
		case 1:
			c.Denom = string(f.bytes)
		case 2:
			c.Amount = string(f.bytes)
		}
	}
	return c, nil
}

// txResponse is the part of a cosmos.base.abci.v1beta1.TxResponse tpslab reads.
type txResponse struct {
	Code      uint32
	Codespace string
	RawLog    string
	TxHash    string
}

func decodeBroadcastResponse(b []byte) (txResponse, error) {
	fs, err := fields(b)
	if err != nil {
		return txResponse{}, err
	}
	tf, ok := first(fs, 1)
	if !ok {
		return txResponse{}, errors.New("no tx_response in the answer")
	}
	tfs, err := fields(tf.bytes)
	if err != nil {
		return txResponse{}, err
	}
	var r txResponse
	for _, f := range tfs {
		switch f.num {
		case 2:
			r.TxHash = string(f.bytes)
		case 3:
			r.Codespace = string(f.bytes)
		case 4:
			r.Code = uint32(f.u)
		case 6:
			r.RawLog = string(f.bytes)
		}
	}
	return r, nil
}

// Sender reads the first message's sender (from_address, or the first
// input of a MultiSend) of a TxRaw: for independent counts of what a run
// sent.
func Sender(tx []byte) (string, error) {
	fs, err := fields(tx)
	if err != nil {
		return "", err
	}
	body, ok := first(fs, 1)
	if !ok {
		return "", errors.New("no body")
	}
	bfs, err := fields(body.bytes)
	if err != nil {
		return "", err
	}
	msg, ok := first(bfs, 1)
	if !ok {
		return "", errors.New("no message")
	}
	afs, err := fields(msg.bytes)
	if err != nil {
		return "", err
	}
	typeURL, _ := first(afs, 1)
	val, _ := first(afs, 2)
	mfs, err := fields(val.bytes)
	if err != nil {
		return "", err
	}
	f, _ := first(mfs, 1)
	if string(typeURL.bytes) == typeMsgMultiSend {
		in, err := fields(f.bytes)
		if err != nil {
			return "", err
		}
		f, _ = first(in, 1)
	}
	return string(f.bytes), nil
}

// DecodePayment reads a TxRaw whose first message is a bank MsgSend or
// MsgMultiSend: its kind (send, multi_send), sender, (first) recipient and
// the amount of its first coin (paid to that recipient). ok is false for
// any other transaction.
func DecodePayment(tx []byte) (kind, from, to string, amount uint64, ok bool) {
	fs, err := fields(tx)
	if err != nil {
		return
	}
	body, _ := first(fs, 1)
	bfs, err := fields(body.bytes)
	if err != nil {
		return
	}
	msg, found := first(bfs, 1)
	if !found {
		return
	}
	afs, err := fields(msg.bytes)
	if err != nil {
		return
	}
	typeURL, _ := first(afs, 1)
	val, _ := first(afs, 2)
	mfs, err := fields(val.bytes)
	if err != nil {
		return
	}
	coinAmount := func(b []byte) (uint64, bool) {
		cfs, err := fields(b)
		if err != nil {
			return 0, false
		}
		a, _ := first(cfs, 2)
		v, err := strconv.ParseUint(string(a.bytes), 10, 64)
		return v, err == nil
	}
	switch string(typeURL.bytes) {
	case typeMsgSend:
		f, _ := first(mfs, 1)
		t, _ := first(mfs, 2)
		c, _ := first(mfs, 3)
		amount, ok = coinAmount(c.bytes)
		return "send", string(f.bytes), string(t.bytes), amount, ok
	case typeMsgMultiSend:
		in, _ := first(mfs, 1)
		out, _ := first(mfs, 2)
		ifs, err := fields(in.bytes)
		if err != nil {
			return
		}
		ofs, err := fields(out.bytes)
		if err != nil {
			return
		}
		f, _ := first(ifs, 1)
		t, _ := first(ofs, 1)
		c, _ := first(ofs, 2)
		amount, ok = coinAmount(c.bytes)
		return "multi_send", string(f.bytes), string(t.bytes), amount, ok
	}
	return
}
