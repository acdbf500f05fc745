package chain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"runtime"
	"sync"
)

// DeriveKey returns genesis account i of a network whose genesis seed is seed:
// the ed25519 key whose 32-byte seed is
// sha256("tpslab/account/v1" || uint32be(len(seed)) || seed || uint64be(i)).
// The load generator re-derives keys this way, so no key file exists.
func DeriveKey(seed string, i uint64) ed25519.PrivateKey {
	h := sha256.New()
	h.Write([]byte("tpslab/account/v1"))
	var n [8]byte
	binary.BigEndian.PutUint32(n[:4], uint32(len(seed)))
	h.Write(n[:4])
	h.Write([]byte(seed))
	binary.BigEndian.PutUint64(n[:], i)
	h.Write(n[:])
	return ed25519.NewKeyFromSeed(h.Sum(nil))
}

// DeriveKeys derives accounts [0, n) on all cores.
func DeriveKeys(seed string, n int) []ed25519.PrivateKey {
	keys := make([]ed25519.PrivateKey, n)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				keys[i] = DeriveKey(seed, uint64(i))
			}
		}(w)
	}
	wg.Wait()
	return keys
}
