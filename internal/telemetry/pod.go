package telemetry

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// PodPID follows the main process of a Kubernetes pod's container on this
// machine (a local cluster's kubelets run here), found by the pod's UID in
// its cgroup path: the kubelet names each pod's group pod<uid> (cgroupfs)
// or kubepods-…-pod<uid with underscores>.slice (systemd). Its Get is 0
// when the pod's processes are not on this machine.
type PodPID struct {
	uid string
	pid int
}

// Get is the pid of the pod uid's main process, scanning /proc only when
// the pod changed or the process it had left the pod.
func (p *PodPID) Get(uid string) int {
	if uid == "" {
		return 0
	}
	if uid == p.uid && p.pid > 0 && inPod(p.pid, uid) {
		return p.pid
	}
	p.uid, p.pid = uid, podMain(uid)
	return p.pid
}

func inPod(pid int, uid string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "pod"+uid) || strings.Contains(s, "pod"+strings.ReplaceAll(uid, "-", "_"))
}

// podMain is the pod's process whose parent is outside the pod (the
// container's first process, started by its shim), not the sandbox's
// pause; 0 when there is none.
func podMain(uid string) int {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return 0
	}
	for _, pr := range procs {
		if !inPod(pr.PID, uid) {
			continue
		}
		st, err := pr.Stat()
		if err != nil || st.Comm == "pause" || inPod(st.PPID, uid) {
			continue
		}
		return pr.PID
	}
	return 0
}
