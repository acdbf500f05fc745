package factom

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/FactomProject/factom"
)

// vectors are testdata/vectors.txt: bytes tpslab made, which factomd's own
// code read back (the file says how).
func vectors(t *testing.T) map[string]string {
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if k, val, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(k, "#") {
			v[k] = val
		}
	}
	return v
}

func TestFactoidTransactionAsFactomdReadsIt(t *testing.T) {
	v := vectors(t)
	raw, id, err := FactoidTx(FactoidWallet("vector", 0), []Out{{Address: FactoidWallet("vector", 1).RCDHash(), Amount: 12345}},
		[]Out{{Address: ECWallet("vector", 0).PubBytes(), Amount: 5000000}}, 1000, 1795862259472)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(raw) != v["TX"] || hex.EncodeToString(id[:]) != v["ID"] {
		t.Errorf("transaction %x id %x, expected the bytes and id factomd read: %s %s", raw, id, v["TX"], v["ID"])
	}
	e := factom.NewEntryFromStrings("b49510149758b6d0abcba736f54813df1d89fbe4203470c1b78b608089c81b03", "content", "a", "b")
	b, _ := e.MarshalBinary()
	if hex.EncodeToString(b) != v["ENTRY"] || hex.EncodeToString(e.Hash()) != v["EHASH"] {
		t.Errorf("entry %x hash %x, expected factomd's %s %s", b, e.Hash(), v["ENTRY"], v["EHASH"])
	}
}

func TestPaymentsSplitBack(t *testing.T) {
	c := &Codec{EC: []*factom.ECAddress{ECWallet("s", 0), ECWallet("s", 1)}, FA: []*factom.FactoidAddress{FactoidWallet("s", 0), FactoidWallet("s", 1)},
		Chains: []string{strings.Repeat("ab", 32)}, Rate: 1000, Run: "r", Content: 100}
	for _, kind := range []string{KindEntry, KindChain, KindFactoid} {
		tx, ok := c.SignKind(nil, kind, 0, []int{1}, 5, 7)
		if !ok {
			t.Fatalf("%s: not signed", kind)
		}
		tag, id, first, second, ok := Split(tx)
		if !ok || id != c.ID(tx) || id == ([32]byte{}) {
			t.Fatalf("%s: split %v, id %s", kind, ok, id)
		}
		var req struct {
			Method string `json:"method"`
		}
		if err := json.Unmarshal(first, &req); err != nil {
			t.Fatalf("%s: first body %s: %v", kind, first, err)
		}
		want := map[string]string{KindEntry: "commit-entry", KindChain: "commit-chain", KindFactoid: "factoid-submit"}[kind]
		if req.Method != want || (tag == tagFactoid) != (len(second) == 0) {
			t.Errorf("%s: tag %d, first %s, second %d bytes", kind, tag, req.Method, len(second))
		}
	}
}

// Split reads bytes that came back from a presigned file or a worker:
// never a panic, whatever they hold.
func FuzzSplit(f *testing.F) {
	c := &Codec{EC: []*factom.ECAddress{ECWallet("s", 0)}, Chains: []string{strings.Repeat("ab", 32)}, Run: "r", Content: 10}
	f.Add(c.Sign(nil, 0, 0, 1, 1))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, first, second, ok := Split(b); ok && len(first)+len(second)+head != len(b) {
			t.Errorf("split %d bytes into %d and %d", len(b), len(first), len(second))
		}
	})
}

// The generator's cost of one entry: signing its commit and laying out
// both requests (presigned payments pay it before the load, live ones
// while the clock runs).
func BenchmarkSignEntry(b *testing.B) {
	c := &Codec{EC: []*factom.ECAddress{ECWallet("b", 0)}, Chains: []string{strings.Repeat("ab", 32)}, Run: "bench", Content: 200}
	var dst []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = c.Sign(dst[:0], 0, 0, 1, uint64(i))
	}
}
