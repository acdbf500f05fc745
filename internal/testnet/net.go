// Package testnet supervises local networks of every kind: net.json (its
// kind-neutral core and, beside it, each kind's own section), the nodes'
// processes and pods, their status, load locks and orphan records. Each
// kind's network is created by a package of its own below (chainnet,
// sdknet, gethnet, pgnet, kubenet).
package testnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/netem"
)

// NetFile is the name of the file that describes a running network.
const NetFile = "net.json"

// Pod ports: a node in a pod of its own has its own address.
const (
	PodP2P     = 26656
	PodRPC     = 26657
	PodMetrics = 26660
	PodPprof   = 6060
)

// Node is one validator as recorded in net.json.
type Node struct {
	Name string `json:"name"`
	Home string `json:"home"`
	ID   string `json:"id"`
	RPC  string `json:"rpc"` // http://host:port
	// ClientRPC is RPC through the load generator's emulated link, when the
	// network has one (the load goes there; tpslab's own queries do not).
	ClientRPC string `json:"client_rpc,omitempty"`
	API       string `json:"api,omitempty"`  // REST, http://host:port (Cosmos SDK)
	GRPC      string `json:"grpc,omitempty"` // host:port (Cosmos SDK)
	WS        string `json:"ws,omitempty"`   // ws://host:port (EVM)
	// LoadRPC is where the load goes when it is not RPC, which stays the
	// node's CometBFT RPC (a Cosmos EVM node's Ethereum JSON-RPC,
	// http://host:port).
	LoadRPC string `json:"eth_rpc,omitempty"`
	P2P     string `json:"p2p"`             // tcp://host:port
	Metrics string `json:"metrics"`         // http://host:port/metrics (CometBFT's Prometheus endpoint)
	Pprof   string `json:"pprof,omitempty"` // host:port of Go's /debug/pprof
	PID     int    `json:"pid"`
	// PIDFile is where the program writes its own pid (PostgreSQL's
	// postmaster.pid): a node restarted by hand is found there.
	PIDFile string   `json:"pid_file,omitempty"`
	Log     string   `json:"log"`
	Command []string `json:"command"`        // how it is started
	User    string   `json:"user,omitempty"` // the user it runs as, when tpslab runs as root (PostgreSQL refuses root)
	Role    string   `json:"role,omitempty"` // database | service | rpc (a full node); empty: a validator
	// Pod is the Kubernetes pod the node runs in (a network on Kubernetes:
	// Net.Kubernetes); PID is then 0.
	Pod string `json:"pod,omitempty"`
	// PodUID finds the pod's processes on this machine (a local cluster):
	// their cgroup is named for it.
	PodUID string `json:"pod_uid,omitempty"`
	// Envelope is the CPU and memory a local node may use (net up
	// --node-cpu, --node-memory), nil when unlimited.
	Envelope *Envelope `json:"envelope,omitempty"`
	// Stopped says `net stop` stopped it on purpose: not running, not crashed.
	Stopped bool `json:"stopped,omitempty"`
}

// Proxies is the process that emulates the links (`tpslab links`) and the
// links it serves.
type Proxies struct {
	netem.Emulation
	PID     int      `json:"pid"`
	Command []string `json:"command"`
	Log     string   `json:"log"`
}

// Net is the content of net.json.
type Net struct {
	Version  int           `json:"version"`
	Kind     string        `json:"kind"` // the kind that started it (tpslab kinds); empty: the default
	ChainID  string        `json:"chain_id"`
	Genesis  chain.Genesis `json:"genesis"` // the built-in ledger's
	Settings Settings      `json:"settings"`
	Nodes    []Node        `json:"nodes"`
	Links    *Proxies      `json:"links,omitempty"` // emulated P2P links, when a topology is set
	Home     string        `json:"home"`
	Started  time.Time     `json:"started"`
	Owner    *Owner        `json:"owner,omitempty"`
	// Scratch are folders outside the home the network uses (short Unix
	// socket paths), removed by Down.
	Scratch []string `json:"scratch,omitempty"`
	// Teardown are commands Down runs after the processes stopped, in
	// reverse order (network namespaces and the bridge of a network whose
	// nodes each have their own).
	Teardown [][]string `json:"teardown,omitempty"`
	// Kubernetes is set for a network whose nodes are pods.
	Kubernetes *Kube `json:"kubernetes,omitempty"`
	// sections are the kinds' own parts of net.json (section.go), as read;
	// parts those a kind decoded or set, written back from their values.
	sections map[string]json.RawMessage
	parts    map[string]any
}

