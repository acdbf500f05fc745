package testnet

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLastWordsQuotesOnlyTheCause(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ log, want string }{
		{"I[..] committed block height=4\nfatal error: concurrent map writes\n\ngoroutine 7 [running]:\nmain.f()\n", "fatal error: concurrent map writes"},
		{"started\npanic: runtime error: index out of range [3] with length 3\n\ngoroutine 1:\n" + strings.Repeat("x\n", 1000), "panic: runtime error: index out of range [3] with length 3"},
		{"I[..] committed block height=4\nI[..] priv_validator_key loaded\n", ""},
		{"I[..] committed\nSIGABRT: abort\nPC=0x46e1c1 m=0 sigcode=0\n", "SIGABRT: abort"},
		{"killed the connection of peer 3\npanic: boom\n\ngoroutine 1:\n", "panic: boom"},
		{"killed the connection of peer 3\nstarting\nKilled\n", "Killed"},
		// A restarted node's log: the earlier run's panic is not this one's.
		{"panic: version does not exist\n\ngoroutine 1:\n" + StartMarker + " 2026-12-04T21:00:00Z\nstarting\nfatal error: out of memory\n", "fatal error: out of memory"},
		{"panic: boom\n" + StartMarker + " 2026-12-04T21:00:00Z\nstarting\n", ""},
	} {
		p := filepath.Join(dir, "node.log")
		if err := os.WriteFile(p, []byte(c.log), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := (Node{Log: p}).LastWords(); got != c.want {
			t.Errorf("LastWords of %q = %q, want %q", c.log[:20], got, c.want)
		}
	}
	if got := (Node{Log: filepath.Join(dir, "none")}).LastWords(); got != "" {
		t.Errorf("a missing log gave %q", got)
	}
}

// A process that lost its port to another program is told from one that
// died of anything else, by the line each program we start prints.
func TestExitedNamesATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, goErr := net.Listen("tcp", l.Addr().String()) // a Go node's own words
	if goErr == nil {
		t.Fatal("a second listener on a bound port succeeded")
	}
	dir := t.TempDir()
	for _, c := range []struct{ log, want string }{
		{"I[..] starting\nE[..] " + goErr.Error() + "\n", "E[..] " + goErr.Error()},
		{"2026-12-04 ERROR Failed to launch HTTP service. Is the port in use?\n", "2026-12-04 ERROR Failed to launch HTTP service. Is the port in use?"},
		{"LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use\nFATAL:  could not create any TCP/IP sockets\n", "LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"},
		{"ERROR Database connection failed\n", ""},
	} {
		p := filepath.Join(dir, "x.log")
		if err := os.WriteFile(p, []byte(c.log), 0o600); err != nil {
			t.Fatal(err)
		}
		var e *ExitedError
		if !errors.As((Node{Name: "x", Log: p}).Exited(10), &e) || e.PortLine() != c.want {
			t.Errorf("the port line of %q = %q, want %q", c.log, e.PortLine(), c.want)
		}
	}
}
