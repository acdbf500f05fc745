package buildcache

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A cached program that was truncated or lost its execute bit is never
// run: the next use builds it again and says why (issue 52: a truncated
// tpsd crashed as "segmentation fault" and `cache build` called it ready).
func TestDamagedProgramIsBuiltAgain(t *testing.T) {
	t.Setenv("TPSLAB_CACHE", t.TempDir())
	builds := 0
	build := func(out string) *exec.Cmd {
		builds++
		return exec.Command("cp", "/bin/true", out) // a real program, built by a command
	}
	var log strings.Builder
	prog, err := Command("prog", "v1", &log, build)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(prog).Run(); err != nil {
		t.Fatalf("the cached program does not run: %v", err)
	}
	if _, err := Command("prog", "v1", &log, build); err != nil || builds != 1 {
		t.Fatalf("an intact program was built again (%d builds): %v", builds, err)
	}
	for _, damage := range []struct {
		name string
		do   func() error
		want string
	}{
		{"truncated", func() error { return os.Truncate(prog, 1000) }, "bytes"},
		{"not executable", func() error { return os.Chmod(prog, 0o644) }, "not executable"},
		{"same size, other bytes", func() error {
			b, err := os.ReadFile(prog)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return os.WriteFile(prog, b, 0o755)
		}, "SHA-256"},
	} {
		if err := damage.do(); err != nil {
			t.Fatal(err)
		}
		if why := Damaged(prog); !strings.Contains(why, damage.want) {
			t.Errorf("%s: damaged %q, want it to say %q", damage.name, why, damage.want)
		}
		before := builds
		log.Reset()
		p, err := Command("prog", "v1", &log, build)
		if err != nil || builds != before+1 || !strings.Contains(log.String(), "is damaged") {
			t.Errorf("%s: %d builds after %d, log %q, err %v", damage.name, builds, before, log.String(), err)
		}
		if err := exec.Command(p).Run(); err != nil {
			t.Errorf("%s: the rebuilt program does not run: %v", damage.name, err)
		}
	}
}
