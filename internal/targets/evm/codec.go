// Package evm is the target for EVM chains (geth, Cosmos EVM, ...): native
// value transfers or ERC20 transfer calls, signed with go-ethereum (EIP-1559
// by default, legacy as an option), submitted with eth_sendRawTransaction
// over keep-alive HTTP, confirmed from new heads and their receipts with a
// settable confirmation depth.
package evm

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"github.com/tpslab/tpslab/internal/fanout"
	"github.com/tpslab/tpslab/internal/seedkey"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/tpslab/tpslab/internal/sut"
)

// Wallet is one EVM account.
type Wallet struct {
	Key     *ecdsa.PrivateKey
	Address common.Address
}

// DeriveWallet is test wallet i of seed: the secp256k1 key whose scalar is
// sha256("tpslab/evm-wallet/v1" || uint32be(len(seed)) || seed ||
// uint64be(i)), hashed again in the (astronomically rare) case it is not a
// valid key. Anyone who knows the seed can spend: test keys.
func DeriveWallet(seed string, i uint64) Wallet {
	sum := seedkey.Secret("tpslab/evm-wallet/v1", seed, i)
	for {
		if k, err := crypto.ToECDSA(sum); err == nil {
			return Wallet{Key: k, Address: crypto.PubkeyToAddress(k.PublicKey)}
		}
		next := sha256.Sum256(sum)
		sum = next[:]
	}
}

// DeriveWallets derives wallets [0, n) on all cores.
func DeriveWallets(seed string, n int) []Wallet {
	return fanout.Map(n, func(i int) Wallet { return DeriveWallet(seed, uint64(i)) })
}

// Fees are what a transaction offers to pay.
type Fees struct {
	Legacy   bool     // a legacy (type 0) transaction with GasPrice
	GasPrice *big.Int // legacy
	FeeCap   *big.Int // EIP-1559 max fee per gas
	TipCap   *big.Int // EIP-1559 max priority fee per gas
}

// Codec signs transfers between test wallets: native value, or ERC20
// transfer calls on Token. It is the EVM workload's codec.
type Codec struct {
	ChainID *big.Int
	Token   *common.Address // nil: native transfers
	Gas     uint64
	// MixToken is the token of a mix's erc20 and contract_call kinds, and
	// CallGas their gas; native transfers of a mix take NativeGas.
	MixToken           *common.Address
	CallGas, NativeGas uint64
	Fees               Fees
	wallets            []Wallet
	signer             types.Signer
	rpc                *Client
	size               int
	// calls are the scenario's contract calls as kinds of payment
	// (AddCall); sendOffset and sendCount the senders' range.
	calls                 map[string]*call
	sendOffset, sendCount int
}

// NewCodec signs for wallets on chainID.
func NewCodec(chainID *big.Int, token *common.Address, gas uint64, fees Fees, wallets []Wallet, rpc *Client) *Codec {
	c := &Codec{ChainID: chainID, Token: token, Gas: gas, Fees: fees, wallets: wallets, signer: types.LatestSignerForChainID(chainID), rpc: rpc}
	if len(wallets) > 1 {
		c.size = len(c.Sign(nil, 0, 1, 1, 0))
	}
	return c
}

// Accounts is the number of test wallets.
func (c *Codec) Accounts() int { return len(c.wallets) }

// Wallet is test wallet i.
func (c *Codec) Wallet(i int) Wallet { return c.wallets[i] }

// TxSize is the length of one signed transfer.
func (c *Codec) TxSize() int { return c.size }

// ID is the transaction hash: keccak256 of the signed bytes.
func (c *Codec) ID(tx []byte) sut.TxID { return sut.TxID(crypto.Keccak256Hash(tx)) }

// transferSelector is the first 4 bytes of keccak256("transfer(address,uint256)").
var transferSelector = crypto.Keccak256([]byte("transfer(address,uint256)"))[:4]

// TransferData is the calldata of an ERC20 transfer(to, amount).
func TransferData(to common.Address, amount *big.Int) []byte {
	data := make([]byte, 4+32+32)
	copy(data, transferSelector)
	copy(data[4+12:], to[:])
	amount.FillBytes(data[4+32:])
	return data
}

// approveSelector is the first 4 bytes of keccak256("approve(address,uint256)").
var approveSelector = crypto.Keccak256([]byte("approve(address,uint256)"))[:4]

// ApproveData is the calldata of an ERC20 approve(spender, amount): a
// contract call that writes state (an allowance) and moves nothing.
func ApproveData(spender common.Address, amount *big.Int) []byte {
	data := TransferData(spender, amount)
	copy(data, approveSelector)
	return data
}