// Kube is where a network on Kubernetes runs.
type Kube struct {
	Kubeconfig string `json:"kubeconfig"`
	Namespace  string `json:"namespace"`
	Image      string `json:"image"`
	Name       string `json:"name"` // its pods' and secrets' prefix and label
	CPU        string `json:"cpu,omitempty"`
	Memory     string `json:"memory,omitempty"`
	// DaemonImage is the image of an SDK daemon (a Cosmos network): its
	// pods unpack their home with tpslab's image, then run it.
	DaemonImage string `json:"daemon_image,omitempty"`
}

// PodDriver does to the pods of a network on Kubernetes what signals do to
// local processes (internal/testnet/kubenet registers it).
type PodDriver interface {
	Kill(n *Net, i int) error    // delete node i's pod at once: a crash
	Restart(n *Net, i int) error // a new pod for node i on its state
	Down(n *Net) error           // delete every pod and secret
}

// Pods is the registered PodDriver.
var Pods PodDriver

func (n *Net) pods() (PodDriver, error) {
	if Pods == nil {
		return nil, errors.New("this tpslab cannot drive Kubernetes")
	}
	return Pods, nil
}

// RPCEndpoints lists every node's HTTP endpoint that takes the load (a
// database has none; a Cosmos EVM node's is its Ethereum JSON-RPC); when
// the network has RPC nodes, only theirs: the load goes to them.
func (n *Net) RPCEndpoints() []string {
	var out, rpc []string
	for _, nd := range n.Nodes {
		u := nd.RPC
		if nd.LoadRPC != "" {
			u = nd.LoadRPC
		}
		if nd.ClientRPC != "" { // the load endpoint through its link
			u = nd.ClientRPC
		}
		if strings.HasPrefix(u, "http") {
			out = append(out, u)
			if nd.Role == "rpc" {
				rpc = append(rpc, u)
			}
		}
	}
	if len(rpc) > 0 {
		return rpc
	}
	return out
}

// Validators counts the nodes that validate.
func (n *Net) Validators() int {
	c := 0
	for _, nd := range n.Nodes {
		if nd.Role == "" {
			c++
		}
	}
	return c
}

// NodeIndex finds a node by name.
func (n *Net) NodeIndex(name string) (int, bool) {
	for i, nd := range n.Nodes {
		if nd.Name == name {
			return i, true
		}
	}
	return 0, false
}

// NodeNames lists the nodes' names.
func (n *Net) NodeNames() []string {
	out := make([]string, len(n.Nodes))
	for i, nd := range n.Nodes {
		out[i] = nd.Name
	}
	return out
}

// DefaultGenesis funds 10,000 accounts from the seed "tpslab".
func DefaultGenesis() chain.Genesis {
	return chain.Genesis{Seed: "tpslab", Accounts: 10000, Balance: 1_000_000_000_000}
}

// Load reads DIR/net.json.
func Load(home string) (*Net, error) {
	b, err := os.ReadFile(filepath.Join(home, NetFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--home %s: no %s there; start a network with `tpslab net up --home %s`", home, NetFile, home)
		}
		return nil, err
	}
	var n Net
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(home, NetFile), err)
	}
	if len(n.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes in it", filepath.Join(home, NetFile))
	}
	for i := range n.Nodes {
		n.Nodes[i].adopt()
	}
	return &n, nil
}

