package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Down stops the cluster and undoes everything Up did: pods first (so each
// kubelet tears its sandboxes down: their namespaces, mounts and addresses),
// then every process, then what is left of mounts, cgroups, links,
// namespaces, routes and rules. It goes on past failures and reports them.
func (s *State) Down(log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	var problems []string
	s.drainPods(log)
	for i := len(s.Procs) - 1; i >= 0; i-- {
		stop(s.Procs[i].PID)
	}
	// Containers and their shims outlive containerd: end every process
	// whose command or cgroup is this cluster's.
	for pass := 0; pass < 3; pass++ {
		if n := s.killLeftovers(); n == 0 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, m := range s.mounts() {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			problems = append(problems, fmt.Sprintf("unmount %s: %v", m, err))
		}
	}
	s.removeCgroups()
	for _, ns := range s.podNetnsLeft() {
		p := "/run/netns/" + ns
		syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.Remove(p); err != nil {
			problems = append(problems, fmt.Sprintf("pod network namespace %s: %v", ns, err))
		}
	}
	for _, n := range s.Nodes {
		if n.NetNS != "" {
			if _, err := os.Stat("/run/netns/" + n.NetNS); err == nil {
				if err := run("ip", "netns", "del", n.NetNS); err != nil {
					problems = append(problems, err.Error())
				}
			}
		} else if linkExists(n.Bridge) {
			run("ip", "link", "del", n.Bridge)
		}
	}
	if linkExists(s.Bridge) {
		if err := run("ip", "link", "del", s.Bridge); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, n := range s.Nodes[min(1, len(s.Nodes)):] {
		exec.Command("ip", "route", "del", n.PodCIDR).Run() // gone with the bridge, normally
	}
	if s.Chain != "" && exec.Command("iptables", "-n", "-L", s.Chain).Run() == nil {
		for exec.Command("iptables", "-D", "FORWARD", "-j", s.Chain).Run() == nil {
		}
		run("iptables", "-F", s.Chain)
		if err := run("iptables", "-X", s.Chain); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if s.IPForward != "" {
		os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(s.IPForward), 0o644)
	}
	os.RemoveAll(s.RunDir)
	os.Remove(filepath.Join(s.Home, StateFile))
	if len(problems) > 0 {
		return fmt.Errorf("cluster down: %s", strings.Join(problems, "; "))
	}
	fmt.Fprintf(log, "cluster in %s is down\n", s.Home)
	return nil
}

// drainPods deletes every pod while the kubelets still run, and waits (a
// minute at most) for them to be gone.
func (s *State) drainPods(log io.Writer) {
	if !s.alive() {
		return
	}
	cs, err := Client(s.Kubeconfig)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	zero := int64(0)
	for _, ns := range nss.Items {
		cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	}
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintln(log, "warning: pods still there after a minute; stopping the nodes anyway")
}

// stop ends a process: SIGTERM, then SIGKILL after 10 s.
func stop(pid int) {
	if !pidAlive(pid) {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100 && pidAlive(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if pidAlive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// killLeftovers kills the processes that belong to the cluster: shims
// serving its containerds, and anything in its cgroups.
func (s *State) killLeftovers() int {
	entries, _ := os.ReadDir("/proc")
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		mine := strings.Contains(string(cmd), s.RunDir) || strings.Contains(string(cg), "/tpslab-"+s.ID+"-")
		if mine && pidAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			killed++
		}
	}
	return killed
}

// mounts are the mount points under the cluster's folders, deepest first,
// and the network namespaces its pods left.
func (s *State) mounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if under(mp, s.Home) || under(mp, s.RunDir) {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func under(p, dir string) bool { return dir != "" && (p == dir || strings.HasPrefix(p, dir+"/")) }

// removeCgroups removes the nodes' cgroups, deepest first, in every
// hierarchy.
func (s *State) removeCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, r := range roots {
		for _, n := range s.Nodes {
			top := filepath.Join(r, n.Cgroup)
			var dirs []string
			filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
			for _, d := range dirs {
				syscall.Rmdir(d)
			}
		}
	}
}

func linkExists(name string) bool { return exec.Command("ip", "link", "show", name).Run() == nil }

// Leftovers lists what of the cluster is still on the machine: processes,
// mounts, namespaces, links, routes and rules (empty after a clean down).
func (s *State) Leftovers() []string {
	var out []string
	for _, p := range s.Procs {
		if pidAlive(p.PID) {
			out = append(out, fmt.Sprintf("process %s (pid %d)", p.Name, p.PID))
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if (strings.Contains(string(cmd), s.RunDir) || strings.Contains(string(cg), "/tpslab-"+s.ID+"-")) && pidAlive(pid) {
			out = append(out, fmt.Sprintf("process %d: %s", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	for _, m := range s.mounts() {
		out = append(out, "mount "+m)
	}
	for _, n := range s.Nodes {
		if n.NetNS != "" {
			if _, err := os.Stat("/run/netns/" + n.NetNS); err == nil {
				out = append(out, "netns "+n.NetNS)
			}
		} else if linkExists(n.Bridge) {
			out = append(out, "link "+n.Bridge)
		}
	}
	if linkExists(s.Bridge) {
		out = append(out, "link "+s.Bridge)
	}
	for _, ns := range s.podNetnsLeft() {
		out = append(out, "netns "+ns)
	}
	if b, err := exec.Command("ip", "route").Output(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, podNet+".") || strings.HasPrefix(l, nodeNet+".") {
				out = append(out, "route "+l)
			}
		}
	}
	if b, err := exec.Command("iptables-save").Output(); err == nil && strings.Contains(string(b), s.Chain) {
		out = append(out, "iptables chain "+s.Chain)
	}
	for _, n := range s.Nodes {
		for _, r := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
			if _, err := os.Stat(filepath.Join(r, n.Cgroup)); err == nil {
				out = append(out, "cgroup "+filepath.Join(r, n.Cgroup))
			}
		}
	}
	return out
}

// podNetns are the pod network namespaces (cni-*) there are.
func podNetns() []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "cni-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// podNetnsLeft are the pod network namespaces made since the cluster
// started.
func (s *State) podNetnsLeft() []string {
	before := map[string]bool{}
	for _, n := range s.NetnsBefore {
		before[n] = true
	}
	var out []string
	for _, n := range podNetns() {
		st, err := os.Stat("/run/netns/" + n)
		if err == nil && !before[n] && !st.ModTime().Before(s.Started.Add(-time.Second)) {
			out = append(out, n)
		}
	}
	return out
}