// SignKind appends a payment of a mix's kind: a scenario's contract call
// (AddCall), native (a value transfer),
// erc20 (a token transfer call) or contract_call (the token's approve of
// the recipient for amount); the last two need MixToken.
func (c *Codec) SignKind(dst []byte, kind string, from int, to []int, amount, nonce uint64) ([]byte, bool) {
	if out, ok := c.signCall(dst, kind, from, to, amount, nonce); ok {
		return out, true
	}
	if len(to) == 0 {
		return dst, false
	}
	dest, value := c.wallets[to[0]].Address, new(big.Int).SetUint64(amount)
	var data []byte
	gas := c.NativeGas
	switch {
	case kind == "native":
	case kind == "erc20" && c.MixToken != nil:
		data, dest, value, gas = TransferData(dest, value), *c.MixToken, new(big.Int), c.CallGas
	case kind == "contract_call" && c.MixToken != nil:
		data, dest, value, gas = ApproveData(dest, value), *c.MixToken, new(big.Int), c.CallGas
	default:
		return dst, false
	}
	return c.appendCall(dst, from, dest, value, data, gas, nonce), true
}

// Sign appends a signed transfer of amount from wallet from to wallet to.
func (c *Codec) Sign(dst []byte, from, to int, amount, nonce uint64) []byte {
	dest, value, data := c.wallets[to].Address, new(big.Int).SetUint64(amount), []byte(nil)
	if c.Token != nil {
		data, dest, value = TransferData(dest, value), *c.Token, new(big.Int)
	}
	return c.appendCall(dst, from, dest, value, data, c.Gas, nonce)
}

// appendCall appends wallet from's signed call of dest.
func (c *Codec) appendCall(dst []byte, from int, dest common.Address, value *big.Int, data []byte, gas, nonce uint64) []byte {
	key := c.wallets[from].Key
	if !c.Fees.Legacy {
		return c.appendDynamicFee(dst, key, nonce, &dest, value, data, gas)
	}
	// Copies for the legacy path's transaction, which keeps them: the
	// EIP-1559 path's dest and value stay on the caller's stack.
	to, v := dest, new(big.Int).Set(value)
	raw, err := c.SignCall(key, nonce, &to, v, data, gas)
	if err != nil {
		panic(fmt.Errorf("sign: %w", err)) // only fails on an invalid key or chain id, checked at setup
	}
	return append(dst, raw...)
}

// scratch is one signing's hasher and bytes, pooled: live signing makes a
// payment per call from many lanes, and go-ethereum's SignTx path (a
// transaction copied twice, its fields boxed for the encoder) cost 54
// allocations per payment.
type scratch struct {
	h    crypto.KeccakState
	b    []byte
	hash [32]byte
}

var scratchPool = sync.Pool{New: func() any { return &scratch{h: crypto.NewKeccakState()} }}

// appendDynamicFee appends an EIP-1559 (type 2) transaction signed by key:
// 0x02 || rlp([chainId, nonce, tip, feeCap, gas, to, value, data, [], v, r, s]),
// the signature over keccak256(0x02 || rlp of the first nine), as
// go-ethereum's types.SignTx and MarshalBinary make it (TestDynamicFeeAsGoEthereum)
// but encoded straight into dst.
func (c *Codec) appendDynamicFee(dst []byte, key *ecdsa.PrivateKey, nonce uint64, to *common.Address, value *big.Int, data []byte, gas uint64) []byte {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	w := rlp.NewEncoderBuffer(nil)
	c.dynamicFeeFields(&w, nonce, to, value, data, gas, nil)
	sc.b = w.AppendToBytes(append(sc.b[:0], types.DynamicFeeTxType))
	w.Flush()
	sc.h.Reset()
	sc.h.Write(sc.b)
	sc.h.Read(sc.hash[:])
	sig, err := crypto.Sign(sc.hash[:], key)
	if err != nil {
		panic(fmt.Errorf("sign: %w", err)) // only fails on an invalid key, checked at setup
	}
	w = rlp.NewEncoderBuffer(nil)
	c.dynamicFeeFields(&w, nonce, to, value, data, gas, sig)
	dst = w.AppendToBytes(append(dst, types.DynamicFeeTxType))
	w.Flush()
	return dst
}

