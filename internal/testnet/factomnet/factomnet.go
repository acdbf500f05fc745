package factomnet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/targets/factom"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Factom is net.json's factom section.
type Factom struct {
	Binary     string   `json:"binary"`
	BlockTime  int      `json:"block_time_s"`
	Subnet     string   `json:"subnet"` // the bridge's host-only /24
	Bridge     string   `json:"bridge"`
	Namespaces []string `json:"namespaces"`
	WalletSeed string   `json:"wallet_seed"`
	Wallets    int      `json:"wallets"`
	// EntryCredits each wallet's entry-credit address was bought, and
	// Factoshis its factoid address holds, at net up.
	EntryCredits int64  `json:"entry_credits"`
	Factoshis    int64  `json:"factoshis"`
	ECRate       uint64 `json:"ec_rate"` // factoshis per entry credit
}

// Section is net.json's section name.
const Section = "factom"

// Of is the network's factom section (nil when it has none).
func Of(n *testnet.Net) *Factom { return testnet.Part[Factom](n, Section) }

// Ports every node uses inside its own namespace.
const (
	APIPort = 8088
	// P2PPort+i is node i's: factomd's P2P knows a peer by its address and
	// listening port, and through the emulated links every peer's address
	// is the bridge's.
	P2PPort  = 8110
	PromPort = 9876 // factomd's fixed Prometheus port
)

// Options describe a network to create.
type Options struct {
	Kind         string
	Binary       string // factomd; empty: built when missing
	Home         string
	Nodes        int
	BlockTime    int // seconds per directory block
	WalletSeed   string
	Wallets      int
	EntryCredits int64 // per wallet
	Factoshis    int64 // per wallet's factoid address
	Topology     string
	Links        string // the tpslab program that serves the links
	Reset        bool
	Owner        *testnet.Owner
	Log          io.Writer
}

// Up creates the namespaces and the bridge, starts the nodes, waits for
// every node to hold the first blocks and funds the wallets.
func Up(ctx context.Context, o Options) (*testnet.Net, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("factom: a network namespace per node needs root (factomd binds every interface and the fixed port 9876; docs/factom.md)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("factom: the ip command (iproute2) is needed for the nodes' namespaces: %v", err)
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = Factomd(o.Log); err != nil {
			return nil, err
		}
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, err
	}
	if err := testnet.PrepareHome(home, o.Reset); err != nil {
		return nil, err
	}
	f := &Factom{Binary: bin, BlockTime: o.BlockTime, WalletSeed: o.WalletSeed, Wallets: o.Wallets, EntryCredits: o.EntryCredits, Factoshis: o.Factoshis}
	n := &testnet.Net{Version: 1, Kind: o.Kind, Home: home, Owner: o.Owner, ChainID: factom.ChainID}
	n.SetSection(Section, f)
	tag := fmt.Sprintf("%x", sha256.Sum256([]byte(home)))[:6]
	sub, err := freeSubnet(tag)
	if err != nil {
		return nil, err
	}
	f.Subnet, f.Bridge = sub+".0/24", "tpf"+tag+"br"
	// Nothing is created until every step is planned: a failed step
	// tears down what the ones before it made.
	n.Teardown = append(n.Teardown, []string{"ip", "link", "del", f.Bridge})
	steps := [][]string{{"ip", "link", "add", f.Bridge, "type", "bridge"}, {"ip", "addr", "add", sub + ".1/24", "dev", f.Bridge}, {"ip", "link", "set", f.Bridge, "up"}}
	for i := 0; i < o.Nodes; i++ {
		ns, veth, addr := fmt.Sprintf("tpslab-%s-node%d", tag, i), fmt.Sprintf("tpf%sn%d", tag, i), NodeAddr(sub, i)
		f.Namespaces = append(f.Namespaces, ns)
		n.Teardown = append(n.Teardown, []string{"ip", "netns", "del", ns})
		steps = append(steps, []string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"ip", "link", "set", veth, "master", f.Bridge}, []string{"ip", "link", "set", veth, "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"}, []string{"ip", "-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"})
		hp := func(p int) string { return net.JoinHostPort(addr, strconv.Itoa(p)) }
		nd := testnet.Node{Name: fmt.Sprintf("node%d", i), Home: filepath.Join(home, fmt.Sprintf("node%d", i)),
			RPC: "http://" + hp(APIPort), P2P: "tcp://" + hp(P2PPort+i), Metrics: "http://" + hp(PromPort) + "/metrics",
			Log: filepath.Join(home, fmt.Sprintf("node%d", i), "node.log")}
		if err := os.MkdirAll(nd.Home, 0o755); err != nil {
			return nil, err
		}
		n.Nodes = append(n.Nodes, nd)
	}
	// What is about to be made is written down first, and what an earlier
	// `net up` of this home made before it was killed is removed: a SIGKILL
	// at any point leaves net.json naming all of it for `net down`.
	sweep(tag)
	if err := n.Save(); err != nil {
		return nil, err
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			_ = n.Down()
			return nil, err
		}
	}
	if err := commands(n, f, o, sub); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := startInOrder(n); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := started(ctx, n); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := fund(ctx, n, f, o.Log); err != nil {
		_ = n.Down()
		return nil, fmt.Errorf("fund the test wallets: %w", err)
	}
	return n, n.Save()
}

