package chain

import (
	"crypto/ed25519"
	"encoding/hex"
	"testing"
)

// Genesis account keys never change between versions: a network started by
// one tpslab is loaded by the next.
func TestDeriveKeyVector(t *testing.T) {
	pub := hex.EncodeToString(DeriveKey("tpslab", 7).Public().(ed25519.PublicKey))
	if pub != "38ebcc6745740db53ce23283e583859a9dd6f2cd56867ecd9dcfcb7dfacc12fc" {
		t.Errorf("account 7 of seed tpslab: %s", pub)
	}
	if keys := DeriveKeys("tpslab", 9); !keys[7].Equal(DeriveKey("tpslab", 7)) {
		t.Error("DeriveKeys differs from DeriveKey")
	}
}
