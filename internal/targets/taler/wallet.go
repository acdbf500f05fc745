package taler

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Coin is a withdrawn coin: its key and the denomination's signature.
type Coin struct {
	Priv  ed25519.PrivateKey
	Pub   [32]byte
	Denom *Denom
	Sig   []byte // unblinded RSA signature over the coin's public key hash
}

// Reserve is a reserve's key pair.
type Reserve struct {
	Priv ed25519.PrivateKey
	Pub  []byte
}

// NewReserve makes a reserve key.
func NewReserve() Reserve {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // the system's random source failed
	}
	return Reserve{Priv: priv, Pub: pub}
}

// Bank is the exchange's account at a Taler wire gateway that takes
// admin transfers (the exchange's fakebank, or libeufin's test bank).
type Bank struct {
	Gateway string // the exchange account's wire gateway URL, ending in /
	Debit   string // the payto URI the money comes from
}

// Fund wires amount into reserve r, as a customer's bank transfer whose
// subject is the reserve's public key.
func (b Bank) Fund(ctx context.Context, cl *http.Client, r Reserve, amount Amount) error {
	body, _ := json.Marshal(map[string]string{"amount": amount.String(), "reserve_pub": Crock(r.Pub), "debit_account": b.Debit})
	url := strings.TrimSuffix(b.Gateway, "/") + "/admin/add-incoming"
	status, ans, err := call(ctx, cl, http.MethodPost, url, body)
	if err != nil {
		return fmt.Errorf("fund a reserve: %w", err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("fund a reserve: %s: HTTP %d: %s", url, status, snippet(ans))
	}
	return nil
}

// WaitReserve waits until the exchange holds at least amount in reserve r
// (its wirewatch imported the transfer).
func WaitReserve(ctx context.Context, cl *http.Client, base string, r Reserve, amount Amount) error {
	url := strings.TrimSuffix(base, "/") + "/reserves/" + Crock(r.Pub)
	for {
		status, ans, err := call(ctx, cl, http.MethodGet, url, nil)
		if err == nil && status == http.StatusOK {
			var v struct {
				Balance string `json:"balance"`
			}
			if json.Unmarshal(ans, &v) == nil {
				if bal, err := ParseAmount(v.Balance); err == nil && bal.Units() >= amount.Units() {
					return nil
				}
			}
		} else if err == nil && status != http.StatusNotFound {
			return fmt.Errorf("%s: HTTP %d: %s", url, status, snippet(ans))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the reserve was not credited (is taler-exchange-wirewatch running?): %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Withdraw withdraws one coin of denomination d from reserve r: a fresh
// coin key, its public key hash blinded for d, the reserve's signature;
// the exchange's blind signature is unblinded and checked.
func Withdraw(ctx context.Context, cl *http.Client, base string, r Reserve, d *Denom) (*Coin, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	bks := make([]byte, 32)
	if _, err := rand.Read(bks); err != nil {
		return nil, err
	}
	msg := CoinPubHash(pub)
	blinded := d.Key.Blind(msg[:], bks)
	ev := CoinEvHash(blinded, d.Hash)
	withFee := FromUnits(d.Value.Currency, d.Value.Units()+d.FeeWithdraw.Units())
	sig := ed25519.Sign(r.Priv, WithdrawRequest(withFee, d.Hash, ev))
	body, _ := json.Marshal(map[string]any{
		"denom_pub_hash": Crock(d.Hash[:]),
		"reserve_sig":    Crock(sig),
		"coin_ev":        map[string]string{"cipher": "RSA", "rsa_blinded_planchet": Crock(blinded)},
	})
	url := strings.TrimSuffix(base, "/") + "/reserves/" + Crock(r.Pub) + "/withdraw"
	status, ans, err := call(ctx, cl, http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("withdraw: HTTP %d: %s", status, snippet(ans))
	}
	blindSig, err := ParseWithdrawAnswer(ans)
	if err != nil {
		return nil, err
	}
	ub, err := d.Key.Unblind(blindSig, msg[:], bks)
	if err != nil {
		return nil, fmt.Errorf("withdraw: %v", err)
	}
	c := &Coin{Priv: priv, Denom: d, Sig: ub}
	copy(c.Pub[:], pub)
	return c, nil
}

// ParseWithdrawAnswer reads the blinded signature of a withdraw's answer;
// it is fuzzed.
func ParseWithdrawAnswer(b []byte) ([]byte, error) {
	var v struct {
		EvSig struct {
			Cipher string `json:"cipher"`
			Sig    string `json:"blinded_rsa_signature"`
		} `json:"ev_sig"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.EvSig.Cipher != "RSA" {
		return nil, fmt.Errorf("withdraw: an answer without an RSA ev_sig: %s", snippet(b))
	}
	return Decrock(v.EvSig.Sig, 0)
}
