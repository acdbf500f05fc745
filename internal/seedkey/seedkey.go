// Package seedkey derives test keys from a seed, the one way every kind
// does (the built-in ledger's ed25519 accounts, Cosmos and EVM secp256k1
// wallets): anyone who knows the seed can derive, and spend, them.
package seedkey

import (
	"crypto/sha256"
	"encoding/binary"
)

// Secret is key i's 32-byte secret in domain (one per kind of key, e.g.
// "tpslab/account/v1"):
// sha256(domain || uint32be(len(seed)) || seed || uint64be(i)).
func Secret(domain, seed string, i uint64) []byte {
	h := sha256.New()
	h.Write([]byte(domain))
	var n [8]byte
	binary.BigEndian.PutUint32(n[:4], uint32(len(seed)))
	h.Write(n[:4])
	h.Write([]byte(seed))
	binary.BigEndian.PutUint64(n[:], i)
	h.Write(n[:])
	return h.Sum(nil)
}
