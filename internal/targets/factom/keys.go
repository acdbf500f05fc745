package factom

import (
	"crypto/sha256"
	"fmt"

	"github.com/FactomProject/ed25519"
	fct "github.com/FactomProject/factoid"
	"github.com/FactomProject/factom"
)

// LocalFunder is the LOCAL network's prefunded factoid address's secret
// (published in factomd's README and code for test networks; it holds
// the genesis factoids of every LOCAL network, nothing anywhere else).
const LocalFunder = "Fs3E9gV6DXsYzf7Fqx1fVBQPQXV695eP3k5XbmHEZVRLkMdD9qCK"

// Funder is the LOCAL network's prefunded factoid address.
func Funder() *factom.FactoidAddress {
	a, err := factom.GetFactoidAddress(LocalFunder)
	if err != nil {
		panic("factom: the LOCAL funder's secret does not decode: " + err.Error()) // a constant
	}
	return a
}

// secret is wallet i's 32-byte secret of the sort, derived from seed:
// keys are never written anywhere; the seed re-derives them.
func secret(seed, sort string, i int) []byte {
	s := sha256.Sum256([]byte(fmt.Sprintf("tpslab factom %s %s %d", seed, sort, i)))
	return s[:]
}

// ECWallet is wallet i's entry-credit address.
func ECWallet(seed string, i int) *factom.ECAddress {
	a, err := factom.MakeECAddress(secret(seed, "ec", i))
	if err != nil {
		panic(err) // 32 bytes always make a key
	}
	return a
}

// FactoidWallet is wallet i's factoid address.
func FactoidWallet(seed string, i int) *factom.FactoidAddress {
	a, err := factom.MakeFactoidAddress(secret(seed, "fct", i))
	if err != nil {
		panic(err)
	}
	return a
}

// Out is an output of a factoid transaction: a factoid address's RCD hash
// or an entry-credit address's public key, and the factoshis it receives.
type Out struct {
	Address []byte
	Amount  uint64
}

// FactoidTx is a transaction from one address paying outs (factoids) and
// ecs (entry credits bought at rate factoshis each: Amount is in
// factoshis), with the fee the network asks at rate added to the input,
// signed at millis (Unix milliseconds). The encoding is the factoid
// library's; id is what the node names it (SHA-256 of the signed part).
func FactoidTx(from *factom.FactoidAddress, outs, ecs []Out, rate, millis uint64) (raw []byte, id [32]byte, err error) {
	build := func(fee uint64) (*fct.Transaction, error) {
		t := new(fct.Transaction)
		t.SetMilliTimestamp(millis)
		total := fee
		for _, o := range outs {
			t.AddOutput(fct.NewAddress(o.Address), o.Amount)
			total += o.Amount
		}
		for _, o := range ecs {
			t.AddECOutput(fct.NewAddress(o.Address), o.Amount)
			total += o.Amount
		}
		t.AddInput(fct.NewAddress(from.RCDHash()), total)
		t.AddRCD(fct.NewRCD_1(from.PubBytes()))
		return t, nil
	}
	t, _ := build(0)
	fee, err := t.CalculateFee(rate)
	if err != nil {
		return nil, id, err
	}
	// A larger input amount may take a longer varint and a larger fee.
	for i := 0; i < 3; i++ {
		t, _ = build(fee)
		f, err := t.CalculateFee(rate)
		if err != nil {
			return nil, id, err
		}
		if f <= fee {
			break
		}
		fee = f
	}
	signed, err := t.MarshalBinarySig()
	if err != nil {
		return nil, id, err
	}
	sig := new(fct.Signature)
	if err := sig.SetSignature(ed25519.Sign(from.SecFixed(), signed)[:]); err != nil {
		return nil, id, err
	}
	sb := new(fct.SignatureBlock)
	sb.AddSignature(sig)
	t.SetSignatureBlock(0, sb)
	raw, err = t.MarshalBinary()
	return raw, sha256.Sum256(signed), err
}
