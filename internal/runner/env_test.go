package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The program's hash is its SHA-256 whether computed or taken from the
// cache, and the cache is keyed by the Go build ID the toolchain reports.
func TestSelfHashIsTheProgramsSHA256(t *testing.T) {
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])[:16]
	for i, how := range []string{"computed", "from the cache"} {
		if got := selfHash(); got != want {
			t.Fatalf("selfHash %s (call %d): %q, want %q", how, i, got, want)
		}
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	if got := goBuildID(f); got == "" || got != strings.TrimSpace(string(out)) {
		t.Fatalf("goBuildID %q, go tool buildid %q", got, out)
	}
}
