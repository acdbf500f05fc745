package history

import (
	"os"
	"path/filepath"
	"testing"
)

// An add after a cut last line (a crash mid-append) leaves a readable
// store: the cut line is removed and named, the new entry follows the
// whole ones (issue 34, case 12).
func TestAddAfterACutLine(t *testing.T) {
	st := Store{Path: filepath.Join(t.TempDir(), "h.jsonl")}
	for _, l := range []string{"a", "b"} {
		if cut, err := st.Add(Entry{Series: "s", Label: l}); err != nil || cut != "" {
			t.Fatalf("add %s: %v %q", l, err, cut)
		}
	}
	f, err := os.OpenFile(st.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"series":"s","lab`)
	f.Close()
	if _, err := st.All(); err == nil {
		t.Fatal("a cut line reads as a store")
	}
	cut, err := st.Add(Entry{Series: "s", Label: "c"})
	if err != nil || cut != `{"series":"s","lab` {
		t.Fatalf("add after the cut: %v, cut %q", err, cut)
	}
	all, err := st.All()
	if err != nil || len(all) != 3 || all[2].Label != "c" {
		t.Fatalf("after: %v %+v", err, all)
	}
}
