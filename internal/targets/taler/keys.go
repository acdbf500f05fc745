package taler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Denom is one denomination the exchange offers.
type Denom struct {
	Value, FeeWithdraw, FeeDeposit Amount
	Key                            *RSAPublicKey
	Hash                           [hashLen]byte
	Start, ExpireWithdraw          time.Time
	ExpireDeposit                  time.Time
}

// Keys is what the exchange's /keys says: its currency, denominations and
// online signing keys.
type Keys struct {
	Currency  string
	Version   string
	MasterPub []byte
	Denoms    []Denom
	SignKeys  [][]byte // the exchange's online EdDSA keys
}

type tS struct {
	S int64 `json:"t_s"`
}

func (t tS) time() time.Time { return time.Unix(t.S, 0) }

// ParseKeys reads /keys (protocol v14); it is fuzzed (FuzzParseKeys).
func ParseKeys(b []byte) (*Keys, error) {
	var raw struct {
		Version   string `json:"version"`
		Currency  string `json:"currency"`
		MasterPub string `json:"master_public_key"`
		SignKeys  []struct {
			Key string `json:"key"`
		} `json:"signkeys"`
		Denoms []struct {
			Pub struct {
				Cipher  string `json:"cipher"`
				AgeMask uint32 `json:"age_mask"`
				RSA     string `json:"rsa_public_key"`
			} `json:"denom_pub"`
			Value          string `json:"value"`
			FeeWithdraw    string `json:"fee_withdraw"`
			FeeDeposit     string `json:"fee_deposit"`
			Start          tS     `json:"stamp_start"`
			ExpireWithdraw tS     `json:"stamp_expire_withdraw"`
			ExpireDeposit  tS     `json:"stamp_expire_deposit"`
		} `json:"denoms"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("/keys: %v", err)
	}
	k := &Keys{Currency: raw.Currency, Version: raw.Version}
	var err error
	if k.MasterPub, err = Decrock(raw.MasterPub, 32); err != nil {
		return nil, fmt.Errorf("/keys: master_public_key: %v", err)
	}
	for _, s := range raw.SignKeys {
		p, err := Decrock(s.Key, 32)
		if err != nil {
			return nil, fmt.Errorf("/keys: signkeys: %v", err)
		}
		k.SignKeys = append(k.SignKeys, p)
	}
	for _, d := range raw.Denoms {
		if d.Pub.Cipher != "RSA" || d.Pub.AgeMask != 0 {
			continue // Clause-Schnorr and age-restricted coins: not measured
		}
		enc, err := Decrock(d.Pub.RSA, 0)
		if err != nil {
			return nil, fmt.Errorf("/keys: rsa_public_key: %v", err)
		}
		key, err := ParseRSAPublicKey(enc)
		if err != nil {
			return nil, fmt.Errorf("/keys: %v", err)
		}
		dn := Denom{Key: key, Hash: DenomHash(key, 0), Start: d.Start.time(), ExpireWithdraw: d.ExpireWithdraw.time(), ExpireDeposit: d.ExpireDeposit.time()}
		for _, a := range []struct {
			s   string
			dst *Amount
		}{{d.Value, &dn.Value}, {d.FeeWithdraw, &dn.FeeWithdraw}, {d.FeeDeposit, &dn.FeeDeposit}} {
			if *a.dst, err = ParseAmount(a.s); err != nil {
				return nil, fmt.Errorf("/keys: %v", err)
			}
			if a.dst.Currency != k.Currency {
				return nil, fmt.Errorf("/keys: a denomination in %s, expected the exchange's %s", a.dst.Currency, k.Currency)
			}
		}
		k.Denoms = append(k.Denoms, dn)
	}
	return k, nil
}

// Withdrawable is the denomination of value v one can withdraw at now
// (the one valid longest), or false.
func (k *Keys) Withdrawable(v Amount, now time.Time) (*Denom, bool) {
	var best *Denom
	for i := range k.Denoms {
		d := &k.Denoms[i]
		if d.Value == v && !now.Before(d.Start) && now.Before(d.ExpireWithdraw) && (best == nil || d.ExpireWithdraw.After(best.ExpireWithdraw)) {
			best = d
		}
	}
	return best, best != nil
}

// Values lists the values one can withdraw now, for an error message.
func (k *Keys) Values(now time.Time) string {
	seen := map[string]bool{}
	var out []string
	for _, d := range k.Denoms {
		if s := d.Value.String(); !seen[s] && !now.Before(d.Start) && now.Before(d.ExpireWithdraw) {
			seen[s] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

// SignedBy says whether pub is one of the exchange's online signing keys.
func (k *Keys) SignedBy(pub []byte) bool {
	for _, s := range k.SignKeys {
		if bytes.Equal(s, pub) {
			return true
		}
	}
	return false
}

// FetchKeys asks the exchange at base for its /keys.
func FetchKeys(ctx context.Context, cl *http.Client, base string) (*Keys, error) {
	status, body, err := call(ctx, cl, http.MethodGet, strings.TrimSuffix(base, "/")+"/keys", nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s/keys: HTTP %d: %s", strings.TrimSuffix(base, "/"), status, snippet(body))
	}
	return ParseKeys(body)
}

// call makes one request with a JSON body (nil: none) and reads the answer.
func call(ctx context.Context, cl *http.Client, method, url string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	return res.StatusCode, b, err
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
