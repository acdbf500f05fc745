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

// TxVersion is the first byte of a payment to one recipient, and
// BatchVersion of a batch (multi-send) paying several. See docs/ledger.md.
const (
	TxVersion    = 1
	BatchVersion = 2
)

// MaxOutputs is the most recipients one batch pays (its count is a byte).
const MaxOutputs = 255

// OutputSize is one output of a batch: recipient and amount.
const OutputSize = AddressSize + 8

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
	Sender    []byte  // ed25519 public key
	Recipient Address // a batch's first output
	Amount    uint64  // a batch's first output's
	outputs   []byte  // a batch's outputs, OutputSize each; nil for version 1
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
	errOutputs = errors.New("batch output count out of range 1..255")
)

// Batch says whether the payment is a batch (version 2).
func (p *Payment) Batch() bool { return p.outputs != nil }

// Outputs is how many recipients the payment pays.
func (p *Payment) Outputs() int {
	if p.outputs == nil {
		return 1
	}
	return len(p.outputs) / OutputSize
}

// Output is the payment's i-th recipient and amount.
func (p *Payment) Output(i int) (Address, uint64) {
	if p.outputs == nil {
		return p.Recipient, p.Amount
	}
	o := p.outputs[i*OutputSize:]
	return Address(o[:AddressSize]), binary.BigEndian.Uint64(o[AddressSize:])
}

// Decode parses a payment without verifying its signature.
func Decode(b []byte) (Payment, error) {
	var p Payment
	if len(b) < fixedSize+1 {
		return p, errShort
	}
	if b[0] != TxVersion && b[0] != BatchVersion {
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
	if b[0] == BatchVersion {
		// count, then the outputs where version 1 has its one recipient and amount
		n := int(b[off])
		if n == 0 {
			return p, errOutputs
		}
		off++
		if len(b) < fixedSize+cl+1+(n-1)*OutputSize {
			return p, errShort
		}
		p.outputs = b[off : off+n*OutputSize]
		off += n*OutputSize - OutputSize
	}
	copy(p.Recipient[:], b[off:off+AddressSize])
	off += AddressSize
	p.Amount = binary.BigEndian.Uint64(b[off:])
	off += 8
	if p.outputs != nil {
		p.Recipient, p.Amount = p.Output(0)
	}
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

// BatchSize is the encoded length of a batch of n outputs.
func BatchSize(chainIDLen, n, padding int) int {
	return fixedSize + chainIDLen + padding + 1 + (n-1)*OutputSize
}

// AppendBatch appends a signed batch paying each of to its amount (amounts
// is as long as to, or one amount for all) and returns the extended slice.
func AppendBatch(dst []byte, chainID string, key ed25519.PrivateKey, to []Address, amounts []uint64, seq uint64, padding int) []byte {
	start := len(dst)
	dst = append(dst, BatchVersion, byte(len(chainID)))
	dst = append(dst, chainID...)
	dst = append(dst, key[32:]...)
	dst = append(dst, byte(len(to)))
	for i := range to {
		dst = append(dst, to[i][:]...)
		dst = binary.BigEndian.AppendUint64(dst, amounts[min(i, len(amounts)-1)])
	}
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
