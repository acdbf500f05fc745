// Package sysmon keeps the Go runtime's system monitor from sleeping
// deeply while tpslab generates load. When every P is idle the monitor
// sleeps until the next timer, and the next system call wakes it again,
// after which it polls every 20 µs while any goroutine runs. A load
// generator does exactly that: it wakes, writes, reads and sleeps, fifty
// times a second and more. On a small VM, where each of those thread
// wake-ups is a costly context switch, the monitor was a fifth of tpslab's
// CPU (perf, kvstore and built-in runs at 1000 tx/s); kept awake (polling
// at up to 10 ms when idle), tpslab spent 20-30% less CPU per payment.
// The runtime offers no switch for this but one of its GODEBUG settings: a
// scheduler trace period keeps the monitor out of deep sleep. It is read
// only at start, so tpslab executes itself again with it set.
package sysmon

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// setting keeps the monitor awake; its trace would print once per its
// period (about 24.8 days) of the machine's monotonic clock.
const setting = "schedtrace=2147483647"

// saved holds the GODEBUG the user gave while the re-executed process
// starts; the process puts it back so its children (nodes, databases)
// run as they would have.
const saved = "TPSLAB_GODEBUG_GIVEN"

// maxUptime bounds the machine's uptime at which the setting is used: the
// trace's first line would be printed once the monotonic clock passes its
// period, and a run may last days.
const maxUptime = 14 * 24 * time.Hour

// Awake re-executes the program (same pid, arguments and descriptors) with
// the monitor kept awake, unless it already was, the user set schedtrace
// (GODEBUG=schedtrace=0 turns this off), or the machine cannot say its
// uptime or has been up too long. In the re-executed process it restores
// GODEBUG for child processes and returns. It returns when it did not
// re-execute.
func Awake() {
	if given, ok := os.LookupEnv(saved); ok {
		restore(given)
		return
	}
	given := os.Getenv("GODEBUG")
	if runtime.GOOS != "linux" || strings.Contains(given, "schedtrace=") {
		return
	}
	if up, ok := uptime(); !ok || up > maxUptime {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	godebug := setting
	if given != "" {
		godebug = given + "," + setting
	}
	env := []string{saved + "=" + given, "GODEBUG=" + godebug}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(exe, os.Args, env) // returns only when it failed: go on as we are
}

// restore puts back the GODEBUG the user gave (none when given is empty).
func restore(given string) {
	os.Unsetenv(saved)
	if given == "" {
		os.Unsetenv("GODEBUG")
	} else {
		os.Setenv("GODEBUG", given)
	}
}

// uptime is the machine's, from /proc/uptime.
func uptime() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	s, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}
