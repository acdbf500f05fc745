// Package cluster runs a real, local Kubernetes for tests, demos and laptops:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and 1..N
// kubelets, each with its own containerd (Debian's) and CNI bridge, the
// first on this machine's network, the others in network namespaces of
// their own, all joined by one bridge. Every program is Kubernetes' own,
// built once from the Go module proxy into the ignored cache. Pods reach
// only the cluster's addresses and this machine's: forwarded traffic from
// the pod range to anywhere else is dropped, and `down` restores the
// machine's settings and leaves no process, mount, namespace, route or
// rule behind.
package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Addresses: the nodes' network (node i at .i, this machine at .1, where
// the API server listens), each node's pod range, and the services' range.
const (
	nodeNet     = "10.250.0"
	podNet      = "10.244"
	serviceCIDR = "10.96.0.0/16"
	apiPort     = 6443
	MaxNodes    = 8
)

// StateFile is HOME's description of a running cluster.
const StateFile = "cluster.json"

// Options describe a cluster to start.
type Options struct {
	Home  string
	Nodes int
	Log   io.Writer
}

// Node is one kubelet with its containerd.
type Node struct {
	Name    string `json:"name"`
	IP      string `json:"ip"`
	PodCIDR string `json:"pod_cidr"`
	NetNS   string `json:"netns,omitempty"` // empty: this machine's network
	Veth    string `json:"veth,omitempty"`  // its link to the nodes' bridge, this side
	Bridge  string `json:"cni_bridge"`
	Socket  string `json:"containerd_socket"`
	Cgroup  string `json:"cgroup_root"`
}

// Proc is a process the cluster started.
type Proc struct {
	Name    string   `json:"name"`
	PID     int      `json:"pid"`
	Log     string   `json:"log"`
	Command []string `json:"command"`
}

// State is cluster.json.
type State struct {
	Home       string    `json:"home"`
	ID         string    `json:"id"`
	Server     string    `json:"server"`
	Kubeconfig string    `json:"kubeconfig"`
	Image      string    `json:"image"` // tpslab's image, loaded on every node
	Nodes      []Node    `json:"nodes"`
	Procs      []Proc    `json:"procs"`
	Bridge     string    `json:"bridge"`
	Chain      string    `json:"iptables_chain"`
	IPForward  string    `json:"ip_forward_before"`
	RunDir     string    `json:"run_dir"`
	Started    time.Time `json:"started"`
	UpSeconds  float64   `json:"up_seconds"`
	BuildSecs  float64   `json:"build_seconds"`
	Kubernetes string    `json:"kubernetes"`
	// NetnsBefore are the network namespaces there were before: a pod's
	// (cni-*) made after, and left by a sandbox not yet collected when the
	// cluster stopped, is the cluster's to remove.
	NetnsBefore []string `json:"netns_before"`
}

// HostIP is this machine's address on the nodes' network: where the API
// server listens and where pods reach this machine (a segment's
// coordinator).
func (s *State) HostIP() string { return nodeNet + ".1" }

// Load reads HOME/cluster.json.
func Load(home string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(home, StateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(home, StateFile), err)
	}
	return &s, nil
}

// ForKubeconfig is the local cluster a kubeconfig belongs to (its
// directory holds cluster.json), or nil for another cluster.
func ForKubeconfig(path string) *State {
	s, err := Load(filepath.Dir(path))
	if err != nil {
		return nil
	}
	return s
}

func (s *State) save() error {
	b, _ := json.MarshalIndent(s, "", "  ")
	return os.WriteFile(filepath.Join(s.Home, StateFile), b, 0o644)
}

// Needs are the programs from Debian's packages the local cluster uses.
var Needs = map[string]string{"nsenter": "util-linux", "containerd": "containerd", "runc": "runc", "ctr": "containerd", "iptables": "iptables", "ip": "iproute2", "gcc": "gcc"}