// startInOrder starts the links, the leader, then the followers from the
// last to the first, each once the one before listens for P2P and more
// than a second later. Through the links every dial comes from the
// bridge's address, and factomd refuses a second connection from one
// address within a second (its listen limit); a follower whose dial
// reached a link's proxy but not the node behind it, or was refused so,
// waits factomd's redial interval (2 minutes) to try again. Follower i
// dials the leader and the followers after it: those already listen.
func startInOrder(n *testnet.Net) error {
	if err := n.StartLinks(); err != nil {
		return err
	}
	if err := n.Save(); err != nil { // each pid as soon as it runs
		return err
	}
	order := []int{0}
	for i := len(n.Nodes) - 1; i > 0; i-- {
		order = append(order, i)
	}
	for k, i := range order {
		if k > 1 {
			time.Sleep(1100 * time.Millisecond)
		}
		pid, err := testnet.StartProcess(n.Nodes[i])
		if err != nil {
			return err
		}
		n.Nodes[i].PID = pid
		if err := n.Save(); err != nil {
			return err
		}
		addr := strings.TrimPrefix(n.Nodes[i].P2P, "tcp://")
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) || !n.Nodes[i].Alive() {
				return fmt.Errorf("factomd %s did not listen on %s in 60 s; see %s", n.Nodes[i].Name, addr, n.Nodes[i].Log)
			}
		}
	}
	n.Started = time.Now().UTC()
	return nil
}

// sweep removes the namespaces (and the processes in them) and the bridge
// a home's earlier `net up` made: the names carry the home's tag, and the
// home has just been found empty or wiped, so whatever bears its tag was
// left by a `net up` killed before it could write net.json.
func sweep(tag string) {
	nss, _ := os.ReadDir("/run/netns")
	for _, e := range nss {
		if strings.HasPrefix(e.Name(), "tpslab-"+tag+"-node") {
			testnet.DeleteNamespace(e.Name())
		}
	}
	if exec.Command("ip", "link", "show", "tpf"+tag+"br").Run() == nil {
		_ = run("ip", "link", "del", "tpf"+tag+"br")
	}
	// A namespace is destroyed by the kernel after `ip netns del` returns,
	// and its veth's host end with it, later on a busy machine: the next
	// `ip link add` of that name met "File exists" (CI). Deleting the host
	// end removes the pair at once.
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "tpf"+tag+"n") {
			_ = exec.Command("ip", "link", "del", i.Name).Run()
		}
	}
}

