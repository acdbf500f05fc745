package workload_test

import (
	"context"
	"crypto/ed25519"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/targets/ledgerclient"
	"github.com/tpslab/tpslab/internal/workload"
)

// offline is a real codec whose accounts all start at sequence 0: a
// benchmark reads no system.
type offline struct{ workload.Codec }

func (offline) Nonce(context.Context, int) (uint64, error) { return 0, nil }

// scheme is one signature scheme: its bare signature, and a codec whose
// live payments sign with it.
type scheme struct {
	name  string
	bare  func(b *testing.B)
	codec func() workload.Codec
}

func schemes() []scheme {
	const accounts = 1000
	msg := make([]byte, chain.Size(len("tpslab"), 0)-ed25519.SignatureSize) // what a ledger payment signs
	edKey := chain.DeriveKey("bench", 0)
	cw := cosmos.DeriveWallets("bench", accounts, "cosmos")
	doc := make([]byte, 190) // about a bank send's sign doc
	ew := evm.DeriveWallets("bench", accounts)
	hash := crypto.Keccak256(doc)
	return []scheme{
		{"ed25519-ledger",
			func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					msg[0] = byte(i)
					ed25519.Sign(edKey, msg)
				}
			},
			func() workload.Codec {
				return ledgerclient.NewClientNonce("tpslab", chain.Genesis{Seed: "bench", Accounts: accounts}, 0, nil)
			}},
		{"secp256k1-cosmos",
			func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					doc[0] = byte(i)
					if _, err := cw[0].Key.Sign(doc); err != nil { // sha256 of the doc, then the signature
						b.Fatal(err)
					}
				}
			},
			func() workload.Codec {
				return cosmos.NewCodec("bench", "stake", []cosmos.Coin{{Denom: "stake", Amount: "500"}}, 100_000, "", cw, nil)
			}},
		{"secp256k1-evm",
			func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					hash[0] = byte(i)
					if _, err := crypto.Sign(hash, ew[0].Key); err != nil {
						b.Fatal(err)
					}
				}
			},
			func() workload.Codec {
				fees := evm.Fees{FeeCap: big.NewInt(2_000_000_000), TipCap: big.NewInt(1_000_000_000)}
				return evm.NewCodec(big.NewInt(1337), nil, 21_000, fees, ew, nil)
			}},
	}
}

// BenchmarkSigning puts each scheme's bare signature beside live signing's
// whole path per payment (the builder's Next: the sender's lane and nonce,
// recipient and amount drawn, the payment encoded and signed, its id
// hashed). bench/live-signing.sh prints live/bare for each.
func BenchmarkSigning(b *testing.B) {
	for _, s := range schemes() {
		b.Run(s.name+"/bare", func(b *testing.B) {
			b.ReportAllocs()
			s.bare(b)
		})
		b.Run(s.name+"/live", func(b *testing.B) {
			p, err := workload.NewPayments(context.Background(), workload.PaymentsConfig{Senders: 500, Window: 8,
				Amount: workload.Amount{Min: 1, Max: 100}, Seed: 1}, offline{s.codec()})
			if err != nil {
				b.Fatal(err)
			}
			bl := p.NewBuilder(1)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := bl.Next(ctx, i%500, uint64(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Live payments verify as the systems would check them: the benchmark
// measures real signatures, not a path that skips them.
func TestLiveSigningSigns(t *testing.T) {
	p, err := workload.NewPayments(context.Background(), workload.PaymentsConfig{Senders: 10, Window: 8,
		Amount: workload.Amount{Min: 1, Max: 100}, Seed: 1}, offline{schemes()[0].codec()})
	if err != nil {
		t.Fatal(err)
	}
	built, err := p.NewBuilder(1).Next(context.Background(), 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	pay, err := chain.Decode(built.Tx.Bytes)
	if err != nil || !pay.VerifySignature() || pay.Sequence != 0 {
		t.Fatalf("a live ledger payment: %+v, %v", pay, err)
	}
}
