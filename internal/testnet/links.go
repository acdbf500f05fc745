package testnet

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/netem"
)

// PeerPairs are the node pairs of a CometBFT network that connect: every
// two validators, and every RPC node (after the validators) to every
// validator; the first of a pair dials.
func PeerPairs(validators, rpcNodes int) [][2]int {
	var out [][2]int
	for i := 0; i < validators; i++ {
		for j := i + 1; j < validators; j++ {
			out = append(out, [2]int{i, j})
		}
	}
	for r := validators; r < validators+rpcNodes; r++ {
		for v := 0; v < validators; v++ {
			out = append(out, [2]int{r, v})
		}
	}
	return out
}

// LinkPorts is how many ports PlanLinks takes: one per pair, the API, and
// with client links one per node.
func LinkPorts(pairs, nodes int, clientLinks bool) int {
	if clientLinks {
		return pairs + 1 + nodes
	}
	return pairs + 1
}

// PlanLinks gives each pair of n's nodes a proxy on ports (LinkPorts of
// them, on bind) with the topology's conditions; with clientLinks each
// node's load endpoint (LoadRPC, else RPC) gets one too, named in its
// ClientRPC. Only the first of a pair dials, through its proxy: peer
// exchange is off, so the other has no direct route to it. command runs
// the links process.
func PlanLinks(n *Net, topology string, clientLinks bool, pairs [][2]int, bind string, ports []int, command []string) (*Proxies, error) {
	names := n.NodeNames()
	np := make([]netem.Pair, len(pairs))
	for i, p := range pairs {
		np[i] = netem.Pair{From: names[p[0]], To: names[p[1]]}
	}
	conds, regions, err := netem.Plan(topology, names, np)
	if err != nil {
		return nil, err
	}
	hp := func(p int) string { return net.JoinHostPort(bind, strconv.Itoa(p)) }
	px := &Proxies{Emulation: netem.Emulation{Topology: topology, API: hp(ports[len(pairs)]), Regions: regions},
		Command: command, Log: filepath.Join(n.Home, "links.log")}
	px.Metrics = "http://" + px.API + "/metrics"
	for i, p := range np {
		px.Links = append(px.Links, netem.Link{Name: p.From + "-" + p.To, From: p.From, To: p.To,
			Listen: hp(ports[i]), Upstream: strings.TrimPrefix(n.Nodes[pairs[i][1]].P2P, "tcp://"), Conditions: conds[p]})
	}
	if clientLinks {
		cc, err := netem.ClientConditions(topology, names, regions)
		if err != nil {
			return nil, err
		}
		for i := range n.Nodes {
			nd := &n.Nodes[i]
			up := nd.RPC
			if nd.LoadRPC != "" {
				up = nd.LoadRPC
			}
			listen := hp(ports[len(pairs)+1+i])
			px.Links = append(px.Links, netem.Link{Name: netem.Client + "-" + nd.Name, From: netem.Client, To: nd.Name,
				Listen: listen, Upstream: strings.TrimPrefix(up, "http://"), Conditions: cc[nd.Name]})
			nd.ClientRPC = "http://" + listen
		}
	}
	return px, nil
}

// LinkedPeers are each node's persistent peers (id@address): through the
// links' proxies when px is set, else directly, validators dialing each
// other both ways.
func LinkedPeers(n *Net, px *Proxies, pairs [][2]int, validators int) [][]string {
	peers := make([][]string, len(n.Nodes))
	if px != nil {
		for _, l := range px.Links {
			if l.IsClient() {
				continue
			}
			from, _ := n.NodeIndex(l.From)
			to, _ := n.NodeIndex(l.To)
			peers[from] = append(peers[from], n.Nodes[to].ID+"@"+l.Listen)
		}
		return peers
	}
	addr := func(i int) string { return n.Nodes[i].ID + "@" + strings.TrimPrefix(n.Nodes[i].P2P, "tcp://") }
	for _, p := range pairs {
		peers[p[0]] = append(peers[p[0]], addr(p[1]))
		if p[1] < validators {
			peers[p[1]] = append(peers[p[1]], addr(p[0]))
		}
	}
	return peers
}

// LinksCommand is the command of a network's links process: tpslab (binary;
// empty: this program) serving home's links.
func LinksCommand(binary, home string) ([]string, error) {
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return []string{binary, "links", "--home", home}, nil
}
