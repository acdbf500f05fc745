package sysmon

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/testbin"
)

// The re-executed process gives its children the GODEBUG the user gave.
func TestRestoreForChildren(t *testing.T) {
	t.Setenv(saved, "madvdontneed=1")
	t.Setenv("GODEBUG", "madvdontneed=1,"+setting)
	Awake()
	if g, ok := os.LookupEnv(saved); ok || os.Getenv("GODEBUG") != "madvdontneed=1" {
		t.Errorf("GODEBUG %q, marker %q (%v); want the user's and no marker", os.Getenv("GODEBUG"), g, ok)
	}
	t.Setenv(saved, "")
	Awake()
	if g, ok := os.LookupEnv("GODEBUG"); ok {
		t.Errorf("GODEBUG %q after a start without one", g)
	}
}

// tpslab sink starts again with the monitor kept awake, as the same
// process; a schedtrace the user set is left alone.
func TestSinkRunsAwake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tpslab")
	}
	if _, ok := uptime(); !ok {
		t.Skip("no /proc/uptime")
	}
	if up, _ := uptime(); up > maxUptime {
		t.Skip("this machine has been up too long for the setting")
	}
	bin := testbin.Path(t)
	environ := func(godebug string, wait time.Duration) []byte {
		t.Helper()
		cmd := exec.Command(bin, "sink", "--listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "GODEBUG="+godebug)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		var env []byte
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			// The same pid: after the exec its environment is the new one.
			env, _ = os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
			if bytes.Contains(env, []byte(saved+"=")) {
				break
			}
		}
		return env
	}
	if env := environ("madvdontneed=1", 10*time.Second); !bytes.Contains(env, []byte("\x00GODEBUG=madvdontneed=1,"+setting+"\x00")) || !bytes.Contains(env, []byte(saved+"=madvdontneed=1\x00")) {
		t.Errorf("the sink did not start again with the monitor awake: %q", env)
	}
	if env := environ("schedtrace=0", time.Second); bytes.Contains(env, []byte(saved+"=")) || !bytes.Contains(env, []byte("GODEBUG=schedtrace=0\x00")) {
		t.Errorf("a schedtrace the user set was changed: %q", env)
	}
}
