package taler

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"

	"github.com/tpslab/tpslab/internal/sut"
)

// A withdrawal travels like a deposit: its reserve's public key (32
// bytes), its blinded coin's hash (64: h_blind_ev, which names it in the
// exchange's reserves_out table) and the JSON body, whose first key tells
// the two apart.
const withdrawBody = `{"denom_pub_hash":"`

// IsWithdraw says whether tx is a withdrawal (AppendWithdraw's).
func IsWithdraw(tx []byte) bool {
	return len(tx) > depositHead && bytes.HasPrefix(tx[depositHead:], []byte(withdrawBody))
}

// WithdrawID is a withdrawal's id, as the confirmer computes it from
// reserves_out's h_blind_ev.
func WithdrawID(hBlindEv []byte) sut.TxID {
	h := sha256.New()
	h.Write([]byte("withdraw "))
	h.Write(hBlindEv)
	var id sut.TxID
	h.Sum(id[:0])
	return id
}

// AppendWithdraw appends a withdrawal of one fresh coin of d from reserve
// r, signed by the reserve: the coin's key and blinding are drawn for it
// and not kept (the load measures the withdrawal; the coin is not spent).
func AppendWithdraw(dst []byte, r Reserve, d *Denom) []byte {
	var seed [64]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic(err) // the system's random source failed
	}
	pub := ed25519.NewKeyFromSeed(seed[:32]).Public().(ed25519.PublicKey)
	msg := CoinPubHash(pub)
	blinded := d.Key.Blind(msg[:], seed[32:])
	ev := CoinEvHash(blinded, d.Hash)
	withFee := FromUnits(d.Value.Currency, d.Value.Units()+d.FeeWithdraw.Units())
	sig := ed25519.Sign(r.Priv, WithdrawRequest(withFee, d.Hash, ev))
	dst = append(dst, r.Pub...)
	dst = append(dst, ev[:]...)
	dst = append(dst, withdrawBody...)
	dst = crock.AppendEncode(dst, d.Hash[:])
	dst = append(dst, `","reserve_sig":"`...)
	dst = crock.AppendEncode(dst, sig)
	dst = append(dst, `","coin_ev":{"cipher":"RSA","rsa_blinded_planchet":"`...)
	dst = crock.AppendEncode(dst, blinded)
	return append(dst, `"}}`...)
}
