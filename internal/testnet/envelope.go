package testnet

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Envelope is the hardware a local node may use: a CPU limit in cores and
// a memory limit in bytes, enforced by a cgroup of its own (v1's cpu and
// memory controllers, or v2's), the same words as a pod's --node-cpu and
// --node-memory (docs/networks.md, "Resource envelopes").
type Envelope struct {
	CPU    float64 `json:"cpu_cores,omitempty"`
	Memory int64   `json:"memory_bytes,omitempty"`
	// Name is the node's group below each controller's root; Groups the
	// folders its processes go in (one per v1 controller, or v2's one),
	// made again at each start (a `net start` after `net down`).
	Name   string   `json:"cgroup"`
	Groups []string `json:"cgroups,omitempty"`
}

// String says the limits in a user's words.
func (e *Envelope) String() string {
	var parts []string
	if e.CPU > 0 {
		parts = append(parts, fmt.Sprintf("%g cores of CPU", e.CPU))
	}
	if e.Memory > 0 {
		parts = append(parts, resource.NewQuantity(e.Memory, resource.BinarySI).String()+" of memory")
	}
	return strings.Join(parts, ", ")
}

// cgroupRoot is where the machine mounts its cgroups.
var cgroupRoot = "/sys/fs/cgroup"

// cpuPeriod is the CFS period limits are written over, 100 ms as the
// kubelet's.
const cpuPeriod = 100000

// ParseEnvelopes reads --node-cpu and --node-memory: a value for every
// node ("0.5", "500m", "1Gi"), and NAME=VALUE for one ("node3=0.25"),
// comma-separated. It returns each node's envelope by name ("" for all).
func ParseEnvelopes(cpu, memory string) (map[string]Envelope, error) {
	return parseEnvelopes(cpu, memory, "--node-cpu", "--node-memory")
}

// CheckEnvelopes is ParseEnvelopes for a network of nodes nodes (0: not
// known yet), each name one of them; cpuName and memoryName are the
// settings' names in errors ("network.node_cpu", or the flags).
func CheckEnvelopes(cpu, memory string, nodes int, cpuName, memoryName string) (map[string]Envelope, error) {
	envs, err := parseEnvelopes(cpu, memory, cpuName, memoryName)
	if err != nil {
		return nil, err
	}
	for name := range envs {
		var i int
		if _, err := fmt.Sscanf(name, "node%d", &i); name != "" && nodes > 0 && (err != nil || fmt.Sprintf("node%d", i) != name || i >= nodes) {
			return nil, fmt.Errorf("%s/%s: node %q, expected node0..node%d", cpuName, memoryName, name, nodes-1)
		}
	}
	return envs, nil
}

func parseEnvelopes(cpu, memory, cpuName, memoryName string) (map[string]Envelope, error) {
	out := map[string]Envelope{}
	for _, f := range []struct {
		flag, v string
		set     func(*Envelope, resource.Quantity) error
	}{
		{cpuName, cpu, func(e *Envelope, q resource.Quantity) error {
			if e.CPU = q.AsApproximateFloat64(); e.CPU < 0.01 {
				return errors.New("at least 10m (a hundredth of a core)")
			}
			return nil
		}},
		{memoryName, memory, func(e *Envelope, q resource.Quantity) error {
			if e.Memory = q.Value(); e.Memory < 16<<20 {
				return errors.New("at least 16Mi")
			}
			return nil
		}},
	} {
		if f.v == "" {
			continue
		}
		for _, item := range strings.Split(f.v, ",") {
			name, v, per := strings.Cut(item, "=")
			if !per {
				name, v = "", item
			}
			q, err := resource.ParseQuantity(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("%s: %q, expected a quantity such as 500m, 0.5 or 512Mi, or NODE=QUANTITY", f.flag, item)
			}
			e := out[name]
			if err := f.set(&e, q); err != nil {
				return nil, fmt.Errorf("%s: %q, expected %v", f.flag, item, err)
			}
			out[name] = e
		}
	}
	return out, nil
}

// EnvelopesOffered says whether this machine lets tpslab write CPU and
// memory limits, and if not, why.
func EnvelopesOffered() error {
	if os.Geteuid() != 0 {
		return errors.New("resource envelopes for local nodes need root (they write cgroups); on Kubernetes give --kubeconfig")
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu", "cpu.cfs_quota_us")); err == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return nil
	}
	return errors.New("this machine offers neither cgroup v1's cpu controller nor cgroup v2: no resource envelopes for local nodes")
}

