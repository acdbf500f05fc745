// Package chain is the reference payment ledger: a CometBFT ABCI application
// that moves balances between ed25519 accounts with per-account sequences.
package chain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// TxVersion is the first byte of every payment. See docs/ledger.md.
const TxVersion = 1

const (
	PubKeySize     = ed25519.PublicKeySize // 32
	AddressSize    = 20
	SignatureSize  = ed25519.SignatureSize // 64
	MaxChainIDLen  = 64
	MaxPaddingSize = 1<<16 - 1
	// fixed part: version, chain-id length, pubkey, recipient, amount, sequence, padding length, signature
	fixedSize = 1 + 1 + PubKeySize + AddressSize + 8 + 8 + 2 + SignatureSize
)

// Address identifies an account: the first 20 bytes of sha256(public key).
type Address [AddressSize]byte

// AddressOf derives the account address of a public key.
func AddressOf(pub []byte) Address {
	h := sha256.Sum256(pub)
	var a Address
	copy(a[:], h[:AddressSize])
	return a
}

func (a Address) String() string { return fmt.Sprintf("%X", a[:]) }

// Payment is a decoded transaction. Its slices alias the bytes it was decoded
// from, so decoding allocates nothing.
type Payment struct {
	ChainID   []byte
	Sender    []byte // ed25519 public key
	Recipient Address
	Amount    uint64
	Sequence  uint64
	Padding   []byte
	Signature []byte
	signed    []byte // every byte the signature covers
}

var (
	errShort   = errors.New("payment shorter than its fixed fields")
	errVersion = errors.New("unknown payment version")
	errChainID = errors.New("chain id length out of range 1..64")
	errLength  = errors.New("payment length does not match its declared sizes")
)

// Decode parses a payment without verifying its signature.
func Decode(b []byte) (Payment, error) {
	var p Payment
	if len(b) < fixedSize+1 {
		return p, errShort
	}
	if b[0] != TxVersion {
		return p, errVersion
	}
	cl := int(b[1])
	if cl == 0 || cl > MaxChainIDLen {
		return p, errChainID
	}
	if len(b) < fixedSize+cl {
		return p, errShort
	}
	off := 2
	p.ChainID = b[off : off+cl]
	off += cl
	p.Sender = b[off : off+PubKeySize]
	off += PubKeySize
	copy(p.Recipient[:], b[off:off+AddressSize])
	off += AddressSize
	p.Amount = binary.BigEndian.Uint64(b[off:])
	off += 8
	p.Sequence = binary.BigEndian.Uint64(b[off:])
	off += 8
	pl := int(binary.BigEndian.Uint16(b[off:]))
	off += 2
	if len(b) != off+pl+SignatureSize {
		return p, errLength
	}
	p.Padding = b[off : off+pl]
	off += pl
	p.signed = b[:off]
	p.Signature = b[off:]
	return p, nil
}

// Size is the encoded length of a payment with the given chain id and padding.
func Size(chainIDLen, padding int) int { return fixedSize + chainIDLen + padding }

// AppendPayment appends a signed payment to dst and returns the extended slice.
// It allocates only when dst lacks capacity; the padding bytes are zero.
func AppendPayment(dst []byte, chainID string, key ed25519.PrivateKey, to Address, amount, seq uint64, padding int) []byte {
	start := len(dst)
	dst = append(dst, TxVersion, byte(len(chainID)))
	dst = append(dst, chainID...)
	dst = append(dst, key[32:]...) // the public half of an ed25519 private key
	dst = append(dst, to[:]...)
	dst = binary.BigEndian.AppendUint64(dst, amount)
	dst = binary.BigEndian.AppendUint64(dst, seq)
	dst = binary.BigEndian.AppendUint16(dst, uint16(padding))
	for i := 0; i < padding; i++ {
		dst = append(dst, 0)
	}
	sig := ed25519.Sign(key, dst[start:])
	return append(dst, sig...)
}

// Assemble encodes a payment from its fields and a signature made over
// them (no padding): what a service that takes payments as separate fields
// verifies.
func Assemble(chainID string, pub []byte, to Address, amount, seq uint64, sig []byte) []byte {
	dst := make([]byte, 0, Size(len(chainID), 0))
	dst = append(dst, TxVersion, byte(len(chainID)))
	dst = append(dst, chainID...)
	dst = append(dst, pub...)
	dst = append(dst, to[:]...)
	dst = binary.BigEndian.AppendUint64(dst, amount)
	dst = binary.BigEndian.AppendUint64(dst, seq)
	dst = binary.BigEndian.AppendUint16(dst, 0)
	return append(dst, sig...)
}

// VerifySignature checks the payment's signature over its sign bytes.
func (p *Payment) VerifySignature() bool {
	for i := 0; i < extraVerifies; i++ { // a deliberately slow build only
		ed25519.Verify(p.Sender, p.signed, p.Signature)
	}
	return ed25519.Verify(p.Sender, p.signed, p.Signature)
}
