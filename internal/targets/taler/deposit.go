package taler

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// Merchant is a merchant a wallet pays: its key and bank account.
type Merchant struct {
	Priv     ed25519.PrivateKey
	Pub      [32]byte
	Payto    string
	Salt     [wireSaltLn]byte
	WireHash [hashLen]byte
}

// NewMerchant derives merchant i of a run from seed, its account at bank
// host (the payto URI's authority).
func NewMerchant(seed []byte, i int, host string) *Merchant {
	s := sha256.Sum256(append(append([]byte("tpslab taler merchant "), seed...), strconv.Itoa(i)...))
	m := &Merchant{Priv: ed25519.NewKeyFromSeed(s[:]), Payto: fmt.Sprintf("payto://x-taler-bank/%s/merchant%d?receiver-name=merchant%d", host, i, i)}
	copy(m.Pub[:], m.Priv.Public().(ed25519.PublicKey))
	copy(m.Salt[:], s[16:])
	m.WireHash = WireHash(m.Payto, m.Salt[:])
	return m
}

// A deposit travels as its coin's public key (32 bytes), its contract's
// hash (64: the two name it in the exchange's database) and the JSON body.
const depositHead = 32 + hashLen

// DepositID is a deposit's id: SHA-256 of its coin and contract hash, as
// the confirmer computes it from the exchange's deposits table.
func DepositID(coin, contract []byte) sut.TxID {
	h := sha256.New()
	h.Write(coin)
	h.Write(contract)
	var id sut.TxID
	h.Sum(id[:0])
	return id
}

// ContractHash is payment nonce of a coin's contract hash with merchant m
// in run seed: unique, so every deposit is a new one.
func ContractHash(seed []byte, coin [32]byte, nonce uint64) [hashLen]byte {
	b := make([]byte, 0, 64+len(seed))
	b = append(b, "tpslab taler contract "...)
	b = append(b, seed...)
	b = append(b, coin[:]...)
	b = binary.BigEndian.AppendUint64(b, nonce)
	return sha512.Sum512(b)
}

// AppendDeposit appends coin c's deposit of amount to merchant m for the
// contract h, signed by the coin, stamped now (whole seconds).
func AppendDeposit(dst []byte, c *Coin, m *Merchant, amount Amount, h [hashLen]byte, now time.Time) []byte {
	now = now.Truncate(time.Second)
	d := &Deposit{Amount: amount, Fee: c.Denom.FeeDeposit, WireHash: m.WireHash, ContractHash: h, DenomHash: c.Denom.Hash,
		Timestamp: now, RefundDeadline: now, Merchant: m.Pub}
	sig := ed25519.Sign(c.Priv, DepositRequest(d))
	dst = append(dst, c.Pub[:]...)
	dst = append(dst, h[:]...)
	// The body's fields are fixed strings and base32: written directly.
	dst = append(dst, `{"contribution":"`...)
	dst = append(dst, amount.String()...)
	dst = append(dst, `","merchant_payto_uri":`...)
	dst = strconv.AppendQuote(dst, m.Payto)
	dst = append(dst, `,"wire_salt":"`...)
	dst = crock.AppendEncode(dst, m.Salt[:])
	dst = append(dst, `","denom_pub_hash":"`...)
	dst = crock.AppendEncode(dst, c.Denom.Hash[:])
	dst = append(dst, `","ub_sig":{"cipher":"RSA","rsa_signature":"`...)
	dst = crock.AppendEncode(dst, c.Sig)
	dst = append(dst, `"},"merchant_pub":"`...)
	dst = crock.AppendEncode(dst, m.Pub[:])
	dst = append(dst, `","h_contract_terms":"`...)
	dst = crock.AppendEncode(dst, h[:])
	dst = append(dst, `","coin_sig":"`...)
	dst = crock.AppendEncode(dst, sig)
	ts := strconv.FormatInt(now.Unix(), 10)
	dst = append(dst, `","timestamp":{"t_s":`+ts+`},"refund_deadline":{"t_s":`+ts+`},"wire_transfer_deadline":{"t_s":`...)
	dst = strconv.AppendInt(dst, now.Add(time.Hour).Unix(), 10)
	return append(dst, "}}"...)
}

// DepositAnswer is what the exchange says when it took a deposit.
type DepositAnswer struct {
	ExchangeTime time.Time
	ExchangeSig  []byte
	ExchangePub  []byte
}

// ParseDepositAnswer reads a deposit's 200 answer; it is fuzzed.
func ParseDepositAnswer(b []byte) (DepositAnswer, error) {
	var v struct {
		T   *tS    `json:"exchange_timestamp"`
		Sig string `json:"exchange_sig"`
		Pub string `json:"exchange_pub"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.T == nil {
		return DepositAnswer{}, errors.New("a deposit answer without exchange_timestamp")
	}
	sig, err := Decrock(v.Sig, 64)
	if err != nil {
		return DepositAnswer{}, fmt.Errorf("exchange_sig: %v", err)
	}
	pub, err := Decrock(v.Pub, 32)
	if err != nil {
		return DepositAnswer{}, fmt.Errorf("exchange_pub: %v", err)
	}
	return DepositAnswer{ExchangeTime: v.T.time(), ExchangeSig: sig, ExchangePub: pub}, nil
}

// CheckConfirmation checks the exchange's signature over deposit tx (as
// AppendDeposit wrote it) by the answer a: what the exchange signed is
// read back from the request itself.
func CheckConfirmation(k *Keys, tx []byte, a DepositAnswer) error {
	if len(tx) < depositHead {
		return errors.New("not a deposit")
	}
	if !k.SignedBy(a.ExchangePub) {
		return errors.New("exchange_pub is not one of the exchange's signing keys")
	}
	var r struct {
		Contribution string `json:"contribution"`
		Payto        string `json:"merchant_payto_uri"`
		Salt         string `json:"wire_salt"`
		Denom        string `json:"denom_pub_hash"`
		Merchant     string `json:"merchant_pub"`
		Refund       tS     `json:"refund_deadline"`
		Wire         tS     `json:"wire_transfer_deadline"`
	}
	if err := json.Unmarshal(tx[depositHead:], &r); err != nil {
		return err
	}
	amount, err := ParseAmount(r.Contribution)
	if err != nil {
		return err
	}
	salt, err1 := Decrock(r.Salt, wireSaltLn)
	dh, err2 := Decrock(r.Denom, hashLen)
	mp, err3 := Decrock(r.Merchant, 32)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	d := &Deposit{Amount: amount, WireHash: WireHash(r.Payto, salt), RefundDeadline: r.Refund.time()}
	copy(d.ContractHash[:], tx[32:depositHead])
	copy(d.Merchant[:], mp)
	for i := range k.Denoms {
		if string(k.Denoms[i].Hash[:]) == string(dh) {
			d.Fee = k.Denoms[i].FeeDeposit
		}
	}
	var coin [32]byte
	copy(coin[:], tx[:32])
	if !ed25519.Verify(a.ExchangePub, DepositConfirmation(d, a.ExchangeTime, r.Wire.time(), coin), a.ExchangeSig) {
		return errors.New("exchange_sig does not sign the deposit")
	}
	return nil
}
