// Package cosmos is the target for Cosmos SDK chains: x/bank MsgSend
// transfers signed with secp256k1 in SIGN_MODE_DIRECT, broadcast over the
// CometBFT RPC, the REST endpoint or gRPC, and confirmed from the chain's
// CometBFT blocks exactly as for any CometBFT chain.
package cosmos

import (
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// QueryFunc runs an ABCI query (a gRPC query path, protobuf request and
// answer) against the chain.
type QueryFunc func(ctx context.Context, path string, data []byte) ([]byte, error)

// Codec signs bank sends between test wallets; it is the Cosmos workload's
// codec.
type Codec struct {
	ChainID string
	Denom   string
	Gas     uint64
	// FirstGas, when above Gas, is what a sender's first payment (sequence
	// 0) reserves: it also stores the sender's public key.
	FirstGas uint64
	Memo     string
	wallets  []Wallet
	numbers  []atomic.Uint64 // account numbers, learnt with the sequences
	known    []atomic.Bool
	query    QueryFunc
	scratch  sync.Pool
	size     int
	// fees is what a payment pays: fixed, or the chain's price (pricing).
	fees    atomic.Pointer[[]Coin]
	pricing *pricing
	// custom are the mix's kinds of the chain's own messages (AddKind).
	custom     map[string][]*compiledMsg
	kindGas    map[string]uint64 // what each reserves (SetKindGas)
	validators []string
	// sendOffset and sendCount are the senders' range ({next}, {prev}).
	sendOffset, sendCount int
}

// NewCodec signs for wallets on chainID.
func NewCodec(chainID, denom string, fee []Coin, gas uint64, memo string, wallets []Wallet, query QueryFunc) *Codec {
	c := &Codec{ChainID: chainID, Denom: denom, Gas: gas, Memo: memo, wallets: wallets,
		numbers: make([]atomic.Uint64, len(wallets)), known: make([]atomic.Bool, len(wallets)), query: query}
	c.fees.Store(&fee)
	c.scratch.New = func() any { return &scratch{} }
	if len(wallets) > 1 {
		c.size = len(c.Sign(nil, 0, 1, 1, 0))
	}
	return c
}

type scratch struct {
	msg, body, auth, doc, sub, sub2 []byte
	chainID                         string // "" : the codec's; another signs for another chain (invalid on purpose)
	memo                            string // "": the codec's; another makes an oversized payment (invalid on purpose)
}

// Accounts is the number of test wallets.
func (c *Codec) Accounts() int { return len(c.wallets) }

// Wallet is test wallet i.
func (c *Codec) Wallet(i int) Wallet { return c.wallets[i] }

// TxSize is the length of one signed send.
func (c *Codec) TxSize() int { return c.size }

// ID is CometBFT's transaction id: sha256 of the bytes.
func (c *Codec) ID(tx []byte) sut.TxID { return sha256.Sum256(tx) }

// Sign appends a signed MsgSend of amount from wallet from to wallet to.
func (c *Codec) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	s := c.scratch.Get().(*scratch)
	defer c.scratch.Put(s)
	w := c.wallets[from]
	var num [20]byte
	amt := strconv.AppendUint(num[:0], amount, 10)
	c.msgSend(s, w, to, string(amt))
	gas, fee := c.gasFor(nonce)
	return c.signTx(dst, s, typeMsgSend, w, c.numbers[from].Load(), nonce, gas, fee)
}

// msgSend writes into s.msg a MsgSend{from_address, to_address, amount}
// of amount from w to wallet to.
func (c *Codec) msgSend(s *scratch, w Wallet, to int, amount string) {
	s.msg = appendString(s.msg[:0], 1, w.Address)
	s.msg = appendString(s.msg, 2, c.wallets[to].Address)
	s.msg = appendCoin(s.msg, 3, Coin{Denom: c.Denom, Amount: amount})
}