// Save writes net.json.
func (n *Net) Save() error { return n.save() }

func (n *Net) save() error {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(n.Home, NetFile)); errors.Is(err, os.ErrNotExist) {
		logNetwork(n)
	}
	tmp := filepath.Join(n.Home, NetFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(n.Home, NetFile)); err != nil {
		return err
	}
	return n.writeScrapeTargets()
}

// logNetwork appends "kind validators home" to $TPSLAB_NETWORK_LOG, when
// set, for each network created: test.sh counts the networks a test run
// starts with it.
func logNetwork(n *Net) {
	p := os.Getenv("TPSLAB_NETWORK_LOG")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	kind := n.Kind
	if kind == "" {
		kind = "-" // the reference network's net.json names no kind
	}
	fmt.Fprintf(f, "%s %d %s\n", kind, len(n.Nodes), n.Home)
	f.Close()
}

// ScrapeFile is the Prometheus file_sd target list net up writes beside
// net.json (deploy/prometheus.yml reads it).
const ScrapeFile = "prometheus-targets.json"

// writeScrapeTargets lists every node's metrics endpoint for Prometheus's
// file-based service discovery, labelled by node and kind.
func (n *Net) writeScrapeTargets() error {
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	groups := []group{}
	for _, nd := range n.Nodes {
		u, err := url.Parse(nd.Metrics)
		if nd.Metrics == "" || err != nil || u.Host == "" {
			continue
		}
		role := nd.Role
		if role == "" {
			role = "validator"
		}
		groups = append(groups, group{Targets: []string{u.Host}, Labels: map[string]string{
			"__metrics_path__": u.Path, "node": nd.Name, "role": role, "kind": n.Kind, "chain_id": n.ChainID}})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(n.Home, ScrapeFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(n.Home, ScrapeFile))
}

// Running counts nodes whose process is alive.
func (n *Net) Running() int {
	c := 0
	for _, nd := range n.Nodes {
		if nd.Alive() {
			c++
		}
	}
	return c
}

// PrepareHome refuses a used home unless reset is set.
func PrepareHome(home string, reset bool) error { return prepareHome(home, reset) }

// prepareHome refuses a used home unless reset is set, in which case it stops
// whatever still runs there and wipes it.
func prepareHome(home string, reset bool) error {
	entries, err := os.ReadDir(home)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		if !reset {
			if _, err := os.Stat(filepath.Join(home, NetFile)); errors.Is(err, os.ErrNotExist) {
				return exitcode.BadInputf("--home %s holds files but no %s (a `net up` interrupted before it finished, or another folder); pass --reset to wipe it", home, NetFile)
			}
			if old, err := Load(home); err == nil {
				if up := old.Running(); up > 0 {
					return exitcode.BadInputf("--home %s holds a running network (%d of %d nodes running): load it with `tpslab run --net-home %s`, stop it with `tpslab net down --home %s`, or pass --reset to wipe it", home, up, len(old.Nodes), home, home)
				}
			}
			return exitcode.BadInputf("--home %s is already used by a network, its nodes stopped; start them again with `tpslab net start --home %s`, or pass --reset to wipe it", home, home)
		}
		if old, err := Load(home); err == nil {
			if err := old.Down(); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(home); err != nil {
			return err
		}
	}
	return os.MkdirAll(home, 0o755)
}

// FreePorts asks the kernel for n unused TCP ports on bind.
func FreePorts(bind string, n int) ([]int, error) { return freePorts(bind, n) }

// freePorts asks the kernel for n unused TCP ports on bind.
func freePorts(bind string, n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port on %s: %w", bind, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StartAll starts every node by its command, the links first.
func (n *Net) StartAll() error {
	if err := n.StartLinks(); err != nil {
		return err
	}
	for i := range n.Nodes {
		pid, err := StartProcess(n.Nodes[i])
		if err != nil {
			return err
		}
		n.Nodes[i].PID = pid
	}
	n.Started = time.Now().UTC()
	return nil
}

// StartLinks starts the links process unless it runs, and waits for its
// API.
func (n *Net) StartLinks() error {
	if n.Links == nil || alive(n.Links.PID, n.Home) {
		return nil
	}
	pid, err := StartProcess(Node{Name: "links", Command: n.Links.Command, Log: n.Links.Log})
	if err != nil {
		return err
	}
	n.Links.PID = pid
	if err := netem.NewControl(&n.Links.Emulation).Ready(10 * time.Second); err != nil {
		return fmt.Errorf("%w; its log %s ends with:\n%s", err, n.Links.Log, tail(n.Links.Log, 10))
	}
	return nil
}

// StartMarker begins the line StartProcess writes into a node's log
// before each start.
const StartMarker = "--- tpslab started this process at"

// StartProcess runs a node's command in its own session so it outlives the
// tpslab process that started it, with its output appended to its log.
func StartProcess(nd Node) (int, error) {
	if len(nd.Command) == 0 {
		return 0, fmt.Errorf("%s: net.json holds no command to start it with", nd.Name)
	}
	logf, err := os.OpenFile(nd.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	// A log outlives restarts: the line says where this process's words
	// begin (LastWords reads only those).
	fmt.Fprintf(logf, "%s %s\n", StartMarker, time.Now().UTC().Format(time.RFC3339))
	cmd := exec.Command(nd.Command[0], nd.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if nd.User != "" && os.Geteuid() == 0 {
		cred, err := Credential(nd.User)
		if err != nil {
			return 0, err
		}
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", nd.Name, err)
	}
	go cmd.Wait() // reap it if it dies while this process lives
	// Back into its envelope at once: a restarted node keeps its limits.
	if err := nd.Envelope.place(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("start %s: %w", nd.Name, err)
	}
	return cmd.Process.Pid, nil
}

// Credential is the uid and gid of a user, to run a process as.
func Credential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Restart starts node i again (after a kill) and records its new pid. A
// non-empty binary replaces the program of a built-in node (tests build
// tpslab afresh).
func (n *Net) Restart(i int, binary string) error {
	if n.Kubernetes != nil {
		d, err := n.pods()
		if err != nil {
			return err
		}
		return d.Restart(n, i)
	}
	nd := n.Nodes[i]
	if binary != "" && isTpslabNode(nd) {
		nd.Command = []string{binary, "node", "--home", nd.Home}
	}
	pid, err := StartProcess(nd)
	if err != nil {
		return err
	}
	n.Nodes[i].PID = pid
	return n.save()
}

// Kill stops node i abruptly, as a crash would.
func (n *Net) Kill(i int) error {
	if n.Kubernetes != nil {
		d, err := n.pods()
		if err != nil {
			return err
		}
		return d.Kill(n, i)
	}
	nd := n.Nodes[i]
	if !alive(nd.PID, nd.Home) {
		return nil
	}
	if err := signalTree(nd.PID, syscall.SIGKILL); err != nil {
		return err
	}
	for j := 0; j < 200 && alive(nd.PID, nd.Home); j++ {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Down stops every node, then the links: SIGTERM, then SIGKILL after 15 s.
func (n *Net) Down() error {
	if n.Kubernetes != nil {
		d, err := n.pods()
		if err != nil {
			return err
		}
		if err := d.Down(n); err != nil {
			return err
		}
		for i := range n.Nodes {
			n.Nodes[i].Stopped = true
		}
		return n.save()
	}
	// A node restarted by a fault or `net start` has a new pid in net.json
	// that this copy may not know (tests' cleanups left restarted geth and
	// tpsd nodes running): stop those too.
	stop := append([]Node(nil), n.Nodes...)
	if fresh, err := Load(n.Home); err == nil && len(fresh.Nodes) == len(n.Nodes) {
		for i, nd := range fresh.Nodes {
			if nd.PID != 0 && nd.PID != n.Nodes[i].PID {
				stop = append(stop, nd)
			}
		}
	}
	errs := make(chan error, len(stop))
	for _, nd := range stop {
		go func(nd Node) { errs <- stopProcess(nd.PID, nd.Home, 15*time.Second) }(nd)
	}
	var first error
	for range stop {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if n.Links != nil {
		if err := stopProcess(n.Links.PID, n.Home, 5*time.Second); err != nil && first == nil {
			first = err
		}
	}
	for _, nd := range n.Nodes { // their processes stopped: the groups are empty
		nd.Envelope.removeGroups()
	}
	for i := len(n.Teardown) - 1; i >= 0; i-- {
		t := n.Teardown[i]
		if len(t) == 0 {
			continue
		}
		if len(t) == 4 && t[0] == "ip" && t[1] == "netns" && t[2] == "del" {
			// A namespace outlives its deletion while a process is in it
			// (one whose pid net.json never got, from a killed net up).
			killIn(t[3])
		}
		// Already gone (a second Down) is not an error.
		if out, err := exec.Command(t[0], t[1:]...).CombinedOutput(); err != nil && !strings.Contains(string(out), "annot find") && !strings.Contains(string(out), "No such") && first == nil {
			first = fmt.Errorf("%s: %v: %s", strings.Join(t, " "), err, strings.TrimSpace(string(out)))
		}
	}
	for _, d := range n.Scratch {
		if err := os.RemoveAll(d); err != nil && first == nil {
			first = err
		}
	}
	// Stopped on purpose: `net status` says so, not "crashed". The home may
	// be about to go (a run's own network); then there is nothing to mark.
	for i := range n.Nodes {
		n.Nodes[i].Stopped = true
	}
	if _, err := os.Stat(n.Home); err == nil {
		if err := n.save(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// killIn ends every process in the named network namespace.
func killIn(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// DeleteNamespace ends the processes in a network namespace and deletes it.
func DeleteNamespace(ns string) error {
	killIn(ns)
	out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Alive says the node's process is running.
func (nd Node) Alive() bool {
	if nd.Pod != "" {
		return podAlive(nd)
	}
	return alive(nd.PID, nd.Home)
}

// adopt takes the pid a node's program wrote when the one recorded no
// longer runs (PostgreSQL restarted with pg_ctl, not by tpslab).
func (nd *Node) adopt() {
	if nd.PIDFile == "" || nd.Pod != "" || alive(nd.PID, nd.Home) {
		return
	}
	b, err := os.ReadFile(nd.PIDFile)
	if err != nil {
		return
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && alive(pid, nd.Home) {
		nd.PID, nd.Stopped = pid, false
	}
}

// Dead lists the nodes whose process is no longer running.
func (n *Net) Dead() []Node {
	var out []Node
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			out = append(out, nd)
		}
	}
	return out
}

// Start starts the named nodes (all when none is named) that are not
// running, stopped or crashed, on their existing state, and the links if
// their process is gone. It returns the names it started.
func (n *Net) Start(names []string) ([]string, error) {
	idx, err := n.indexes(names)
	if err != nil {
		return nil, err
	}
	if err := n.StartLinks(); err != nil {
		return nil, err
	}
	var started []string
	for _, i := range idx {
		nd := &n.Nodes[i]
		if nd.Alive() {
			continue
		}
		if n.Kubernetes != nil {
			if err := n.Restart(i, ""); err != nil {
				return started, err
			}
			started = append(started, nd.Name)
			continue
		}
		pid, err := StartProcess(*nd)
		if err != nil {
			return started, err
		}
		nd.PID, nd.Stopped = pid, false
		started = append(started, nd.Name)
		if nd.Role == "database" {
			// What follows it needs it: the exchange's wirewatch exited
			// when it started beside a recovering PostgreSQL (issue 52).
			if err := waitDatabase(*nd, 60*time.Second); err != nil {
				return started, errors.Join(err, n.save())
			}
		}
	}
	return started, n.save()
}

// waitDatabase waits until a PostgreSQL node takes connections: any answer
// but "the database system is starting up" (57P03) says it does.
func waitDatabase(nd Node, timeout time.Duration) error {
	u, err := url.Parse(nd.RPC)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s: net.json's rpc %q is no postgres://host:port", nd.Name, nd.RPC)
	}
	dsn := "postgres://tpslab@" + u.Host + "/postgres?sslmode=disable&connect_timeout=2"
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgconn.Connect(ctx, dsn)
		cancel()
		var pe *pgconn.PgError
		switch {
		case err == nil:
			c.Close(context.Background())
			return nil
		case errors.As(err, &pe) && pe.Code != "57P03":
			return nil
		case !alive(nd.PID, nd.Home):
			return nd.Exited(10)
		case time.Now().After(deadline):
			return fmt.Errorf("%s does not take connections after %s (%v); see %s", nd.Name, timeout, err, nd.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the named nodes cleanly and records that they were stopped on
// purpose.
func (n *Net) Stop(names []string) error {
	idx, err := n.indexes(names)
	if err != nil {
		return err
	}
	for _, i := range idx {
		nd := &n.Nodes[i]
		if n.Kubernetes != nil {
			if err := n.Kill(i); err != nil { // a pod is deleted, its state with it
				return err
			}
		} else if err := stopProcess(nd.PID, nd.Home, 15*time.Second); err != nil {
			return err
		}
		nd.Stopped = true
	}
	return n.save()
}

func (n *Net) indexes(names []string) ([]int, error) {
	if len(names) == 0 {
		out := make([]int, len(n.Nodes))
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	var out []int
	for _, name := range names {
		i, ok := n.NodeIndex(name)
		if !ok {
			return nil, exitcode.BadInputf("--node: %q is not a node of %s, expected one of %s", name, n.Home, strings.Join(n.NodeNames(), ", "))
		}
		out = append(out, i)
	}
	return out, nil
}

// Pause stops node i's process where it is (SIGSTOP), as a hung machine
// would; Resume lets it go on.
func (n *Net) Pause(i int) error {
	if n.Kubernetes != nil {
		return errors.New("pause: a pod cannot be stopped and continued (on Kubernetes, crash is the fault there is)")
	}
	return n.signal(i, syscall.SIGSTOP)
}

// Resume continues a paused node.
func (n *Net) Resume(i int) error { return n.signal(i, syscall.SIGCONT) }

func (n *Net) signal(i int, s syscall.Signal) error {
	nd := n.Nodes[i]
	if !alive(nd.PID, nd.Home) {
		return fmt.Errorf("%s is not running", nd.Name)
	}
	return signalTree(nd.PID, s)
}

// signalTree signals a node and every process below it: a crash or a pause
// of PostgreSQL must reach its backends, which each run in a session of
// their own (else paused PostgreSQL went on committing, and killed
// backends held its shared memory). The node first, so that it forks no
// more; then its group (a node runs in a session of its own) and its
// descendants.
func signalTree(pid int, s syscall.Signal) error {
	kids := descendants(pid)
	if err := syscall.Kill(pid, s); err != nil {
		return err
	}
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		_ = syscall.Kill(-pid, s)
	}
	for _, c := range kids {
		_ = syscall.Kill(c, s)
	}
	return nil
}

// descendants lists the processes below pid, from /proc's parent links.
func descendants(pid int) []int {
	parent := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[pp] = append(parent[pp], p)
	}
	var out []int
	for queue := parent[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, parent[queue[0]]...)
	}
	return out
}

// isTpslabNode says the node runs `tpslab node` (the built-in ledger), whose
// program a test may replace by a fresh build.
func isTpslabNode(nd Node) bool {
	return len(nd.Command) >= 2 && nd.Command[1] == "node"
}

// DirBytes is the bytes of the files under dir (a node's data directory,
// for the size its state takes on disk).
func DirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}