// ApplyEnvelopes gives each node the envelope named for it (or the one
// for all) and puts its running processes in it; net.json keeps it, so a
// restart goes back in.
func (n *Net) ApplyEnvelopes(envs map[string]Envelope) error {
	if len(envs) == 0 {
		return nil
	}
	known := map[string]bool{"": true}
	for _, nd := range n.Nodes {
		known[nd.Name] = true
	}
	for name := range envs {
		if !known[name] {
			return fmt.Errorf("--node-cpu/--node-memory: no node %q in this network", name)
		}
	}
	sum := sha256.Sum256([]byte(n.Home))
	base := "tpslab-" + hex.EncodeToString(sum[:])[:8]
	for i := range n.Nodes {
		nd := &n.Nodes[i]
		e, ok := envs[nd.Name]
		all := envs[""]
		if !ok {
			e = all
		} else {
			e.CPU, e.Memory = firstSet(e.CPU, all.CPU), int64(firstSet(float64(e.Memory), float64(all.Memory)))
		}
		if e.CPU == 0 && e.Memory == 0 {
			continue
		}
		e.Name = filepath.Join(base, nd.Name)
		nd.Envelope = &e
		if err := nd.Envelope.place(nd.PID); err != nil {
			return fmt.Errorf("%s's envelope: %w", nd.Name, err)
		}
	}
	return n.save()
}

func firstSet(a, b float64) float64 {
	if a != 0 {
		return a
	}
	return b
}

// makeGroups creates rel's groups with e's limits.
func makeGroups(rel string, e Envelope) ([]string, error) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return makeV2(rel, e)
	}
	var groups []string
	for _, c := range []struct {
		controller string
		files      map[string]string
	}{
		{"cpu", map[string]string{"cpu.cfs_period_us": strconv.Itoa(cpuPeriod), "cpu.cfs_quota_us": strconv.Itoa(int(e.CPU * cpuPeriod))}},
		{"memory", map[string]string{"memory.limit_in_bytes": strconv.FormatInt(e.Memory, 10)}},
	} {
		if (c.controller == "cpu" && e.CPU == 0) || (c.controller == "memory" && e.Memory == 0) {
			continue
		}
		dir := filepath.Join(cgroupRoot, c.controller, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v1 %s: %w", c.controller, err)
		}
		for _, f := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us", "memory.limit_in_bytes"} {
			if v, ok := c.files[f]; ok {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
					return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
		groups = append(groups, dir)
	}
	return groups, nil
}

// makeV2 creates rel in the unified hierarchy, enabling cpu and memory
// down to it (v2 puts processes only in leaves; tpslab's folders hold
// none but the nodes').
func makeV2(rel string, e Envelope) ([]string, error) {
	dir := cgroupRoot
	for _, part := range strings.Split(rel, "/") {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0o644)
		dir = filepath.Join(dir, part)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
	}
	if e.CPU > 0 {
		if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", int(e.CPU*cpuPeriod), cpuPeriod)), 0o644); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "cpu.max"), err)
		}
	}
	if e.Memory > 0 {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(e.Memory, 10)), 0o644); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.max"), err)
		}
	}
	return []string{dir}, nil
}

// place puts pid and its descendants in the envelope's groups (children
// forked later are born there).
func (e *Envelope) place(pid int) error {
	if e == nil || pid <= 0 {
		return nil
	}
	groups, err := makeGroups(e.Name, *e)
	if err != nil {
		return err
	}
	e.Groups = groups
	pids := append([]int{pid}, descendants(pid)...)
	for _, g := range e.Groups {
		for _, p := range pids {
			if err := os.WriteFile(filepath.Join(g, "cgroup.procs"), []byte(strconv.Itoa(p)), 0o644); err != nil && p == pid {
				return fmt.Errorf("%s: %w", g, err)
			}
		}
	}
	return nil
}

// removeGroups removes the envelope's groups and, emptied, their parent
// (after the processes stopped).
func (e *Envelope) removeGroups() {
	if e == nil {
		return
	}
	for _, g := range e.Groups {
		_ = os.Remove(g)
		_ = os.Remove(filepath.Dir(g)) // fails while another node's group is there
	}
}