func checkMachine() error {
	if os.Geteuid() != 0 {
		return errors.New("cluster up: needs root (it runs containerd and kubelets and sets up network namespaces)")
	}
	var missing []string
	for prog, pkg := range Needs {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, pkg)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		missing = append(missing, "containernetworking-plugins")
	}
	if len(missing) > 0 {
		return fmt.Errorf("cluster up: missing %s: apt-get install %s", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	return nil
}

// Up starts a cluster in o.Home and returns its state once every node is
// Ready. A failure part way stops what was started.
func Up(ctx context.Context, o Options) (st *State, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Nodes < 1 || o.Nodes > MaxNodes {
		return nil, fmt.Errorf("--nodes: %d, expected 1..%d", o.Nodes, MaxNodes)
	}
	if err := checkMachine(); err != nil {
		return nil, err
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, err
	}
	if old, err := Load(home); err == nil {
		if old.alive() {
			return nil, fmt.Errorf("--home: %s already runs a cluster (tpslab cluster down --home %s first)", home, home)
		}
		fmt.Fprintf(o.Log, "cleaning up what a dead cluster in %s left\n", home)
		old.Down(o.Log)
	}
	if err := os.MkdirAll(filepath.Join(home, "logs"), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	progs, err := buildPrograms(o.Log)
	if err != nil {
		return nil, err
	}
	built := time.Since(start)
	sum := sha256.Sum256([]byte(home))
	id := hex.EncodeToString(sum[:])[:6]
	st = &State{Home: home, ID: id, Server: fmt.Sprintf("https://%s.1:%d", nodeNet, apiPort), Kubeconfig: filepath.Join(home, "kubeconfig"),
		Bridge: "tpk" + id, Chain: "TPSLAB-" + strings.ToUpper(id), RunDir: "/run/tpslab-" + id, Started: time.Now().UTC(),
		BuildSecs: built.Seconds(), Kubernetes: KubeVersion}
	defer func() {
		if err != nil {
			fmt.Fprintf(o.Log, "cluster up failed (%v); stopping what started\n", err)
			st.Down(o.Log)
			st = nil
		}
	}()
	for i := 1; i <= o.Nodes; i++ {
		n := Node{Name: fmt.Sprintf("node%d", i), IP: fmt.Sprintf("%s.%d", nodeNet, i), PodCIDR: fmt.Sprintf("%s.%d.0/24", podNet, i),
			Bridge: fmt.Sprintf("tpc%s%d", id, i), Socket: filepath.Join(st.RunDir, fmt.Sprintf("n%d", i), "containerd.sock"),
			Cgroup: fmt.Sprintf("/tpslab-%s-n%d", id, i)}
		if i > 1 {
			n.NetNS = fmt.Sprintf("tpslab-%s-n%d", id, i)
			n.Veth = fmt.Sprintf("tpv%s%d", id, i)
		}
		st.Nodes = append(st.Nodes, n)
	}
	st.NetnsBefore = podNetns()
	if err := st.save(); err != nil {
		return st, err
	}
	if err := st.network(); err != nil {
		return st, err
	}
	if err := st.save(); err != nil {
		return st, err
	}
	if err := st.controlPlane(ctx, progs); err != nil {
		return st, err
	}
	img, tars, err := writeImages(progs, home)
	if err != nil {
		return st, err
	}
	st.Image = img
	for i := range st.Nodes {
		if err := st.startNode(ctx, i, progs, tars); err != nil {
			return st, err
		}
		st.save()
	}
	if err := st.waitReady(ctx); err != nil {
		return st, err
	}
	st.UpSeconds = time.Since(start).Seconds()
	return st, st.save()
}

// run runs a command and says what failed.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// network makes the nodes' bridge, each namespaced node's link and routes,
// and the rules that keep pod traffic inside.
func (s *State) network() error {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return err
	}
	s.IPForward = strings.TrimSpace(string(b))
	steps := [][]string{
		{"ip", "link", "add", s.Bridge, "type", "bridge"},
		{"ip", "addr", "add", nodeNet + ".1/24", "dev", s.Bridge},
		{"ip", "link", "set", s.Bridge, "up"},
	}
	for _, n := range s.Nodes[1:] {
		steps = append(steps,
			[]string{"ip", "netns", "add", n.NetNS},
			[]string{"ip", "link", "add", n.Veth, "type", "veth", "peer", "name", "eth0", "netns", n.NetNS},
			[]string{"ip", "link", "set", n.Veth, "master", s.Bridge},
			[]string{"ip", "link", "set", n.Veth, "up"},
			[]string{"ip", "-n", n.NetNS, "addr", "add", n.IP + "/24", "dev", "eth0"},
			[]string{"ip", "-n", n.NetNS, "link", "set", "eth0", "up"},
			[]string{"ip", "-n", n.NetNS, "link", "set", "lo", "up"},
			[]string{"ip", "-n", n.NetNS, "route", "add", "default", "via", nodeNet + ".1"},
			[]string{"ip", "netns", "exec", n.NetNS, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
			[]string{"ip", "route", "add", n.PodCIDR, "via", n.IP},
		)
	}
	pods := podNet + ".0.0/16"
	steps = append(steps,
		[]string{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
		[]string{"iptables", "-N", s.Chain},
		// Inside the cluster: pods, nodes and this machine's bridge address.
		[]string{"iptables", "-A", s.Chain, "-s", pods, "-d", pods, "-j", "ACCEPT"},
		[]string{"iptables", "-A", s.Chain, "-s", pods, "-d", nodeNet + ".0/24", "-j", "ACCEPT"},
		[]string{"iptables", "-A", s.Chain, "-s", nodeNet + ".0/24", "-d", pods, "-j", "ACCEPT"},
		[]string{"iptables", "-A", s.Chain, "-s", nodeNet + ".0/24", "-d", nodeNet + ".0/24", "-j", "ACCEPT"},
		// Anything else from a pod or a node stays in.
		[]string{"iptables", "-A", s.Chain, "-s", pods, "-j", "DROP"},
		[]string{"iptables", "-A", s.Chain, "-s", nodeNet + ".0/24", "-j", "DROP"},
		[]string{"iptables", "-I", "FORWARD", "1", "-j", s.Chain},
	)
	for _, st := range steps {
		if err := run(st[0], st[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// start runs a program of the cluster in its own session, in netns when
// set, its output to HOME/logs/NAME.log.
func (s *State) start(name, netns string, args ...string) (*Proc, error) {
	log := filepath.Join(s.Home, "logs", name+".log")
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if netns != "" {
		// nsenter enters the network namespace alone: `ip netns exec`
		// would also remount /sys, hiding the cgroup mounts from a kubelet.
		args = append([]string{"nsenter", "--net=/run/netns/" + netns, "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", name, err)
	}
	go cmd.Wait()
	p := Proc{Name: name, PID: cmd.Process.Pid, Log: log, Command: args}
	s.Procs = append(s.Procs, p)
	return &p, nil
}

// waitFor polls ok until it holds, the process dies, or the time is up.
func waitFor(ctx context.Context, p *Proc, what string, d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for {
		if ok() {
			return nil
		}
		if p != nil && !pidAlive(p.PID) {
			return fmt.Errorf("%s exited before %s; its log %s ends:\n%s", p.Name, what, p.Log, logTail(p.Log, 15))
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s: not after %s", what, d)
			if p != nil {
				msg += fmt.Sprintf("; %s ends:\n%s", p.Log, logTail(p.Log, 15))
			}
			return errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is dead.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

func (s *State) alive() bool {
	for _, p := range s.Procs {
		if pidAlive(p.PID) {
			return true
		}
	}
	return false
}

// Running counts the cluster's processes that run, of all.
func (s *State) Running() (up, all int) {
	for _, p := range s.Procs {
		if pidAlive(p.PID) {
			up++
		}
	}
	return up, len(s.Procs)
}

func itoa(i int) string { return strconv.Itoa(i) }
