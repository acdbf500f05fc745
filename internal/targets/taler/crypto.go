// Package taler is tpslab's adapter for the GNU Taler exchange (protocol
// v0.9, RSA denominations): a wallet that funds reserves through the
// bank's wire gateway, withdraws coins and deposits them to merchants,
// and a confirmer that finds each deposit in the exchange's database.
//
// This file holds the exchange's wire formats. Ed25519, SHA-512, HKDF,
// big-integer RSA and Crockford's alphabet come from Go's libraries; what
// no library does is written here, each checked against vectors printed
// by the exchange's own C code (testdata/vectors.c): the signed structs'
// binary layouts, GNUnet's HKDF (SHA-512 extract, SHA-256 expand), its
// "HKDF-Mod" and the RSA full-domain hash and blinding built on it.
package taler

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Signature purposes (GANA's registry, taler_signatures.h).
const (
	purposeConfirmDeposit   = 1033
	purposeReserveWithdraw  = 1200
	purposeCoinDeposit      = 1201
	cipherRSA               = 1
	currencyLen             = 12
	fractionBase            = 100_000_000
	hashLen                 = 64
	contractLen, wireSaltLn = 64, 16
)

// crock is Crockford's base32 as GNUnet writes binary fields: the RFC 4648
// bit order with Crockford's alphabet and no padding.
var crock = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// Crock encodes b as the exchange writes binary fields.
func Crock(b []byte) string { return crock.EncodeToString(b) }

// Decrock decodes a binary field; like GNUnet it takes lower case and
// reads O as 0, I and L as 1, U as V. want > 0 asks for exactly that many
// bytes.
func Decrock(s string, want int) ([]byte, error) {
	up := []byte(strings.ToUpper(s))
	for i, c := range up {
		switch c {
		case 'O':
			up[i] = '0'
		case 'I', 'L':
			up[i] = '1'
		case 'U':
			up[i] = 'V'
		}
	}
	b, err := crock.DecodeString(string(up))
	if err != nil {
		return nil, fmt.Errorf("not Crockford base32: %v", err)
	}
	if want > 0 && len(b) != want {
		return nil, fmt.Errorf("%d bytes, expected %d", len(b), want)
	}
	return b, nil
}

// KDF is GNUNET_CRYPTO_kdf: HKDF with HMAC-SHA512 to extract and
// HMAC-SHA256 to expand; the info is the context chunks concatenated.
func KDF(n int, salt, ikm []byte, info ...[]byte) []byte {
	prk, err := hkdf.Extract(sha512.New, ikm, salt)
	if err != nil {
		panic(err) // HMAC takes any key
	}
	var in []byte
	for _, c := range info {
		in = append(in, c...)
	}
	out, err := hkdf.Expand(sha256.New, prk, string(in), n)
	if err != nil {
		panic(err) // n is at most a modulus's bytes, far below HKDF's limit
	}
	return out
}

// kdfMod is GNUNET_CRYPTO_kdf_mod_mpi: the first KDF output below n, the
// bits above n's cleared, counting a 16-bit counter appended to the info.
func kdfMod(n *big.Int, salt, ikm []byte, ctx string) *big.Int {
	bits := n.BitLen()
	r := new(big.Int)
	for ctr := uint16(0); ; ctr++ {
		c := binary.BigEndian.AppendUint16(nil, ctr)
		r.SetBytes(KDF((bits+7)/8, salt, ikm, []byte(ctx), c))
		for i := r.BitLen() - 1; i >= bits; i-- {
			r.SetBit(r, i, 0)
		}
		if r.Cmp(n) < 0 {
			return r
		}
	}
}

// RSAPublicKey is a denomination's RSA key with GNUnet's encoding of it.
type RSAPublicKey struct {
	N, E    *big.Int
	Encoded []byte
}

// ParseRSAPublicKey reads GNUnet's encoding: the modulus's and exponent's
// lengths (16 bits each), then both, big-endian.
func ParseRSAPublicKey(b []byte) (*RSAPublicKey, error) {
	if len(b) < 4 {
		return nil, errors.New("RSA public key: shorter than its header")
	}
	nl, el := int(binary.BigEndian.Uint16(b)), int(binary.BigEndian.Uint16(b[2:]))
	if nl < 64 || el < 1 || 4+nl+el != len(b) {
		return nil, fmt.Errorf("RSA public key: %d bytes for a %d-byte modulus and %d-byte exponent", len(b), nl, el)
	}
	k := &RSAPublicKey{N: new(big.Int).SetBytes(b[4 : 4+nl]), E: new(big.Int).SetBytes(b[4+nl:]), Encoded: b}
	if k.N.Sign() == 0 || k.N.Bit(0) == 0 || k.E.Sign() == 0 {
		return nil, errors.New("RSA public key: not an odd modulus and a positive exponent")
	}
	return k, nil
}

// FDH is GNUnet's RSA full-domain hash of msg (a SHA-512 hash) under k.
func (k *RSAPublicKey) FDH(msg []byte) *big.Int {
	return kdfMod(k.N, k.Encoded, msg, "RSA-FDA FTpsW!")
}

// blindingFactor is GNUnet's r derived from a blinding key secret.
func (k *RSAPublicKey) blindingFactor(bks []byte) *big.Int {
	return kdfMod(k.N, []byte("Blinding KDF extractor HMAC key"), bks, "Blinding KDF")
}

// Blind is GNUNET_CRYPTO_rsa_blind: FDH(msg)·r^e mod n, as minimal
// big-endian bytes.
func (k *RSAPublicKey) Blind(msg, bks []byte) []byte {
	r := k.blindingFactor(bks)
	m := new(big.Int).Exp(r, k.E, k.N)
	m.Mul(m, k.FDH(msg)).Mod(m, k.N)
	return m.Bytes()
}

// Unblind removes the blinding from the exchange's blinded signature and
// checks the result signs msg; it returns the signature padded to the
// modulus's length, as wallets send it.
func (k *RSAPublicKey) Unblind(blindSig, msg, bks []byte) ([]byte, error) {
	s := new(big.Int).SetBytes(blindSig)
	inv := new(big.Int).ModInverse(k.blindingFactor(bks), k.N)
	if inv == nil || s.Cmp(k.N) >= 0 {
		return nil, errors.New("blinded signature: out of range")
	}
	s.Mul(s, inv).Mod(s, k.N)
	if !k.Verify(msg, s.Bytes()) {
		return nil, errors.New("blinded signature: does not sign the coin once unblinded")
	}
	return s.FillBytes(make([]byte, (k.N.BitLen()+7)/8)), nil
}

// Verify checks an RSA-FDH signature of msg.
func (k *RSAPublicKey) Verify(msg, sig []byte) bool {
	s := new(big.Int).SetBytes(sig)
	return s.Cmp(k.N) < 0 && new(big.Int).Exp(s, k.E, k.N).Cmp(k.FDH(msg)) == 0
}

// DenomHash is TALER_denom_pub_hash for an RSA denomination.
func DenomHash(k *RSAPublicKey, ageMask uint32) [hashLen]byte {
	h := sha512.New()
	var opt [8]byte
	binary.BigEndian.PutUint32(opt[:], ageMask)
	binary.BigEndian.PutUint32(opt[4:], cipherRSA)
	h.Write(opt[:])
	h.Write(k.Encoded)
	var out [hashLen]byte
	h.Sum(out[:0])
	return out
}

// CoinEvHash is TALER_coin_ev_hash of an RSA blinded planchet.
func CoinEvHash(blinded []byte, denomHash [hashLen]byte) [hashLen]byte {
	h := sha512.New()
	h.Write(denomHash[:])
	h.Write(binary.BigEndian.AppendUint32(nil, cipherRSA))
	h.Write(blinded)
	var out [hashLen]byte
	h.Sum(out[:0])
	return out
}

// Amount is an amount of a currency: value and fraction (10^-8 units).
type Amount struct {
	Currency string
	Value    uint64
	Fraction uint32
}

// ParseAmount reads "CUR:V[.F]" as the exchange writes amounts.
func ParseAmount(s string) (Amount, error) {
	cur, num, ok := strings.Cut(s, ":")
	if !ok || cur == "" || len(cur) >= currencyLen {
		return Amount{}, fmt.Errorf("amount %q: expected CURRENCY:VALUE with a currency of 1..11 letters", s)
	}
	whole, frac, _ := strings.Cut(num, ".")
	v, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || len(frac) > 8 || v >= 1<<52 {
		return Amount{}, fmt.Errorf("amount %q: expected a value below 2^52 with at most 8 decimals", s)
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 8-len(frac)), 10, 32); err != nil {
			return Amount{}, fmt.Errorf("amount %q: expected decimal digits after the point", s)
		}
	}
	return Amount{Currency: cur, Value: v, Fraction: uint32(f)}, nil
}

