package chain

import (
	"bytes"
	"testing"
)

func TestPaymentRoundTrip(t *testing.T) {
	k := DeriveKey("rt", 3)
	to := AddressOf(DeriveKey("rt", 4)[32:])
	tx := AppendPayment([]byte("prefix"), "c1", k, to, 77, 9, 1000)[len("prefix"):]
	if len(tx) != Size(2, 1000) {
		t.Fatalf("size %d, want %d", len(tx), Size(2, 1000))
	}
	p, err := Decode(tx)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.ChainID) != "c1" || !bytes.Equal(p.Sender, k[32:]) || p.Recipient != to || p.Amount != 77 || p.Sequence != 9 || len(p.Padding) != 1000 {
		t.Fatalf("decoded %+v", p)
	}
	if !p.VerifySignature() {
		t.Fatal("signature does not verify")
	}
}

func BenchmarkAppendPayment(b *testing.B) {
	k := DeriveKey("b", 0)
	to := AddressOf(DeriveKey("b", 1)[32:])
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendPayment(buf[:0], "tpslab", k, to, 1, uint64(i), 0)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(AppendPayment(nil, "c", DeriveKey("f", 0), Address{1}, 5, 1, 3))
	f.Add(AppendBatch(nil, "c", DeriveKey("f", 0), []Address{{1}, {2}}, []uint64{5, 6}, 1, 3))
	f.Add([]byte{1, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		// A decoded payment re-encodes to the same layout length.
		size := Size(len(p.ChainID), len(p.Padding))
		if p.Batch() {
			size = BatchSize(len(p.ChainID), p.Outputs(), len(p.Padding))
			for i := range p.Outputs() {
				p.Output(i)
			}
		}
		if size != len(b) {
			t.Fatalf("decoded %d bytes as a %d-byte payment", len(b), size)
		}
		p.VerifySignature()
	})
}
