package chain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"

	"github.com/tpslab/tpslab/internal/seedkey"
)

// Account is one ledger entry.
type Account struct {
	Balance  uint64 `json:"balance"`
	Sequence uint64 `json:"sequence"`
}

// Genesis is the application state in genesis.json: K accounts derived from
// Seed (see DeriveKey), each holding Balance.
type Genesis struct {
	Seed     string `json:"seed"`
	Accounts uint64 `json:"accounts"`
	Balance  uint64 `json:"balance"`
	// State is pre-loaded state (net up --state): accounts beyond the
	// keyed ones, each at StateAddress and funded with Balance, that only
	// receive (no key of theirs is derived, so N costs a hash each).
	State uint64 `json:"state,omitempty"`
}

// Supply is the total of all balances, which no payment may change.
func (g Genesis) Supply() uint64 { return (g.Accounts + g.State) * g.Balance }

// StateAddress is pre-loaded account i of a genesis seeded by seed: the
// first 20 bytes of seedkey's hash in its own domain, so that anyone who
// knows the seed can pay (and read) it, and no key can spend it.
func StateAddress(seed string, i uint64) Address {
	var a Address
	copy(a[:], seedkey.Secret("tpslab/state/v1", seed, i))
	return a
}

// Validate rejects a genesis whose supply would not fit in a uint64; with
// that guaranteed no balance can ever overflow.
func (g Genesis) Validate() error {
	if g.Accounts == 0 {
		return errors.New("genesis: accounts must be at least 1")
	}
	if g.Balance == 0 {
		return errors.New("genesis: balance must be at least 1")
	}
	if n := g.Accounts + g.State; n < g.Accounts {
		return fmt.Errorf("genesis: accounts+state = %d+%d overflows uint64", g.Accounts, g.State)
	}
	if hi, _ := bits.Mul64(g.Accounts+g.State, g.Balance); hi != 0 {
		return fmt.Errorf("genesis: (accounts+state)*balance = %d*%d overflows uint64", g.Accounts+g.State, g.Balance)
	}
	return nil
}

// ParseGenesis reads the app_state of genesis.json.
func ParseGenesis(raw []byte) (Genesis, error) {
	var g Genesis
	if err := json.Unmarshal(raw, &g); err != nil {
		return g, fmt.Errorf("genesis app_state: %w", err)
	}
	return g, g.Validate()
}

// digest is a multiset hash of the state: the sum modulo 2^256 of
// sha256(address || balance || sequence) over all accounts. Unlike a Merkle
// tree it updates in O(1) per changed account; it detects divergence between
// validators but proves nothing to light clients, which we do not serve.
type digest [4]uint64

func accountHash(a Address, acc Account) digest {
	var buf [AddressSize + 16]byte
	copy(buf[:], a[:])
	binary.BigEndian.PutUint64(buf[AddressSize:], acc.Balance)
	binary.BigEndian.PutUint64(buf[AddressSize+8:], acc.Sequence)
	h := sha256.Sum256(buf[:])
	var d digest
	for i := range d {
		d[i] = binary.BigEndian.Uint64(h[i*8:])
	}
	return d
}

func (d *digest) add(x digest) {
	var c uint64
	for i := 3; i >= 0; i-- {
		d[i], c = bits.Add64(d[i], x[i], c)
	}
}

func (d *digest) sub(x digest) {
	var b uint64
	for i := 3; i >= 0; i-- {
		d[i], b = bits.Sub64(d[i], x[i], b)
	}
}

func (d digest) bytes() []byte {
	b := make([]byte, 32)
	for i := range d {
		binary.BigEndian.PutUint64(b[i*8:], d[i])
	}
	return b
}

func digestFromBytes(b []byte) digest {
	var d digest
	for i := range d {
		d[i] = binary.BigEndian.Uint64(b[i*8:])
	}
	return d
}

// appHash commits to the state digest under a domain tag.
func appHash(d digest) []byte {
	h := sha256.New()
	h.Write([]byte("tpslab/app/v1"))
	h.Write(d.bytes())
	return h.Sum(nil)
}

// Audit is what `/audit` returns: a full recount of the committed state.
type Audit struct {
	Height        int64    `json:"height"`
	AppHash       string   `json:"app_hash"`
	Accounts      uint64   `json:"accounts"`
	Supply        string   `json:"supply"` // decimal; a 128-bit sum so an overflow shows
	GenesisSupply uint64   `json:"genesis_supply"`
	DigestOK      bool     `json:"digest_ok"`   // recomputed digest equals the incremental one
	MaxBalance    uint64   `json:"max_balance"` // no balance may exceed the supply
	Problems      []string `json:"problems,omitempty"`
}

// u128 sums balances without overflow.
type u128 struct{ hi, lo uint64 }

func (u *u128) add(x uint64) {
	var c uint64
	u.lo, c = bits.Add64(u.lo, x, 0)
	u.hi += c
}

func (u u128) String() string {
	if u.hi == 0 {
		return fmt.Sprint(u.lo)
	}
	// hi*2^64 + lo in decimal via float is inexact; print exactly by long division.
	var digits []byte
	hi, lo := u.hi, u.lo
	for hi != 0 || lo != 0 {
		var r uint64
		hi, r = bits.Div64(0, hi, 10)
		lo, r = bits.Div64(r, lo, 10)
		digits = append(digits, byte('0'+r))
	}
	for i, j := 0, len(digits)-1; i < j; i, j = i+1, j-1 {
		digits[i], digits[j] = digits[j], digits[i]
	}
	return string(digits)
}
