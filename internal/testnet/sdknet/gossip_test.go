package sdknet

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tpslab/tpslab/internal/sut"
)

// A Cosmos transaction wrapping a signed Ethereum one, as a Cosmos EVM
// node gossips it, is named by the Ethereum transaction's hash (the one
// its receipt carries), whatever field of MsgEthereumTx holds it.
func TestEthTxIDsFindTheEthereumHash(t *testing.T) {
	key, _ := crypto.GenerateKey()
	signer := types.LatestSignerForChainID(big.NewInt(262144))
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(262144), Nonce: 7, Gas: 21000,
		GasFeeCap: big.NewInt(1e9), GasTipCap: big.NewInt(1), Value: big.NewInt(5)})
	raw, _ := tx.MarshalBinary()
	bytesField := func(b []byte, n protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
	}
	for _, rawField := range []protowire.Number{6, 9} {
		msg := bytesField(nil, 5, crypto.PubkeyToAddress(key.PublicKey).Bytes())
		msg = protowire.AppendVarint(protowire.AppendTag(msg, 2, protowire.VarintType), 120)
		msg = bytesField(msg, rawField, raw)
		anyMsg := bytesField(bytesField(nil, 1, []byte("/cosmos.evm.vm.v1.MsgEthereumTx")), 2, msg)
		body := bytesField(nil, 1, anyMsg)
		cosmosTx := bytesField(bytesField(nil, 1, body), 3, make([]byte, 64))
		ids := EthTxIDs(cosmosTx)
		if len(ids) != 1 || ids[0] != sut.TxID(tx.Hash()) {
			t.Errorf("raw in field %d: ids %x, want %s", rawField, ids, tx.Hash())
		}
	}
	for _, junk := range [][]byte{nil, {0xff}, {0x0a, 0x05, 1, 2}, []byte("not a transaction")} {
		if ids := EthTxIDs(junk); len(ids) != 0 {
			t.Errorf("%x: ids %x", junk, ids)
		}
	}
}

// FuzzEthTxIDs: any bytes a peer gossips, never a panic.
func FuzzEthTxIDs(f *testing.F) {
	f.Add([]byte{0x0a, 0x03, 0x0a, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) { EthTxIDs(b) })
}
