package testnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LoadLock is held by a run that sends payments from a range of a
// network's accounts. Two runs whose sender ranges overlap would fight over
// the same sequences; the lock refuses the second one.
type LoadLock struct{ f *os.File }

// LockFile is the file in a network's home that load locks are taken on.
const LockFile = "load.lock"

// segmentBytes is where the segments of a run lock their senders: account
// a is byte segmentBytes+a. A run (or a controller) locks byte a for
// writing; its segments lock their range here for reading, so they never
// conflict with their controller or with each other, and a new run that
// finds a segment here is refused even after its controller died (its
// segments go on sending for seconds: issue 52).
const segmentBytes = 1 << 40

// LockSenders takes the lock on accounts [first, first+n) of the network in
// home. It uses POSIX record locks on that byte range of the lock file, so
// disjoint ranges coexist, and the kernel drops a lock when its process
// dies (no stale lock after a crash or SIGKILL).
func LockSenders(home string, first, n int) (*LoadLock, error) {
	f, err := os.OpenFile(filepath.Join(home, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(first), Len: int64(n)}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		return nil, lockError(f.Name(), home, lk, err)
	}
	// Segments of a run whose controller is gone still send.
	seg := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: segmentBytes + int64(first), Len: int64(n)}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &seg); err == nil && seg.Type != syscall.F_UNLCK {
		f.Close()
		return nil, fmt.Errorf("a segment of another tpslab run (pid %d) is sending from accounts %d..%d of the network in %s; wait for it (a segment whose controller died stops within seconds), or give this run other senders with --senders-offset %d",
			seg.Pid, seg.Start-segmentBytes, seg.Start-segmentBytes+seg.Len-1, home, seg.Start-segmentBytes+seg.Len)
	}
	return &LoadLock{f: f}, nil
}

// LockSegment is a segment's lock on accounts [first, first+n): shared
// with the other segments and its controller, refused by a new run.
// A segment reads the lock file its controller made, read-only: in a pod
// the home is a read-only copy without one, and the controller's lock is
// then the only guard (nil lock, no error).
func LockSegment(home string, first, n int) (*LoadLock, error) {
	f, err := os.Open(filepath.Join(home, LockFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: 0, Start: segmentBytes + int64(first), Len: int64(n)}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s for a segment: %w", f.Name(), err)
	}
	return &LoadLock{f: f}, nil
}

// lockError names the run that holds a conflicting lock.
func lockError(name, home string, lk syscall.Flock_t, err error) error {
	held := lk
	if f, oerr := os.Open(name); oerr == nil {
		defer f.Close()
		if gerr := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &held); gerr == nil && held.Type != syscall.F_UNLCK {
			return fmt.Errorf("another tpslab run (pid %d) is sending from accounts %d..%d of the network in %s; wait for it, or give this run other senders with --senders-offset %d",
				held.Pid, held.Start, held.Start+held.Len-1, home, held.Start+held.Len)
		}
	}
	return fmt.Errorf("lock %s: %w", name, err)
}

// InUse says which tpslab run, if any, holds a load lock on the network in
// home (0: none): a run sending from any of its accounts.
func InUse(home string) int {
	f, err := os.OpenFile(filepath.Join(home, LockFile), os.O_RDWR, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0} // the whole file
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil || lk.Type == syscall.F_UNLCK {
		return 0
	}
	return int(lk.Pid)
}

// Release drops the lock.
func (l *LoadLock) Release() {
	if l != nil && l.f != nil {
		l.f.Close()
	}
}

// Owner is the tpslab process that started a network and will stop it
// itself (a `tpslab run` with no network given), as net.json records it.
type Owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
}

// Me is this process as an owner.
func Me(command string) *Owner {
	return &Owner{PID: os.Getpid(), Command: command, Started: time.Now().UTC()}
}

// Disown records that nobody will stop the network: it was left running on
// purpose.
func (n *Net) Disown() error {
	n.Owner = nil
	return n.save()
}

// TempPrefix names the temporary homes of networks tpslab run starts.
const TempPrefix = "tpslab-net-"

// Orphan is a network a tpslab process started and never stopped.
type Orphan struct {
	Home    string
	Running int
	Owner   Owner
}

// Orphans finds networks tpslab started in temporary homes whose owner is
// gone (killed with SIGKILL, say) while some of their nodes still run.
func Orphans() []Orphan {
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), TempPrefix+"*"))
	var out []Orphan
	for _, h := range homes {
		n, err := Load(h)
		if err != nil || n.Owner == nil || processAlive(n.Owner.PID) {
			continue
		}
		if r := n.Running(); r > 0 {
			out = append(out, Orphan{Home: h, Running: r, Owner: *n.Owner})
		}
	}
	return out
}

// processAlive says pid is a live tpslab process.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "tpslab")
}

// OrphanWarnings are one line each, for people.
func OrphanWarnings() []string {
	var out []string
	for _, o := range Orphans() {
		out = append(out, fmt.Sprintf("found an orphaned network in %s: %d node(s) still running, started by `tpslab %s` (pid %d, gone since); stop it with `tpslab net down --home %s`",
			o.Home, o.Running, o.Owner.Command, o.Owner.PID, o.Home))
	}
	return out
}