// dynamicFeeFields writes the transaction's list; with sig, its v, r, s
// (integers: minimal big-endian bytes).
func (c *Codec) dynamicFeeFields(w *rlp.EncoderBuffer, nonce uint64, to *common.Address, value *big.Int, data []byte, gas uint64, sig []byte) {
	l := w.List()
	w.WriteBigInt(c.ChainID)
	w.WriteUint64(nonce)
	w.WriteBigInt(c.Fees.TipCap)
	w.WriteBigInt(c.Fees.FeeCap)
	w.WriteUint64(gas)
	if to == nil {
		w.WriteBytes(nil)
	} else {
		w.WriteBytes(to[:])
	}
	w.WriteBigInt(value)
	w.WriteBytes(data)
	w.ListEnd(w.List()) // the access list: empty
	if sig != nil {
		w.WriteUint64(uint64(sig[64]))
		w.WriteBytes(bytes.TrimLeft(sig[:32], "\x00"))
		w.WriteBytes(bytes.TrimLeft(sig[32:64], "\x00"))
	}
	w.ListEnd(l)
}

// SignCall signs any call (to nil: a contract creation) with the codec's
// fees and chain id.
func (c *Codec) SignCall(key *ecdsa.PrivateKey, nonce uint64, to *common.Address, value *big.Int, data []byte, gas uint64) ([]byte, error) {
	var inner types.TxData
	if c.Fees.Legacy {
		inner = &types.LegacyTx{Nonce: nonce, GasPrice: c.Fees.GasPrice, Gas: gas, To: to, Value: value, Data: data}
	} else {
		inner = &types.DynamicFeeTx{ChainID: c.ChainID, Nonce: nonce, GasTipCap: c.Fees.TipCap, GasFeeCap: c.Fees.FeeCap, Gas: gas, To: to, Value: value, Data: data}
	}
	tx, err := types.SignTx(types.NewTx(inner), c.signer, key)
	if err != nil {
		return nil, err
	}
	return tx.MarshalBinary()
}

// Nonce reads wallet from's next nonce, pending transactions counted.
func (c *Codec) Nonce(ctx context.Context, from int) (uint64, error) {
	return c.rpc.Nonce(ctx, c.wallets[from].Address.Hex())
}

// expectedNonce finds the nonce a node expects in its refusal: geth's
// "state: 7", "next nonce 7", Cosmos EVM's "expected 7" (too low) and
// "account accountNonce: 7" (too high).
var expectedNonce = []*regexp.Regexp{
	regexp.MustCompile(`state:? (\d+)`),
	regexp.MustCompile(`next nonce (\d+)`),
	regexp.MustCompile(`expected (\d+)`),
	regexp.MustCompile(`(?i)account ?nonce:? (\d+)`),
}

// Mismatch reads nonce rejections: geth says "nonce too low: address A,
// tx: 5 state: 7" (the chain expects a higher one) and other nodes "nonce
// too high" (a lower one). A replacement that is underpriced means a
// transaction with this nonce is already pending: the expected nonce is
// read by query.
func (c *Codec) Mismatch(r sut.Receipt) (bool, uint64, bool) {
	switch r.Reason {
	case "nonce_too_low", "nonce_too_high":
		var m []string
		for _, re := range expectedNonce {
			if m = re.FindStringSubmatch(r.Detail); m != nil {
				break
			}
		}
		if m == nil {
			return true, 0, false
		}
		e, err := strconv.ParseUint(m[1], 10, 64)
		return true, e, err == nil
	case "replacement_underpriced":
		return true, 0, false
	}
	return false, 0, false
}

// Reason names a node's error text; every kind of node error gets a
// stable name, and the text itself is kept as a sample.
func Reason(msg string) string {
	m := strings.ToLower(msg)
	for _, r := range []struct{ substr, name string }{
		{"nonce too low", "nonce_too_low"},
		{"nonce too high", "nonce_too_high"},
		// Cosmos EVM (CometBFT's CheckTx through the JSON-RPC)
		{"tx nonce is lower than account nonce", "nonce_too_low"},
		{"tx nonce is higher than account nonce", "nonce_too_high"},
		{"replacement transaction underpriced", "replacement_underpriced"},
		{"already known", "already_known"},
		{"insufficient funds", "insufficient_funds"},
		{"fee cap less than block base fee", "fee_below_base_fee"},
		{"max fee per gas less than block base fee", "fee_below_base_fee"},
		{"transaction underpriced", "underpriced"},
		{"intrinsic gas too low", "intrinsic_gas_too_low"},
		{"exceeds block gas limit", "gas_limit_exceeded"},
		{"txpool is full", "mempool_full"},
		{"tx fee", "fee_cap_exceeded"},
		{"invalid sender", "invalid_signature"},
		{"invalid chain id", "wrong_chain"},
		{"oversized data", "tx_too_large"},
	} {
		if strings.Contains(m, r.substr) {
			return r.name
		}
	}
	return "rpc_error"
}