// gasFor is the gas and fee of a payment at sequence nonce: a sender's
// first (nonce 0) reserves FirstGas, with its fee scaled to it.
func (c *Codec) gasFor(nonce uint64) (uint64, []Coin) {
	if nonce == 0 && c.FirstGas > c.Gas && c.Gas > 0 {
		return c.FirstGas, scaleFee(c.fee(), c.FirstGas, c.Gas)
	}
	return c.Gas, c.fee()
}

// signTx wraps msg (of typeURL, in s.msg) in a TxBody, signs it for w and
// appends the TxRaw.
func (c *Codec) signTx(dst []byte, s *scratch, typeURL string, w Wallet, accountNumber, sequence, gas uint64, fee []Coin) []byte {
	s.body = appendAny(s.body[:0], 1, typeURL, s.msg)
	return c.signBody(dst, s, w, accountNumber, sequence, gas, fee)
}

// signBody signs the messages in s.body (TxBody's field 1, each an Any)
// for w and appends the TxRaw.
func (c *Codec) signBody(dst []byte, s *scratch, w Wallet, accountNumber, sequence, gas uint64, fee []Coin) []byte {
	// TxBody{messages: [Any], memo}
	memo := c.Memo
	if s.memo != "" {
		memo = s.memo
	}
	s.body = appendString(s.body, 2, memo)
	// AuthInfo{signer_infos: [SignerInfo{public_key, mode_info, sequence}], fee}
	s.auth = appendMessage(s.auth[:0], 1, &s.sub, func(b []byte) []byte {
		s.sub2 = appendBytes(s.sub2[:0], 1, w.PubKey) // secp256k1.PubKey{key}
		b = appendAny(b, 1, typeSecp256k1, s.sub2)
		// ModeInfo{single: {mode: DIRECT}}
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendVarint(b, 4)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, 2)
		b = appendUint(b, 1, signModeDirect)
		return appendUint(b, 3, sequence)
	})
	s.auth = appendMessage(s.auth, 2, &s.sub, func(b []byte) []byte {
		for _, f := range fee {
			b = appendCoin(b, 1, f)
		}
		return appendUint(b, 2, gas)
	})
	// SignDoc{body_bytes, auth_info_bytes, chain_id, account_number}
	s.doc = appendBytes(s.doc[:0], 1, s.body)
	s.doc = appendBytes(s.doc, 2, s.auth)
	chainID := c.ChainID
	if s.chainID != "" {
		chainID = s.chainID
	}
	s.doc = appendString(s.doc, 3, chainID)
	s.doc = appendUint(s.doc, 4, accountNumber)
	sig, err := w.Key.Sign(s.doc)
	if err != nil {
		panic(fmt.Errorf("secp256k1 sign: %w", err)) // only fails on a malformed key, which DeriveWallet never makes
	}
	// TxRaw{body_bytes, auth_info_bytes, signatures}
	dst = appendBytes(dst, 1, s.body)
	dst = appendBytes(dst, 2, s.auth)
	return appendBytes(dst, 3, sig)
}

// Account reads wallet i's account from the chain.
func (c *Codec) Account(ctx context.Context, address string) (Account, error) {
	req := appendString(nil, 1, address)
	v, err := c.query(ctx, "/cosmos.auth.v1beta1.Query/Account", req)
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return Account{}, fmt.Errorf("account %s does not exist on the chain (it was never funded)", address)
		}
		return Account{}, err
	}
	return decodeAccountResponse(v)
}

// Nonce reads wallet from's sequence (and learns its account number, which
// SIGN_MODE_DIRECT signs).
func (c *Codec) Nonce(ctx context.Context, from int) (uint64, error) {
	a, err := c.Account(ctx, c.wallets[from].Address)
	if err != nil {
		return 0, err
	}
	c.numbers[from].Store(a.Number)
	c.known[from].Store(true)
	return a.Sequence, nil
}

var expectedSeq = regexp.MustCompile(`expected (\d+)`)

