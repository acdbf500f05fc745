package cosmos_test

import (
	"testing"

	"github.com/tpslab/tpslab/internal/targets/cosmos"
)

// A signed send and multi-send read back as payments: kind, sender, first
// recipient and the amount that recipient was paid (record --rpc).
func TestDecodePaymentReadsWhatWasSigned(t *testing.T) {
	w := cosmos.DeriveWallets("decode-test", 4, "cosmos")
	c := cosmos.NewCodec("chain-1", "stake", []cosmos.Coin{{Denom: "stake", Amount: "10"}}, 200_000, "memo", w, nil)
	send := c.Sign(nil, 0, 2, 1234, 7)
	if k, from, to, amt, ok := cosmos.DecodePayment(send); !ok || k != "send" || from != w[0].Address || to != w[2].Address || amt != 1234 {
		t.Errorf("send: %s %s -> %s %d (%v)", k, from, to, amt, ok)
	}
	multi, ok := c.SignKind(nil, "multi_send", 1, []int{3, 0, 2}, 55, 0)
	if !ok {
		t.Fatal("multi_send not signed")
	}
	if k, from, to, amt, ok := cosmos.DecodePayment(multi); !ok || k != "multi_send" || from != w[1].Address || to != w[3].Address || amt != 55 {
		t.Errorf("multi_send: %s %s -> %s %d (%v)", k, from, to, amt, ok)
	}
	for _, junk := range [][]byte{nil, {0xff}, []byte("not a tx at all")} {
		if _, _, _, _, ok := cosmos.DecodePayment(junk); ok {
			t.Errorf("%q read as a payment", junk)
		}
	}
}

func FuzzDecodePayment(f *testing.F) {
	w := cosmos.DeriveWallets("decode-test", 2, "cosmos")
	c := cosmos.NewCodec("chain-1", "stake", nil, 200_000, "", w, nil)
	f.Add(c.Sign(nil, 0, 1, 5, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		cosmos.DecodePayment(b) // must not panic on any bytes
	})
}
