package chain

import (
	"crypto/ed25519"

	"github.com/tpslab/tpslab/internal/fanout"
	"github.com/tpslab/tpslab/internal/seedkey"
)

// DeriveKey returns genesis account i of a network whose genesis seed is seed:
// the ed25519 key whose 32-byte seed is
// sha256("tpslab/account/v1" || uint32be(len(seed)) || seed || uint64be(i)).
// The load generator re-derives keys this way, so no key file exists.
func DeriveKey(seed string, i uint64) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(seedkey.Secret("tpslab/account/v1", seed, i))
}

// DeriveKeys derives accounts [0, n) on all cores.
func DeriveKeys(seed string, n int) []ed25519.PrivateKey {
	return fanout.Map(n, func(i int) ed25519.PrivateKey { return DeriveKey(seed, uint64(i)) })
}