// Mismatch reads the SDK's sequence rejection: "account sequence mismatch,
// expected 5, got 7: incorrect account sequence".
func (c *Codec) Mismatch(r sut.Receipt) (bool, uint64, bool) {
	if r.Reason != "sequence_mismatch" {
		return false, 0, false
	}
	m := expectedSeq.FindStringSubmatch(r.Detail)
	if m == nil {
		return true, 0, false
	}
	e, err := strconv.ParseUint(m[1], 10, 64)
	return true, e, err == nil
}

// Balance reads address's balance of denom.
func Balance(ctx context.Context, query QueryFunc, address, denom string) (uint64, error) {
	req := appendString(appendString(nil, 1, address), 2, denom)
	v, err := query(ctx, "/cosmos.bank.v1beta1.Query/Balance", req)
	if err != nil {
		return 0, err
	}
	c, err := decodeCoinResponse(v)
	if err != nil || c.Amount == "" {
		return 0, err
	}
	return strconv.ParseUint(c.Amount, 10, 64)
}

// Supply reads the total supply of denom, as a decimal string.
func Supply(ctx context.Context, query QueryFunc, denom string) (string, error) {
	v, err := query(ctx, "/cosmos.bank.v1beta1.Query/SupplyOf", appendString(nil, 1, denom))
	if err != nil {
		return "", err
	}
	c, err := decodeCoinResponse(v)
	if c.Amount == "" {
		c.Amount = "0"
	}
	return c.Amount, err
}

// sdkCodes names the Cosmos SDK's own errors (codespace "sdk",
// types/errors/errors.go).
var sdkCodes = map[uint32]string{
	2: "tx_decode", 4: "unauthorized", 5: "insufficient_funds", 6: "unknown_request", 7: "invalid_address",
	8: "invalid_pubkey", 9: "unknown_address", 10: "invalid_coins", 11: "out_of_gas", 12: "memo_too_large",
	13: "insufficient_fee", 14: "too_many_signatures", 15: "no_signatures", 18: "invalid_request",
	19: "duplicate", 20: "mempool_full", 21: "tx_too_large", 22: "key_not_found", 24: "invalid_signer",
	28: "invalid_chain_id", 30: "tx_timeout_height", 32: "sequence_mismatch", 33: "unknown_extension_options",
	35: "not_supported", 36: "not_found", 38: "app_config", 40: "invalid_gas_limit", 41: "tx_timeout",
}

// moduleCodes names the errors of the modules a payment chain carries
// besides the SDK's own: codespace, then code (each module's
// types/errors.go). The fee market is the one the Cosmos Hub runs
// (github.com/skip-mev/feemarket); "undefined" is cosmossdk.io/errors'
// codespace for errors registered nowhere (an internal error, such as a
// block's utilization over the fee market's maximum).
var moduleCodes = map[string]map[uint32]string{
	"feemarket": {1: "no_fee_coin", 2: "too_many_fee_coins", 3: "fee_denom_not_resolvable"},
	"bank": {2: "no_inputs", 3: "no_outputs", 4: "input_output_mismatch", 5: "send_disabled",
		6: "denom_metadata_not_found", 7: "invalid_key", 8: "duplicate_entry", 9: "multiple_senders"},
	"undefined": {1: "internal_error", 2: "stop_iterating", 111222: "panic"},
}

// Reason names a result code: the SDK's and the common modules' errors by
// name, others as "<codespace>_<code>".
func Reason(space string, code uint32, _ string) string {
	if space == "sdk" {
		if n, ok := sdkCodes[code]; ok {
			return n
		}
	}
	if n, ok := moduleCodes[space][code]; ok {
		return space + "_" + n
	}
	if space == "" {
		space = "code"
	}
	return space + "_" + strconv.FormatUint(uint64(code), 10)
}

