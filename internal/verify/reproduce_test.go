package verify_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// The same build at a rate it keeps up with commits the same: its
	// committed TPS is within noise. Its latencies are the machine's as
	// much (CI beside two busy loops: p50 +23.7% beyond the 10% floor of
	// one original run), so the verdict may say so, with exit 1.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) ||
		!regexp.MustCompile(`reproduced: committed TPS [\d,.]+ vs [\d,.]+ \([+-][\d.]+%, within noise\)`).Match(out) {
		t.Errorf("reproduce: %v", err)
	}
	// A result that names another program (with that program's true
	// hash) chooses nothing: refused in one line, and it never ran.
	forged := filepath.Join(dir, "forged")
	if err := os.CopyFS(forged, os.DirFS(orig)); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "mark")
	script := filepath.Join(dir, "node.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755)
	sum := sha256.Sum256([]byte("#!/bin/sh\ntouch " + mark + "\n"))
	b, _ := os.ReadFile(filepath.Join(forged, "result.json"))
	var res map[string]any
	json.Unmarshal(b, &res)
	prog := res["network"].(map[string]any)["provenance"].(map[string]any)["programs"].([]any)[0].(map[string]any)
	prog["path"], prog["sha256"] = script, hex.EncodeToString(sum[:])
	b, _ = json.Marshal(res)
	os.WriteFile(filepath.Join(forged, "result.json"), b, 0o644)
	out, err = exec.Command(own, "reproduce", forged, "--repeat", "1", "--out", filepath.Join(dir, "forged-again")).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "a result file does not choose what runs here") || strings.Count(strings.TrimSpace(string(out)), "\n") > 0 {
		t.Errorf("a result naming a script: %v\n%s", err, out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the program the result named ran")
	}
	copyFile(t, testbin.SlowVerify(t), own)
	out, err = exec.Command(own, "reproduce", orig, "--repeat", "1", "--out", filepath.Join(dir, "other")).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "another build (--allow-different runs it anyway)") {
		t.Errorf("another node program: %v\n%s", err, out)
	}
	// Run anyway, the other build is named among what differs, and the
	// verdict agrees with the exit code. Whether its slower verification
	// moves a 2 s run at 200 tx/s beyond noise is the machine's to say
	// (CI4 on a quiet machine: p50 +2.8%, within noise); bisect's test
	// checks that a slower build is found.
	out, err = exec.Command(own, "reproduce", orig, "--repeat", "1", "--allow-different", "--out", filepath.Join(dir, "anyway")).CombinedOutput()
	t.Logf("%s", out)
	moved := strings.Contains(string(out), "not reproduced: ") && strings.Contains(string(out), "moved beyond noise")
	held := strings.Contains(string(out), "reproduced: ") && !strings.Contains(string(out), "not reproduced: ")
	code := -1
	if err == nil {
		code = 0
	} else if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if !(code == 1 && moved || code == 0 && held) || !regexp.MustCompile(`environment differs: tpslab build [0-9a-f]+ vs [0-9a-f]+`).MatchString(string(out)) {
		t.Errorf("the other build run anyway: exit %d; want the build's difference named, and exit 1 with the figures that moved or exit 0 with reproduced", code)
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
