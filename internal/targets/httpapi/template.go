package httpapi

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Fields are the parts of a signed payment a request template can name.
// The slices alias the transaction's bytes.
type Fields struct {
	ChainID   []byte
	Sender    []byte // the sender's address
	SenderPub []byte // the sender's public key
	Recipient []byte // the recipient's address
	Amount    uint64
	Sequence  uint64
	Signature []byte
}

// Decoder reads a transaction's fields into f; the kind's codec provides it.
type Decoder func(tx []byte, f *Fields) error

// placeholder is what a {{name}} in a template stands for.
type placeholder uint8

const (
	literal placeholder = iota
	phSender
	phSenderPub
	phRecipient
	phAmount
	phSequence
	phSignature
	phIdempotencyKey
	phTx
	phTxHex
	phChainID
	phCallbackURL
	phID
)

// Placeholders are the names a template may use, for error messages and docs.
var Placeholders = map[string]placeholder{
	"sender": phSender, "sender_pubkey": phSenderPub, "recipient": phRecipient, "amount": phAmount, "sequence": phSequence,
	"signature": phSignature, "idempotency_key": phIdempotencyKey, "tx": phTx, "tx_hex": phTxHex, "chain_id": phChainID,
	"callback_url": phCallbackURL, "id": phID,
}

func placeholderNames() string {
	return "sender, sender_pubkey, recipient, amount, sequence, signature, idempotency_key, tx, tx_hex, chain_id, callback_url (and id in a poll path)"
}

type segment struct {
	ph  placeholder
	lit string
}

// Template is a request part with {{placeholders}}, parsed once so that
// filling it only appends (no allocation when the buffer has room).
type Template []segment

// ParseTemplate parses s; field names the scenario field for errors.
// allowID permits {{id}} (poll paths only).
func ParseTemplate(field, s string, allowID bool) (Template, error) {
	var t Template
	for len(s) > 0 {
		i := strings.Index(s, "{{")
		if i < 0 {
			t = append(t, segment{lit: s})
			break
		}
		if i > 0 {
			t = append(t, segment{lit: s[:i]})
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("%s: %q has an unclosed {{, expected {{name}}", field, s)
		}
		name := strings.TrimSpace(s[i+2 : i+j])
		ph, ok := Placeholders[name]
		if !ok || (ph == phID && !allowID) {
			return nil, fmt.Errorf("%s: unknown placeholder {{%s}}, expected one of %s", field, name, placeholderNames())
		}
		t = append(t, segment{ph: ph})
		s = s[i+j+2:]
	}
	return t, nil
}

// Uses says whether the template names ph.
func (t Template) Uses(ph placeholder) bool {
	for _, s := range t {
		if s.ph == ph {
			return true
		}
	}
	return false
}

// values is what one request fills a template with.
type values struct {
	f        *Fields
	tx       []byte
	key      []byte // the idempotency key (the transaction id)
	callback string
	id       string // the system's payment id (poll paths)
}

// Append appends the filled template to dst. Strings that may hold any
// byte (the chain id) are escaped for a JSON string.
func (t Template) Append(dst []byte, v *values) []byte {
	for _, s := range t {
		switch s.ph {
		case literal:
			dst = append(dst, s.lit...)
		case phSender:
			dst = hex.AppendEncode(dst, v.f.Sender)
		case phSenderPub:
			dst = hex.AppendEncode(dst, v.f.SenderPub)
		case phRecipient:
			dst = hex.AppendEncode(dst, v.f.Recipient)
		case phAmount:
			dst = strconv.AppendUint(dst, v.f.Amount, 10)
		case phSequence:
			dst = strconv.AppendUint(dst, v.f.Sequence, 10)
		case phSignature:
			dst = hex.AppendEncode(dst, v.f.Signature)
		case phIdempotencyKey:
			dst = hex.AppendEncode(dst, v.key)
		case phTx:
			dst = base64.StdEncoding.AppendEncode(dst, v.tx)
		case phTxHex:
			dst = hex.AppendEncode(dst, v.tx)
		case phChainID:
			dst = appendEscaped(dst, v.f.ChainID)
		case phCallbackURL:
			dst = append(dst, v.callback...)
		case phID:
			dst = append(dst, v.id...)
		}
	}
	return dst
}

func appendEscaped(dst, s []byte) []byte {
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, fmt.Sprintf(`\u%04x`, c)...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