func (a Amount) String() string {
	s := a.Currency + ":" + strconv.FormatUint(a.Value, 10)
	if a.Fraction != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%08d", a.Fraction), "0")
	}
	return s
}

// Units is the amount in 10^-8.
func (a Amount) Units() uint64 { return a.Value*fractionBase + uint64(a.Fraction) }

// FromUnits is an amount of cur of u 10^-8 units.
func FromUnits(cur string, u uint64) Amount {
	return Amount{Currency: cur, Value: u / fractionBase, Fraction: uint32(u % fractionBase)}
}

// appendNBO appends TALER_AmountNBO: value, fraction, the currency padded
// with zeros to 12 bytes.
func (a Amount) appendNBO(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, a.Value)
	b = binary.BigEndian.AppendUint32(b, a.Fraction)
	var c [currencyLen]byte
	copy(c[:], a.Currency)
	return append(b, c[:]...)
}

// purpose starts a signed struct: its size (filled by sign) and purpose.
func purpose(p uint32, size int) []byte {
	b := make([]byte, 8, size)
	binary.BigEndian.PutUint32(b[4:], p)
	return b
}

func sealed(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

// timestampNBO is GNUNET_TIME_TimestampNBO: microseconds, whole seconds.
func timestampNBO(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.Unix())*1_000_000)
}