// ParseCoins reads "100stake,5uatom" (empty: none).
func ParseCoins(s string) ([]Coin, error) {
	var out []Coin
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.IndexFunc(part, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 || i == len(part) {
			return nil, fmt.Errorf("%q is not an amount and a denom such as 500stake", part)
		}
		out = append(out, Coin{Amount: part[:i], Denom: part[i:]})
	}
	return out, nil
}

// SignInvalid appends a deliberately invalid send (workload.invalid): its
// signature altered, signed for another chain id, with the stale sequence
// given, for more than any wallet holds (refused in the block: CheckTx
// runs only the ante handler), or oversized: a 64 KiB memo, which the SDK
// refuses past auth's max_memo_characters (256 by default).
func (c *Codec) SignInvalid(dst []byte, sort string, from, to int, amount, nonce uint64) ([]byte, bool) {
	switch sort {
	case workload.BadSignature:
		dst = c.Sign(dst, from, to, amount, nonce)
		dst[len(dst)-1] ^= 0x01 // the TxRaw ends with the signature
		return dst, true
	case workload.WrongChainID:
		s := c.scratch.Get().(*scratch)
		defer func() { s.chainID = ""; c.scratch.Put(s) }()
		s.chainID = c.ChainID + "-other"
		w := c.wallets[from]
		c.msgSend(s, w, to, strconv.FormatUint(amount, 10))
		gas, fee := c.gasFor(nonce)
		return c.signTx(dst, s, typeMsgSend, w, c.numbers[from].Load(), nonce, gas, fee), true
	case workload.StaleSequence:
		return c.Sign(dst, from, to, amount, nonce), true
	case workload.InsufficientFunds:
		return c.Sign(dst, from, to, 1<<62, nonce), true
	case workload.Oversized:
		s := c.scratch.Get().(*scratch)
		defer func() { s.memo = ""; c.scratch.Put(s) }()
		s.memo = oversizedMemo
		w := c.wallets[from]
		c.msgSend(s, w, to, strconv.FormatUint(amount, 10))
		gas, fee := c.gasFor(nonce)
		return c.signTx(dst, s, typeMsgSend, w, c.numbers[from].Load(), nonce, gas, fee), true
	}
	return dst, false
}

// oversizedMemo is an oversized payment's memo: 64 KiB, far past any
// chain's max_memo_characters yet well within CometBFT's max_tx_bytes.
var oversizedMemo = strings.Repeat("x", 64<<10)

// SignKind appends a payment of a mix's kind: multi_send is one
// MsgMultiSend paying amount to each of to from wallet from.
func (c *Codec) SignKind(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool) {
	if out, ok := c.signCustom(dst, kind, from, to, amount, nonce); ok {
		return out, true
	}
	if kind != "multi_send" || len(to) == 0 {
		return dst, false
	}
	s := c.scratch.Get().(*scratch)
	defer c.scratch.Put(s)
	w := c.wallets[from]
	c.multiSend(s, w, to, amount)
	gas, fee := c.gasFor(nonce)
	return c.signTx(dst, s, typeMsgMultiSend, w, c.numbers[from].Load(), nonce, gas, fee), true
}

// multiSend writes into s.msg a MsgMultiSend{inputs: [Input{address,
// coins}], outputs: [Output{address, coins}...]} of amount to each of to.
func (c *Codec) multiSend(s *scratch, w Wallet, to []int, amount uint64) {
	var num [24]byte
	total := strconv.AppendUint(num[:0], amount*uint64(len(to)), 10)
	s.msg = appendMessage(s.msg[:0], 1, &s.sub, func(b []byte) []byte {
		b = appendString(b, 1, w.Address)
		return appendCoin(b, 2, Coin{Denom: c.Denom, Amount: string(total)})
	})
	each := strconv.AppendUint(num[:0], amount, 10)
	for _, r := range to {
		s.msg = appendMessage(s.msg, 2, &s.sub, func(b []byte) []byte {
			b = appendString(b, 1, c.wallets[r].Address)
			return appendCoin(b, 2, Coin{Denom: c.Denom, Amount: string(each)})
		})
	}
}
