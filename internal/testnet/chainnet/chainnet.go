// Package chainnet is a local network of tpslab's reference ledger (the
// ABCI application in internal/chain) on CometBFT: each validator (and RPC
// node) a `tpslab node` process, emulated links between them when a
// topology says, its keys and genesis generated here. testnet supervises
// its processes like any network's.
package chainnet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"
	cmttime "github.com/cometbft/cometbft/types/time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Options describe a network to create.
type Options struct {
	Kind       string // recorded in net.json: the kind that starts it (empty: the default kind)
	Validators int
	Home       string
	ChainID    string
	Genesis    chain.Genesis
	Settings   testnet.Settings
	Bind       string // address every listener binds to
	Reset      bool   // wipe a used home first
	Binary     string // the tpslab executable that runs `node`
	Wait       time.Duration
	Owner      *testnet.Owner // the process that will stop it, when not a user
	// Topology routes every P2P connection through an emulated link
	// (netem.Topologies); empty: nodes connect directly on loopback.
	Topology string
	// RPCNodes are full nodes that do not validate; the load goes to them
	// and they gossip to the validators, as in production.
	RPCNodes int
	// ClientLinks puts the load generator behind emulated links too: each
	// node's RPC gets a proxy, and the load goes through it.
	ClientLinks bool
	// PodPorts: every node listens on all of its own addresses at the
	// standard ports (26656 P2P, 26657 RPC, 26660 metrics, 6060 pprof), as
	// a pod of its own on Kubernetes does.
	PodPorts bool
}

