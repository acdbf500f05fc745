package taler

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/testnet/talernet"
)

// vectors are testdata/vectors.json, printed by testdata/vectors.c with the
// exchange's libtalerutil and GNUnet's libgnunetutil. With the exchange
// built (into the cache, or TPSLAB_TALER_PREFIX), TestVectorsFromTheExchange
// prints them anew and checks the Go code against the fresh ones (a new
// RSA key each time).
func vectors(t *testing.T, raw []byte) map[string][]byte {
	t.Helper()
	var v map[string]string
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for k, s := range v {
		if b, err := hex.DecodeString(s); err == nil {
			out[k] = b
		} else {
			out[k] = []byte(s)
		}
	}
	return out
}

func checkVectors(t *testing.T, v map[string][]byte) {
	t.Helper()
	eq := func(name string, got []byte) {
		t.Helper()
		if !bytes.Equal(got, v[name]) {
			t.Errorf("%s:\n got %x\nwant %x", name, got, v[name])
		}
	}
	eq("kdf_salt_ikm_info_more_100", KDF(100, []byte("salt"), []byte("ikm"), []byte("info"), []byte("more")))
	k, err := ParseRSAPublicKey(v["rsa_public_key"])
	if err != nil {
		t.Fatal(err)
	}
	dh := DenomHash(k, 0)
	eq("denom_pub_hash", dh[:])
	if !k.Verify(v["fdh_message"], v["fdh_signature"]) {
		t.Error("GNUnet's FDH signature does not verify: the full-domain hash differs")
	}
	bl := k.Blind(v["fdh_message"], v["bks"])
	eq("blinded", bl)
	ev := CoinEvHash(v["blinded"], dh)
	eq("coin_ev_hash", ev[:])
	coin := ed25519.NewKeyFromSeed(v["coin_priv"])
	eq("coin_pub", coin.Public().(ed25519.PublicKey))
	ch := CoinPubHash(coin.Public().(ed25519.PublicKey))
	eq("coin_pub_hash", ch[:])
	amt, err := ParseAmount("KUDOS:3.25")
	if err != nil {
		t.Fatal(err)
	}
	eq("amount_nbo_KUDOS_3.25", amt.appendNBO(nil))
	reserve := ed25519.NewKeyFromSeed(v["reserve_priv"])
	eq("withdraw_sig", ed25519.Sign(reserve, WithdrawRequest(amt, dh, ev)))
	wh := WireHash("payto://x-taler-bank/127.0.0.1:1/merchant7?receiver-name=M", v["wire_salt"])
	eq("wire_hash", wh[:])
	fee, _ := ParseAmount("KUDOS:0.01")
	d := &Deposit{Amount: amt, Fee: fee, WireHash: wh, DenomHash: dh,
		Timestamp: time.Unix(1700000000, 0), RefundDeadline: time.Unix(1700000100, 0)}
	copy(d.ContractHash[:], v["contract_hash"])
	copy(d.Merchant[:], v["merchant_pub"])
	eq("deposit_sig", ed25519.Sign(coin, DepositRequest(d)))
	if got := Crock(coin.Public().(ed25519.PublicKey)); got != string(v["coin_pub_crockford"]) {
		t.Errorf("crockford: %s, want %s", got, v["coin_pub_crockford"])
	}
}

func TestVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, vectors(t, raw))
}

// TestVectorsFromTheExchange compiles vectors.c against an installed
// exchange and checks fresh vectors (a new RSA key).
func TestVectorsFromTheExchange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the exchange (once, into the cache) and a C program")
	}
	prefix := os.Getenv("TPSLAB_TALER_PREFIX")
	if prefix == "" {
		var err error
		if prefix, err = talernet.Exchange(os.Stderr); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "vectors")
	cc := exec.Command("cc", "-o", bin, "testdata/vectors.c", "-I"+prefix+"/include", "-I"+prefix+"/include/taler",
		"-L"+prefix+"/lib", "-ltalerutil", "-lgnunetutil", "-lgcrypt", "-ljansson")
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	run := exec.Command(bin)
	run.Env = append(os.Environ(), "LD_LIBRARY_PATH="+prefix+"/lib")
	out, err := run.Output()
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, vectors(t, out))
}

func TestAmounts(t *testing.T) {
	for _, s := range []string{"KUDOS:0", "KUDOS:1", "EUR:0.01", "KUDOS:12.34567891"} {
		a, err := ParseAmount(s)
		if err != nil || a.String() != s || FromUnits(a.Currency, a.Units()) != a {
			t.Errorf("%s: %v %v", s, a, err)
		}
	}
	for _, s := range []string{"KUDOS", ":1", "KUDOS:1.123456789", "KUDOS:x", "VERYLONGCURRENCY:1", "KUDOS:1.-1"} {
		if _, err := ParseAmount(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// FuzzDecrock: the decoder of the exchange's binary fields never panics and
// reads back what Crock wrote, in either case.
func FuzzDecrock(f *testing.F) {
	f.Add("ZNNJEEAQR9VV77JXD4ZJMF6VTW2AN6KB8H2S4N59FJ0PJGV57PRG", 32)
	f.Add("", 0)
	f.Add("uoil", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		b, err := Decrock(s, n%70)
		if err != nil {
			return
		}
		if _, err := Decrock(Crock(b), len(b)); err != nil {
			t.Fatalf("%q: re-encoded does not decode: %v", s, err)
		}
		if b2, _ := Decrock(Crock(b), 0); !bytes.Equal(b, b2) {
			t.Fatalf("%q: round trip differs", s)
		}
	})
}

// FuzzParseRSAPublicKey: a denomination key from /keys never panics the parser.
func FuzzParseRSAPublicKey(f *testing.F) {
	raw, _ := os.ReadFile("testdata/vectors.json")
	var v map[string]string
	_ = json.Unmarshal(raw, &v)
	k, _ := hex.DecodeString(v["rsa_public_key"])
	f.Add(k)
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, err := ParseRSAPublicKey(b); err == nil && len(b) < 600 {
			k.FDH([]byte("m"))
		}
	})
}

// The confirmer's watermark reads each id once, waits for an id handed out
// before a later one commits, and gives up on an id no one commits.
func TestWatermark(t *testing.T) {
	var w watermark
	w.at = 10
	t0 := time.Unix(0, 0)
	for _, id := range []int64{11, 13, 14} {
		if !w.add(id) {
			t.Fatalf("id %d: read as seen before", id)
		}
	}
	if w.add(13) || w.add(9) {
		t.Fatal("an id read twice, or below the watermark, counted again")
	}
	w.advance(t0)
	if w.at != 11 {
		t.Fatalf("watermark %d, expected 11 (12 is in flight)", w.at)
	}
	w.advance(t0.Add(gapWait / 2))
	if !w.add(12) || w.at != 11 {
		t.Fatalf("12 committing late: not counted, or watermark %d moved", w.at)
	}
	w.advance(t0.Add(gapWait / 2))
	if w.at != 14 || len(w.above) != 0 {
		t.Fatalf("watermark %d (%d above), expected 14", w.at, len(w.above))
	}
	w.add(16)
	w.advance(t0)
	w.advance(t0.Add(gapWait))
	if w.at != 16 {
		t.Fatalf("watermark %d, expected 16 once 15 was given up", w.at)
	}
}
