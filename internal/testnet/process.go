package testnet

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// alive reports whether pid is a running (not zombie) process whose command
// line mentions home, so a recycled pid is never signalled.
func alive(pid int, home string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// state is the field after the parenthesised command name
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	// A process still inside execve (the parent's Start has returned, the
	// loader has not yet set the argument area) shows an empty cmdline.
	return len(cmdline) == 0 || strings.Contains(string(cmdline), home)
}

// paused says the process is stopped by a signal (SIGSTOP).
func paused(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'T'
}

// stopProcess sends SIGTERM, waits up to grace, then SIGKILLs.
func stopProcess(pid int, home string, grace time.Duration) error {
	if !alive(pid, home) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid, home) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && alive(pid, home); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid, home) {
		return fmt.Errorf("pid %d did not exit after SIGKILL", pid)
	}
	return nil
}

// podAlive says a node in a pod answers on its RPC port: a deleted pod's
// address answers nothing.
func podAlive(nd Node) bool {
	u := strings.TrimPrefix(strings.TrimPrefix(nd.RPC, "http://"), "https://")
	c, err := net.DialTimeout("tcp", u, 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// goSignal is the line the Go runtime prints for a signal it dies of
// ("SIGSEGV: segmentation violation", "SIGABRT: abort").
var goSignal = regexp.MustCompile(`^SIG[A-Z]+: [a-z]`)

// lastWordsSpan is how much of a log's end LastWords reads: a Go panic
// that dumps every goroutine of a busy node puts megabytes after its line.
const lastWordsSpan = 8 << 20

// LastWords is the line a node's log gives for its exit, when it gives one:
// the first Go panic or fatal error in its last lastWordsSpan bytes, or a
// line saying it was killed or ran out of memory. Empty when the log names
// no cause; only such lines are quoted, never the log's other contents.
func (nd Node) LastWords() string {
	f, err := os.Open(nd.Log)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > lastWordsSpan {
		_, _ = f.Seek(st.Size()-lastWordsSpan, 0)
	}
	b := make([]byte, lastWordsSpan)
	n, _ := io.ReadFull(f, b)
	// Only this process's words: an earlier run's panic is not why it
	// exited (a restarted node's log holds both).
	if i := bytes.LastIndex(b[:n], []byte(StartMarker)); i >= 0 {
		b, n = b[i:], n-i
	}
	// The first panic (a goroutine dump follows it), else the runtime's
	// signal line, else the last kill or out-of-memory line: an earlier
	// one ("killed a peer's connection") is not why it exited.
	var panicked, signalled, killed string
	for _, line := range strings.Split(string(b[:n]), "\n") {
		l := strings.TrimSpace(line)
		low := strings.ToLower(l)
		switch {
		case panicked == "" && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")):
			panicked = l
		case signalled == "" && goSignal.MatchString(l):
			signalled = l
		case strings.Contains(low, "out of memory") || strings.HasPrefix(low, "killed") || strings.Contains(low, "signal: killed"):
			killed = l
		}
	}
	l := cmp.Or(panicked, signalled, killed)
	if len(l) > 240 {
		l = l[:240] + "…"
	}
	return l
}

// ExitedError says a process exited while its network started, with its
// log's last lines: the network's home, log included, is removed after a
// failed net up, so the error must carry them.
type ExitedError struct {
	Node string
	Log  string
	End  string // the log's last lines
}

func (e *ExitedError) Error() string {
	return fmt.Sprintf("%s exited while starting; its log %s ends with:\n%s", e.Node, e.Log, e.End)
}

// PortLine is the log's line saying the process's port was taken (empty
// when none does): another program bound it between the kernel naming it
// free and the process binding it, a race no port-picking closes for
// programs we cannot hand a bound socket to.
func (e *ExitedError) PortLine() string {
	for _, l := range strings.Split(e.End, "\n") {
		low := strings.ToLower(l)
		if strings.Contains(low, "address already in use") || strings.Contains(low, "port in use") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// Exited is the error for nd having exited while its network started.
func (nd Node) Exited(lines int) error {
	return &ExitedError{Node: nd.Name, Log: nd.Log, End: tail(nd.Log, lines)}
}