// NodeAddr is node i's address on the bridge's subnet (a.b.c).
func NodeAddr(sub string, i int) string { return sub + "." + strconv.Itoa(10+i) }

// commands are the nodes' command lines: node0 the LOCAL leader, the
// others followers; each dials only the peers given (-exclusive), through
// the emulated links when there is a topology.
func commands(n *testnet.Net, f *Factom, o Options, sub string) error {
	var pairs [][2]int
	for i := 1; i < len(n.Nodes); i++ {
		pairs = append(pairs, [2]int{i, 0})
		for j := i + 1; j < len(n.Nodes); j++ {
			pairs = append(pairs, [2]int{i, j})
		}
	}
	peers := make([][]string, len(n.Nodes))
	if o.Topology != "" {
		ports, err := testnet.FreePorts(sub+".1", testnet.LinkPorts(len(pairs), len(n.Nodes), false))
		if err != nil {
			return err
		}
		cmd, err := testnet.LinksCommand(o.Links, n.Home)
		if err != nil {
			return err
		}
		if n.Links, err = testnet.PlanLinks(n, o.Topology, false, pairs, sub+".1", ports, cmd); err != nil {
			return fmt.Errorf("--%w", err)
		}
		for i, l := range n.Links.Links {
			n.Links.Links[i].Protocol = netem.Opaque
			from, _ := n.NodeIndex(l.From)
			peers[from] = append(peers[from], l.Listen)
		}
		if err := n.Save(); err != nil { // the links process reads it
			return err
		}
	} else {
		for _, p := range pairs {
			peers[p[0]] = append(peers[p[0]], strings.TrimPrefix(n.Nodes[p[1]].P2P, "tcp://"))
		}
	}
	for i := range n.Nodes {
		nd := &n.Nodes[i]
		nd.Command = []string{"ip", "netns", "exec", f.Namespaces[i], f.Binary, "-network=LOCAL", "-db=Map",
			"-blktime=" + strconv.Itoa(f.BlockTime), "-port=" + strconv.Itoa(APIPort), "-networkport=" + strconv.Itoa(P2PPort+i),
			"-controlpanelsetting=disabled", "-factomhome=" + nd.Home, "-sim_stdin=false", "-startdelay=0",
			"-exclusive=true", "-nodename=" + nd.Name}
		if i > 0 {
			nd.Command = append(nd.Command, "-follower=true")
		}
		if len(peers[i]) > 0 {
			nd.Command = append(nd.Command, "-peers="+strings.Join(peers[i], ","))
		}
	}
	return nil
}

// freeSubnet is a 10.x.y /24 no interface of this machine is on, the
// first tried chosen by the network's tag.
func freeSubnet(tag string) (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	start, _ := strconv.ParseUint(tag[:4], 16, 32)
	for k := uint64(0); k < 4096; k++ {
		v := (start + k) % 4096
		sub := fmt.Sprintf("10.%d.%d", 200+v/256%50, v%256)
		_, cidr, _ := net.ParseCIDR(sub + ".0/24")
		taken := false
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && (cidr.Contains(ip.IP) || ip.Contains(cidr.IP)) {
				taken = true
			}
		}
		if !taken {
			return sub, nil
		}
	}
	return "", fmt.Errorf("factom: no free 10.x.y.0/24 for the nodes' bridge")
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// started waits until every node answers and holds directory block 1.
func started(ctx context.Context, n *testnet.Net) error {
	deadline := time.Now().Add(90 * time.Second)
	for i, nd := range n.Nodes {
		cl := factom.NewClient(nd.RPC)
		for {
			if h, err := cl.Heights(ctx); err == nil && h.DirectoryBlock >= 1 {
				break
			}
			if !n.Nodes[i].Alive() || time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("factomd %s did not make directory block 1 in 90 s; see %s", nd.Name, nd.Log)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return nil
}
