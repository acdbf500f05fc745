package seedkey

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// The layout is fixed: keys derived by one tpslab version fund and sign
// for another (a network started by one, loaded by the next). Each kind's
// own test holds its derived key's vector.
func TestSecretLayout(t *testing.T) {
	want := sha256.Sum256([]byte("dom\x00\x00\x00\x02ab\x00\x00\x00\x00\x00\x00\x00\x07"))
	if got := Secret("dom", "ab", 7); !bytes.Equal(got, want[:]) {
		t.Fatalf("secret %x, want %x", got, want)
	}
	if bytes.Equal(Secret("a", "bc", 1), Secret("ab", "c", 1)) {
		t.Error("domain and seed run together: the seed's length must separate them")
	}
}
