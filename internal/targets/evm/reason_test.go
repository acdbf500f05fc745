package evm

import (
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// Nonce refusals of geth and of Cosmos EVM are named alike, and the nonce
// each node expects is read from its words.
func TestNonceRefusals(t *testing.T) {
	c := &Codec{}
	for _, x := range []struct {
		msg, reason string
		expected    uint64
		known       bool
	}{
		{"nonce too low: address 0xabc, tx: 5 state: 7", "nonce_too_low", 7, true},
		{"nonce too high: next nonce 3, tx nonce 9", "nonce_too_high", 3, true},
		{"tx nonce is lower than account nonce: invalid nonce; got 3, expected 5: invalid sequence", "nonce_too_low", 5, true},
		{"tx nonce is higher than account nonce: tx nonce: 9, account accountNonce: 4", "nonce_too_high", 4, true},
		{"nonce too high", "nonce_too_high", 0, false},
		{"insufficient funds for gas * price + value", "insufficient_funds", 0, false},
	} {
		r := Reason(x.msg)
		if r != x.reason {
			t.Errorf("%q: reason %s, expected %s", x.msg, r, x.reason)
			continue
		}
		mis, e, known := c.Mismatch(sut.Receipt{Reason: r, Detail: x.msg})
		if isNonce := r == "nonce_too_low" || r == "nonce_too_high"; mis != isNonce || known != x.known || e != x.expected {
			t.Errorf("%q: mismatch %v, expected nonce %d (known %v); want %v, %d (%v)", x.msg, mis, e, known, isNonce, x.expected, x.known)
		}
	}
}
