package evm

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Test wallets never change between versions: wallets funded by one tpslab
// are spent by the next.
func TestDeriveWalletVector(t *testing.T) {
	if a := DeriveWallet("tpslab", 7).Address.Hex(); a != "0x2d3cadCDdE7Cdf118e9ABb31475841F255881d57" {
		t.Errorf("wallet 7 of seed tpslab: %s", a)
	}
	if w := DeriveWallets("tpslab", 9); w[7].Address.Hex() != "0x2d3cadCDdE7Cdf118e9ABb31475841F255881d57" {
		t.Error("DeriveWallets differs from DeriveWallet")
	}
}

// The hand-encoded EIP-1559 payment is byte for byte what go-ethereum's
// SignTx and MarshalBinary make (signatures are deterministic, RFC 6979):
// native and ERC20 transfers, amounts and nonces of every length, and a
// chain id over one byte.
func TestDynamicFeeAsGoEthereum(t *testing.T) {
	w := DeriveWallets("codec", 4)
	token := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	for _, chainID := range []int64{1337, 9000, 262144} {
		fees := Fees{FeeCap: big.NewInt(2_000_000_000), TipCap: big.NewInt(1)}
		for _, tok := range []*common.Address{nil, &token} {
			c := NewCodec(big.NewInt(chainID), tok, 60_000, fees, w, nil)
			for i, v := range []struct{ amount, nonce uint64 }{{0, 0}, {1, 1}, {127, 128}, {1 << 40, 1<<64 - 1}} {
				got := c.Sign([]byte("prefix"), i%4, (i+1)%4, v.amount, v.nonce)
				dest, value, data := w[(i+1)%4].Address, new(big.Int).SetUint64(v.amount), []byte(nil)
				if tok != nil {
					data, dest, value = TransferData(dest, value), *tok, new(big.Int)
				}
				want, err := c.SignCall(w[i%4].Key, v.nonce, &dest, value, data, 60_000)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, append([]byte("prefix"), want...)) {
					t.Fatalf("chain %d token %v amount %d nonce %d:\n got %x\nwant %x", chainID, tok, v.amount, v.nonce, got[6:], want)
				}
				var tx types.Transaction
				if err := tx.UnmarshalBinary(got[6:]); err != nil {
					t.Fatal(err)
				}
				if from, err := types.Sender(types.LatestSignerForChainID(big.NewInt(chainID)), &tx); err != nil || from != w[i%4].Address {
					t.Errorf("sender %s, %v; want %s", from, err, w[i%4].Address)
				}
			}
		}
	}
}
