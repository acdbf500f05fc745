package cosmos

import (
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/tpslab/tpslab/internal/fanout"
	"github.com/tpslab/tpslab/internal/seedkey"
	"os"
	"strings"

	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/cometbft/cometbft/crypto/secp256k1"
	"github.com/tyler-smith/go-bip39"
)

// Wallet is one secp256k1 account.
type Wallet struct {
	Key     secp256k1.PrivKey
	PubKey  []byte // compressed, 33 bytes
	Address string // bech32
	Raw     []byte // the 20-byte address
}

func newWallet(key secp256k1.PrivKey, prefix string) Wallet {
	pub := key.PubKey().(secp256k1.PubKey)
	raw := pub.Address().Bytes()
	return Wallet{Key: key, PubKey: pub, Address: Bech32(prefix, raw), Raw: raw}
}

// Bech32 encodes a 20-byte address under prefix.
func Bech32(prefix string, raw []byte) string {
	conv, err := bech32.ConvertBits(raw, 8, 5, true)
	if err != nil {
		panic(err) // 8-to-5 conversion with padding cannot fail
	}
	s, err := bech32.Encode(prefix, conv)
	if err != nil {
		panic(err)
	}
	return s
}

// DeriveWallet is test wallet i of seed: the secp256k1 key made (as
// CometBFT does from a secret) from
// sha256("tpslab/cosmos-wallet/v1" || uint32be(len(seed)) || seed || uint64be(i)).
// Anyone who knows the seed can spend: these are test keys.
func DeriveWallet(seed string, i uint64, prefix string) Wallet {
	return newWallet(secp256k1.GenPrivKeySecp256k1(seedkey.Secret("tpslab/cosmos-wallet/v1", seed, i)), prefix)
}

// DeriveWallets derives wallets [0, n) on all cores.
func DeriveWallets(seed string, n int, prefix string) []Wallet {
	return fanout.Map(n, func(i int) Wallet { return DeriveWallet(seed, uint64(i), prefix) })
}

// HDPath is the Cosmos SDK's default key path, m/44'/118'/0'/0/0.
var HDPath = []uint32{hdkeychain.HardenedKeyStart + 44, hdkeychain.HardenedKeyStart + 118, hdkeychain.HardenedKeyStart, 0, 0}

// ReadKeyFile reads a funder key: a file holding either a hex private key
// (64 hex digits, as `keys export --unarmored-hex --unsafe` prints) or a
// BIP-39 mnemonic (derived at HDPath). The key never leaves this process:
// errors name the file, never its content.
func ReadKeyFile(path, prefix string) (Wallet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Wallet{}, err
	}
	text := strings.TrimSpace(string(b))
	if raw, err := hex.DecodeString(text); err == nil && len(raw) == 32 {
		return newWallet(secp256k1.PrivKey(raw), prefix), nil
	}
	words := strings.Fields(text)
	if len(words) < 12 {
		return Wallet{}, fmt.Errorf("%s: expected a 64-digit hex private key or a BIP-39 mnemonic of 12 to 24 words", path)
	}
	seed, err := bip39.NewSeedWithErrorChecking(strings.Join(words, " "), "")
	if err != nil {
		return Wallet{}, fmt.Errorf("%s: not a valid BIP-39 mnemonic (%d words; %v)", path, len(words), errors.Unwrap(err))
	}
	key, err := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	if err != nil {
		return Wallet{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, i := range HDPath {
		if key, err = key.Derive(i); err != nil {
			return Wallet{}, fmt.Errorf("%s: derive the key: %w", path, err)
		}
	}
	priv, err := key.ECPrivKey()
	if err != nil {
		return Wallet{}, fmt.Errorf("%s: %w", path, err)
	}
	raw := priv.Key.Bytes()
	return newWallet(secp256k1.PrivKey(raw[:]), prefix), nil
}
