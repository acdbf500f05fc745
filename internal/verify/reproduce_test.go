package verify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/testbin"
)

// A built-in run made again three times on its own node program holds;
// the same run whose node program was replaced by another build (the
// slowverify tpslab) is refused in one line naming both hashes (issue 55).
func TestReproduceARun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks")
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "tpslab") // the node program the run records
	copyFile(t, testbin.Path(t), own)
	orig := filepath.Join(dir, "orig")
	if out, err := exec.Command(own, "run", "--validators", "1", "--rate", "200", "--duration", "3s", "--warmup", "1s", "--out", orig).CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out, err := exec.Command(own, "reproduce", orig, "--repeat", "3", "--out", filepath.Join(dir, "again")).CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "reproduced: committed TPS ") || strings.Contains(string(out), "not reproduced") {
		t.Errorf("reproduce: %v", err)
	}
	copyFile(t, testbin.SlowVerify(t), own)
	out, err = exec.Command(own, "reproduce", orig, "--repeat", "1", "--out", filepath.Join(dir, "other")).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "another build (--allow-different runs it anyway)") {
		t.Errorf("another node program: %v\n%s", err, out)
	}
	// Run anyway, the slower build is named: the figures that moved, and
	// the program's hash among what differs.
	out, err = exec.Command(own, "reproduce", orig, "--repeat", "1", "--allow-different", "--out", filepath.Join(dir, "anyway")).CombinedOutput()
	t.Logf("%s", out)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "not reproduced: ") || !strings.Contains(string(out), "moved beyond noise") || !strings.Contains(string(out), "environment differs: ") {
		t.Errorf("the slower build run anyway: %v; want exit 1, the figures that moved and the environment's difference", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(to)
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
