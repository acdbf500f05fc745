package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Client is a client of the cluster a kubeconfig names.
func Client(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// controlPlane issues the certificates and starts etcd, the API server, the
// controller manager and the scheduler.
func (s *State) controlPlane(ctx context.Context, p *programs) error {
	pki := filepath.Join(s.Home, "pki")
	c, err := newCA(pki)
	if err != nil {
		return err
	}
	host := net.ParseIP(s.HostIP())
	if err := c.issue("apiserver", "kube-apiserver", nil, []net.IP{host, net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}); err != nil {
		return err
	}
	clients := []struct{ name, cn, org string }{
		{"admin", "tpslab-admin", "system:masters"},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"},
		// Its controllers run under its own name (no service account per
		// controller): in a test cluster it may do anything.
		{"controller-manager", "system:kube-controller-manager", "system:masters"},
		{"scheduler", "system:kube-scheduler", ""},
		{"sa", "service-accounts", ""}, // its key signs service account tokens
	}
	for _, n := range s.Nodes {
		clients = append(clients, struct{ name, cn, org string }{"kubelet-" + n.Name, "system:node:" + n.Name, "system:nodes"})
		if err := c.issue("kubelet-serving-"+n.Name, n.Name, nil, []net.IP{net.ParseIP(n.IP)}, []string{n.Name}); err != nil {
			return err
		}
	}
	for _, cl := range clients {
		var orgs []string
		if cl.org != "" {
			orgs = []string{cl.org}
		}
		if err := c.issue(cl.name, cl.cn, orgs, nil, nil); err != nil {
			return err
		}
		if err := c.kubeconfig(filepath.Join(pki, cl.name+".kubeconfig"), s.Server, cl.name); err != nil {
			return err
		}
	}
	if err := c.kubeconfig(s.Kubeconfig, s.Server, "admin"); err != nil {
		return err
	}
	f := func(name string) string { return filepath.Join(pki, name) }
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	ep, err := s.start("etcd", "", p.etcd, "--name", "tpslab", "--data-dir", filepath.Join(s.Home, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "tpslab="+peer,
		"--unsafe-no-fsync", "--quota-backend-bytes", "2147483648")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, ep, "etcd answers", 30*time.Second, func() bool { return listening(strings.TrimPrefix(etcdURL, "http://")) }); err != nil {
		return err
	}
	ap, err := s.start("kube-apiserver", "", p.apiserver,
		"--etcd-servers", etcdURL, "--bind-address", s.HostIP(), "--advertise-address", s.HostIP(), "--secure-port", itoa(apiPort),
		"--tls-cert-file", f("apiserver.pem"), "--tls-private-key-file", f("apiserver-key.pem"), "--client-ca-file", f("ca.pem"),
		"--service-cluster-ip-range", serviceCIDR, "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", f("sa-key.pem"), "--service-account-signing-key-file", f("sa-key.pem"),
		"--authorization-mode", "Node,RBAC", "--allow-privileged=true",
		"--kubelet-client-certificate", f("apiserver-kubelet-client.pem"), "--kubelet-client-key", f("apiserver-kubelet-client-key.pem"),
		"--kubelet-certificate-authority", f("ca.pem"), "--kubelet-preferred-address-types", "InternalIP",
		"--cert-dir", filepath.Join(pki, "apiserver-generated"), "--profiling=false")
	if err != nil {
		return err
	}
	cs, err := Client(s.Kubeconfig)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, ap, "the API server is ready", 90*time.Second, func() bool {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil
	}); err != nil {
		return err
	}
	cm, err := s.start("kube-controller-manager", "", p.controllerManager,
		"--kubeconfig", f("controller-manager.kubeconfig"), "--authentication-kubeconfig", f("controller-manager.kubeconfig"),
		"--authorization-kubeconfig", f("controller-manager.kubeconfig"), "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--service-account-private-key-file", f("sa-key.pem"), "--root-ca-file", f("ca.pem"),
		"--use-service-account-credentials=false", "--leader-elect=false", "--controllers", "*")
	if err != nil {
		return err
	}
	sp, err := s.start("kube-scheduler", "", p.scheduler, "--kubeconfig", f("scheduler.kubeconfig"),
		"--authentication-kubeconfig", f("scheduler.kubeconfig"), "--authorization-kubeconfig", f("scheduler.kubeconfig"),
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false")
	if err != nil {
		return err
	}
	// Both must still run a moment later (a bad flag ends them at once).
	time.Sleep(2 * time.Second)
	for _, p := range []*Proc{cm, sp} {
		if !pidAlive(p.PID) {
			return fmt.Errorf("%s exited; its log %s ends:\n%s", p.Name, p.Log, logTail(p.Log, 15))
		}
	}
	return nil
}

// startNode starts node i's containerd, loads the images into it and
// starts its kubelet.
func (s *State) startNode(ctx context.Context, i int, p *programs, tars []string) error {
	n := s.Nodes[i]
	dir := filepath.Join(s.Home, n.Name)
	run := filepath.Dir(n.Socket)
	for _, d := range []string{filepath.Join(dir, "cni"), filepath.Join(dir, "ipam"), filepath.Join(dir, "pod-logs"), run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "containerd"), filepath.Join(run, "state"), n.Socket, n.Socket+".ttrpc", PauseImage,
		filepath.Join(dir, "cni"), filepath.Join(dir, "containerd-opt"))
	if err := os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	cni := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "tpslab", "plugins": [{"type": "bridge", "bridge": %q,
  "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}}]}
`, n.Bridge, n.PodCIDR, filepath.Join(dir, "ipam"))
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-tpslab.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	cp, err := s.start("containerd-"+n.Name, n.NetNS, "containerd", "--config", filepath.Join(dir, "containerd.toml"))
	if err != nil {
		return err
	}
	if err := waitFor(ctx, cp, "containerd listens", 30*time.Second, func() bool {
		_, err := os.Stat(n.Socket)
		return err == nil
	}); err != nil {
		return err
	}
	for _, t := range tars {
		if out, err := exec.CommandContext(ctx, "ctr", "-a", n.Socket, "-n", "k8s.io", "images", "import", t).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: importing %s: %v: %s", n.Name, filepath.Base(t), err, out)
		}
	}
	pki := filepath.Join(s.Home, "pki")
	kc := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %q
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization: {mode: AlwaysAllow}
tlsCertFile: %q
tlsPrivateKeyFile: %q
cgroupDriver: cgroupfs
cgroupRoot: %q
cgroupsPerQOS: true
failSwapOn: false
failCgroupV1: false
podLogsDir: %q
containerRuntimeEndpoint: %q
resolvConf: ""
podCIDR: %q
maxPods: 60
serializeImagePulls: false
evictionHard: {"memory.available": "50Mi", "nodefs.available": "1%%", "imagefs.available": "1%%", "nodefs.inodesFree": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, n.IP, filepath.Join(pki, "ca.pem"), filepath.Join(pki, "kubelet-serving-"+n.Name+".pem"), filepath.Join(pki, "kubelet-serving-"+n.Name+"-key.pem"),
		n.Cgroup, filepath.Join(dir, "pod-logs"), "unix://"+n.Socket, n.PodCIDR)
	if err := os.WriteFile(filepath.Join(dir, "kubelet.yaml"), []byte(kc), 0o644); err != nil {
		return err
	}
	if err := makeCgroup(n.Cgroup); err != nil {
		return err
	}
	_, err = s.start("kubelet-"+n.Name, n.NetNS, p.kubelet, "--config", filepath.Join(dir, "kubelet.yaml"),
		"--kubeconfig", filepath.Join(pki, "kubelet-"+n.Name+".kubeconfig"), "--root-dir", filepath.Join(run, "kubelet"),
		"--hostname-override", n.Name, "--node-ip", n.IP, "--v", "1")
	return err
}

// waitReady waits for every node to be Ready.
func (s *State) waitReady(ctx context.Context) error {
	cs, err := Client(s.Kubeconfig)
	if err != nil {
		return err
	}
	var last string
	var kubelet *Proc
	for i := range s.Procs {
		if strings.HasPrefix(s.Procs[i].Name, "kubelet-") {
			kubelet = &s.Procs[i]
		}
	}
	err = waitFor(ctx, kubelet, "every node is Ready", 3*time.Minute, func() bool {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		last = fmt.Sprintf("%d of %d nodes ready", ready, len(s.Nodes))
		return ready == len(s.Nodes)
	})
	if err != nil {
		return fmt.Errorf("%v (%s)", err, last)
	}
	return nil
}

// NodeStatus is a line per node: name, readiness, address, pods.
func NodeStatus(ctx context.Context, kubeconfig string) ([]string, error) {
	cs, err := Client(kubeconfig)
	if err != nil {
		return nil, err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes.Items {
		ready, addr, count := "NotReady", "", 0
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = "Ready"
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				addr = a.Address
			}
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == n.Name {
				count++
			}
		}
		out = append(out, fmt.Sprintf("%-8s %-8s %-12s %s  %d pods", n.Name, ready, addr, n.Status.NodeInfo.KubeletVersion, count))
	}
	return out, nil
}

// makeCgroup creates a node's cgroup root in every hierarchy (a kubelet
// wants it there), giving cpuset its parent's CPUs and memory nodes.
func makeCgroup(root string) error {
	hs, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hs {
		if st, err := os.Stat(h); err != nil || !st.IsDir() {
			continue
		}
		d := filepath.Join(h, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %v", d, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %v", filepath.Join(d, f), err)
				}
			}
		}
	}
	return nil
}