// WithdrawRequest is TALER_WithdrawRequestPS, which the reserve signs.
func WithdrawRequest(amountWithFee Amount, denomHash, coinEvHash [hashLen]byte) []byte {
	b := purpose(purposeReserveWithdraw, 8+24+2*hashLen)
	b = amountWithFee.appendNBO(b)
	b = append(b, denomHash[:]...)
	return sealed(append(b, coinEvHash[:]...))
}

// Deposit is what a deposit's coin signature covers (no age commitment,
// no policy).
type Deposit struct {
	Amount, Fee    Amount
	WireHash       [hashLen]byte
	ContractHash   [hashLen]byte
	DenomHash      [hashLen]byte
	Timestamp      time.Time
	RefundDeadline time.Time
	Merchant       [32]byte
}

// DepositRequest is TALER_DepositRequestPS, which the coin signs.
func DepositRequest(d *Deposit) []byte {
	b := purpose(purposeCoinDeposit, 8+hashLen+32+3*hashLen+16+48+32)
	b = append(b, d.ContractHash[:]...)
	b = append(b, make([]byte, 32+hashLen)...) // h_age_commitment, h_policy: none
	b = append(b, d.WireHash[:]...)
	b = append(b, d.DenomHash[:]...)
	b = timestampNBO(b, d.Timestamp)
	b = timestampNBO(b, d.RefundDeadline)
	b = d.Amount.appendNBO(b)
	b = d.Fee.appendNBO(b)
	return sealed(append(b, d.Merchant[:]...))
}

// DepositConfirmation is TALER_DepositConfirmationPS, which the exchange
// signs with its online key when it took a deposit.
func DepositConfirmation(d *Deposit, exchangeTime, wireDeadline time.Time, coin [32]byte) []byte {
	b := purpose(purposeConfirmDeposit, 8+3*hashLen+24+24+64)
	b = append(b, d.ContractHash[:]...)
	b = append(b, d.WireHash[:]...)
	b = append(b, make([]byte, hashLen)...) // h_policy: none
	b = timestampNBO(b, exchangeTime)
	b = timestampNBO(b, wireDeadline)
	b = timestampNBO(b, d.RefundDeadline)
	b = FromUnits(d.Amount.Currency, d.Amount.Units()-d.Fee.Units()).appendNBO(b)
	b = append(b, coin[:]...)
	return sealed(append(b, d.Merchant[:]...))
}

// WireHash is TALER_merchant_wire_signature_hash: the merchant's account
// salted.
func WireHash(payto string, salt []byte) [hashLen]byte {
	var out [hashLen]byte
	copy(out[:], KDF(hashLen, salt, append([]byte(payto), 0), []byte("merchant-wire-signature")))
	return out
}

// CoinPubHash is TALER_coin_pub_hash without an age commitment: what the
// denomination signs.
func CoinPubHash(pub ed25519.PublicKey) [hashLen]byte { return sha512.Sum512(pub) }