// Validate checks the options before anything is created.
func (o Options) Validate() error {
	if o.Validators < 1 || o.Validators > 64 {
		return fmt.Errorf("--validators: %d, expected 1..64", o.Validators)
	}
	if err := o.Settings.Validate(); err != nil {
		return err
	}
	if err := o.Genesis.Validate(); err != nil {
		return err
	}
	if o.ChainID == "" || len(o.ChainID) > chain.MaxChainIDLen {
		return fmt.Errorf("--chain-id: %q, expected 1..%d characters", o.ChainID, chain.MaxChainIDLen)
	}
	if o.RPCNodes < 0 || o.RPCNodes > 16 {
		return fmt.Errorf("--rpc-nodes: %d, expected 0..16", o.RPCNodes)
	}
	if o.Topology != "" {
		if _, _, err := netem.Plan(o.Topology, nil, nil); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	if o.ClientLinks && o.Topology == "" {
		return fmt.Errorf("--client-links: the generator's links take the conditions of a topology, expected --topology too")
	}
	return nil
}

// Up creates and starts a network, then waits until it commits blocks.
func Up(ctx context.Context, o Options) (*testnet.Net, error) {
	if err := o.Validate(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, err
	}
	if err := testnet.PrepareHome(home, o.Reset); err != nil {
		return nil, err
	}
	n, err := generate(home, o)
	if err != nil {
		return nil, err
	}
	if err := start(n, o.Binary); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	wait := o.Wait
	if wait == 0 {
		// InitChain writes pre-loaded state before the first block: a
		// second more per 100,000 accounts (10M: 52 s measured).
		wait = 60*time.Second + time.Duration(o.Genesis.State/100_000)*time.Second
	}
	if err := n.WaitForBlocks(ctx, 2, wait); err != nil {
		_ = n.Down()
		return nil, err
	}
	return n, nil
}

// Generate writes every node's home (keys, config, genesis) and returns the
// network's description, without starting anything.
func Generate(home string, o Options) (*testnet.Net, error) { return generate(home, o) }

func generate(home string, o Options) (*testnet.Net, error) {
	bind := o.Bind
	if bind == "" {
		bind = "127.0.0.1"
	}
	const perNode = 4 // p2p, rpc, prometheus, pprof
	total := o.Validators + o.RPCNodes
	pairs := testnet.PeerPairs(o.Validators, o.RPCNodes)
	nLinks := 0
	if o.Topology != "" {
		nLinks = testnet.LinkPorts(len(pairs), total, o.ClientLinks)
	}
	var ports []int
	var err error
	if o.PodPorts {
		bind = "0.0.0.0"
		for i := 0; i < total; i++ {
			ports = append(ports, testnet.PodP2P, testnet.PodRPC, testnet.PodMetrics, testnet.PodPprof)
		}
	} else if ports, err = testnet.FreePorts(bind, perNode*total+nLinks); err != nil {
		return nil, err
	}
	n := &testnet.Net{Version: 1, Kind: o.Kind, ChainID: o.ChainID, Genesis: o.Genesis, Settings: o.Settings, Home: home, Owner: o.Owner}
	confs := make([]*cfg.Config, total)
	var vals []types.GenesisValidator
	names := PlannedNames(o.Validators, o.RPCNodes)
	for i := 0; i < total; i++ {
		name, role := names[i], ""
		if i >= o.Validators {
			role = "rpc"
		}
		nh := filepath.Join(home, name)
		conf := nodeConfig(nh, o.Settings)
		hostPort := func(p int) string { return net.JoinHostPort(bind, strconv.Itoa(p)) }
		conf.P2P.ListenAddress = "tcp://" + hostPort(ports[perNode*i])
		conf.RPC.ListenAddress = "tcp://" + hostPort(ports[perNode*i+1])
		conf.Instrumentation.PrometheusListenAddr = hostPort(ports[perNode*i+2])
		conf.RPC.PprofListenAddress = hostPort(ports[perNode*i+3])
		conf.Moniker = name
		for _, d := range []string{filepath.Join(nh, "config"), filepath.Join(nh, "data")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		pv := privval.GenFilePV(conf.PrivValidatorKeyFile(), conf.PrivValidatorStateFile())
		pv.Save()
		nk, err := p2p.LoadOrGenNodeKey(conf.NodeKeyFile())
		if err != nil {
			return nil, err
		}
		pub, err := pv.GetPubKey()
		if err != nil {
			return nil, err
		}
		if role == "" {
			vals = append(vals, types.GenesisValidator{Address: pub.Address(), PubKey: pub, Power: 10, Name: name})
		}
		confs[i] = conf
		n.Nodes = append(n.Nodes, testnet.Node{
			Name: name, Home: nh, ID: string(nk.ID()), Role: role,
			RPC: "http://" + hostPort(ports[perNode*i+1]), P2P: conf.P2P.ListenAddress,
			Metrics: "http://" + hostPort(ports[perNode*i+2]) + "/metrics", Pprof: conf.RPC.PprofListenAddress,
			Log: filepath.Join(nh, "node.log"),
		})
	}
	appState, err := json.Marshal(o.Genesis)
	if err != nil {
		return nil, err
	}
	params := types.DefaultConsensusParams()
	params.Block.MaxBytes = o.Settings.MaxBlockBytes
	params.Block.MaxGas = o.Settings.MaxBlockGas
	// Evidence must fit a block (CometBFT refuses a genesis whose 1 MiB
	// evidence bound passes a smaller block's).
	params.Evidence.MaxBytes = min(params.Evidence.MaxBytes, params.Block.MaxBytes)
	gen := &types.GenesisDoc{
		GenesisTime:     cmttime.Now(),
		ChainID:         o.ChainID,
		ConsensusParams: params,
		Validators:      vals,
		AppState:        appState,
	}
	if err := gen.ValidateAndComplete(); err != nil {
		return nil, fmt.Errorf("genesis: %w", err)
	}
	if o.Topology != "" {
		if n.Links, err = testnet.PlanLinks(n, o.Topology, o.ClientLinks, pairs, bind, ports[perNode*total:], nil); err != nil {
			return nil, err
		}
	}
	peers := testnet.LinkedPeers(n, n.Links, pairs, o.Validators)
	for i, conf := range confs {
		conf.P2P.PersistentPeers = strings.Join(peers[i], ",")
		if err := gen.SaveAs(conf.GenesisFile()); err != nil {
			return nil, err
		}
		cfg.WriteConfigFile(filepath.Join(conf.RootDir, "config", "config.toml"), conf)
	}
	return n, nil
}

// nodeConfig is CometBFT's default configuration tuned for a loopback
// throughput test: bigger mempool, faster p2p flushing, no tx indexer.
func nodeConfig(home string, s testnet.Settings) *cfg.Config {
	conf := cfg.DefaultConfig()
	conf.SetRoot(home)
	conf.LogLevel = s.LogLevel
	conf.Consensus.TimeoutCommit = s.TimeoutCommit
	conf.Consensus.TimeoutPropose = s.TimeoutPropose
	conf.Consensus.CreateEmptyBlocks = s.CreateEmptyBlocks
	conf.Mempool.Size = s.MempoolSize
	conf.Mempool.MaxTxsBytes = s.MempoolMaxBytes
	conf.Mempool.CacheSize = s.MempoolCacheSize
	conf.Mempool.MaxTxBytes = 1 << 20
	conf.P2P.AllowDuplicateIP = true
	conf.P2P.AddrBookStrict = false
	conf.P2P.PexReactor = false
	conf.P2P.SendRate = 100 << 20
	conf.P2P.RecvRate = 100 << 20
	conf.P2P.FlushThrottleTimeout = 10 * time.Millisecond
	conf.P2P.MaxPacketMsgPayloadSize = 10240
	conf.RPC.MaxOpenConnections = 2000
	conf.RPC.MaxSubscriptionClients = 200
	conf.RPC.SubscriptionBufferSize = 2000
	conf.RPC.WebSocketWriteBufferSize = 2000
	conf.TxIndex.Indexer = "null"
	conf.Instrumentation.Prometheus = true
	return conf
}

// start gives every node the command that runs it (`tpslab node`, and the
// links process), then starts them.
func start(n *testnet.Net, binary string) error {
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return err
		}
	}
	for i := range n.Nodes {
		n.Nodes[i].Command = []string{binary, "node", "--home", n.Nodes[i].Home}
	}
	if n.Links != nil {
		n.Links.Command = []string{binary, "links", "--home", n.Home}
		if err := n.Save(); err != nil { // the links process reads it
			return err
		}
	}
	return n.StartAll()
}

// PlannedNames are the names Up gives the nodes of a network of validators
// and rpcNodes: node0.., then rpc0.. (so faults can be checked before the
// network starts).
func PlannedNames(validators, rpcNodes int) []string {
	names := make([]string, 0, validators+rpcNodes)
	for i := 0; i < validators; i++ {
		names = append(names, "node"+strconv.Itoa(i))
	}
	for i := 0; i < rpcNodes; i++ {
		names = append(names, "rpc"+strconv.Itoa(i))
	}
	return names
}
