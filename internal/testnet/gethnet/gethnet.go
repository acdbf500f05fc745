// Package gethnet runs a local EVM chain: geth in dev mode (a single
// block-producing node, a block every period), on loopback, with a funder
// whose key is derived from a seed and test wallets it funds at start.
package gethnet

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/testnet"
)

// EVM describes an EVM network: its node program, chain id, the funder
// (whose key stays in its file) and the test wallets it funded.
type EVM struct {
	Binary     string `json:"binary"`
	ChainID    string `json:"chain_id"`
	WalletSeed string `json:"wallet_seed"`
	Wallets    int    `json:"wallets"`
	Balance    string `json:"wallet_balance_wei"`
	FunderKey  string `json:"funder_key_file"`
	GasLimit   uint64 `json:"block_gas_limit"`
}

// Section is the name of net.json's section this package writes: an EVM chain's (geth, or a Cosmos EVM chain's JSON-RPC side).
const Section = "evm"

// Of is the network's evm section (nil when it has none), kept on n: a
// change to it is saved with n.
func Of(n *testnet.Net) *EVM { return testnet.Part[EVM](n, Section) }

// Version is the geth release tpslab installs: newer ones need modules the
// Go module proxy here does not serve.
const Version = "v1.15.11"

// Geth is geth, installed into the build cache when missing.
func Geth(log io.Writer) (string, error) {
	return buildcache.GoInstall("geth", "github.com/ethereum/go-ethereum/cmd/geth@"+Version, log)
}

// Options describe a network to create.
type Options struct {
	Kind       string // recorded in net.json: the kind that starts it
	Binary     string // geth; empty: installed when missing
	Home       string
	Period     time.Duration // block period (dev mode)
	GasLimit   uint64        // block gas limit
	WalletSeed string
	Wallets    int
	Balance    *big.Int // wei per wallet
	Bind       string
	Reset      bool
	Owner      *testnet.Owner
	Log        io.Writer
	// Topology puts the load generator behind an emulated link to the
	// node (the client link: geth has no peers), served by Links (tpslab;
	// empty: this one); faults on node0's links delay or throttle it.
	Topology string
	Links    string
}

// FunderOf is the funder of a network whose wallets come from seed.
func FunderOf(seed string) evm.Wallet { return evm.DeriveWallet(seed+"/funder", 0) }

// Up starts geth in dev mode, funds the test wallets from the funder (the
// dev account, prefunded by geth) and writes net.json.
func Up(ctx context.Context, o Options) (*testnet.Net, error) {
	if o.Wallets < 1 || o.Wallets > 1_000_000 {
		return nil, fmt.Errorf("--accounts: %d, expected 1..1000000 test wallets", o.Wallets)
	}
	if o.Period <= 0 {
		o.Period = time.Second
	}
	if o.GasLimit == 0 {
		o.GasLimit = 150_000_000
	}
	if o.Bind == "" {
		o.Bind = "127.0.0.1"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = Geth(o.Log); err != nil {
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
	funder := FunderOf(o.WalletSeed)
	keyFile := filepath.Join(home, "funder.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(crypto.FromECDSA(funder.Key))+"\n"), 0o600); err != nil {
		return nil, err
	}
	pw := filepath.Join(home, "password")
	if err := os.WriteFile(pw, []byte("\n"), 0o600); err != nil {
		return nil, err
	}
	data := filepath.Join(home, "node0", "data")
	// The funder becomes geth's dev account: the one dev mode prefunds.
	if out, err := exec.CommandContext(ctx, bin, "account", "import", "--datadir", data, "--password", pw, keyFile).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("geth account import: %v: %s", err, out)
	}
	ports, err := testnet.FreePorts(o.Bind, 3+testnet.LinkPorts(0, 1, true))
	if err != nil {
		return nil, err
	}
	hp := func(p int) string { return o.Bind + ":" + strconv.Itoa(p) }
	nd := testnet.Node{Name: "node0", Home: filepath.Join(home, "node0"), RPC: "http://" + hp(ports[0]), WS: "ws://" + hp(ports[1]),
		Metrics: "http://" + hp(ports[2]) + "/debug/metrics/prometheus", Log: filepath.Join(home, "node0", "node.log")}
	nd.Command = []string{bin, "--dev", "--dev.period", strconv.Itoa(int(o.Period / time.Second)), "--dev.gaslimit", strconv.FormatUint(o.GasLimit, 10),
		"--datadir", data, "--password", pw,
		// Every block's state written as it is made: a node crashed with
		// SIGKILL restarts at its head, not at a state flushed minutes
		// earlier (which rewound the funded wallets).
		"--gcmode", "archive",
		"--http", "--http.addr", o.Bind, "--http.port", strconv.Itoa(ports[0]), "--http.api", "eth,net,web3,txpool",
		"--ws", "--ws.addr", o.Bind, "--ws.port", strconv.Itoa(ports[1]), "--ws.api", "eth,net,web3",
		"--metrics", "--metrics.addr", o.Bind, "--metrics.port", strconv.Itoa(ports[2]),
		"--authrpc.addr", o.Bind, "--nodiscover", "--maxpeers", "0", "--port", "0", "--nat", "none", "--ipcdisable",
		"--txpool.globalslots", "100000", "--txpool.accountslots", "64", "--txpool.globalqueue", "100000",
		"--rpc.txfeecap", "0", "--verbosity", "2"}
	n := &testnet.Net{Version: 1, Kind: o.Kind, Home: home, Owner: o.Owner, Nodes: []testnet.Node{nd}}
	n.SetSection(Section, &EVM{Binary: bin, WalletSeed: o.WalletSeed, Wallets: o.Wallets, Balance: o.Balance.String(), FunderKey: keyFile, GasLimit: o.GasLimit})
	if err := clientLink(n, o, ports[3:]); err != nil {
		return nil, err
	}
	if err := n.StartAll(); err != nil {
		return nil, err
	}
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	cl := &evm.Client{URL: nd.RPC, HTTP: &http.Client{Timeout: 10 * time.Second}}
	var id *big.Int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if h, err := cl.BlockNumber(ctx); err == nil && h >= 1 {
			if id, err = cl.ChainID(ctx); err == nil {
				break
			}
		}
		if !n.Nodes[0].Alive() || time.Now().After(deadline) || ctx.Err() != nil {
			_ = n.Down()
			return nil, fmt.Errorf("geth did not start; see %s", nd.Log)
		}
	}
	n.ChainID, Of(n).ChainID = id.String(), id.String()
	tgt, err := evm.New(evm.Options{Endpoints: []string{nd.RPC}, Connections: 1})
	if err != nil {
		_ = n.Down()
		return nil, err
	}
	fees, err := tgt.Fees(ctx, false, nil, nil)
	if err != nil {
		_ = n.Down()
		return nil, err
	}
	codec := evm.NewCodec(id, nil, 21_000, fees, evm.DeriveWallets(o.WalletSeed, o.Wallets), tgt.Client())
	to := make([]int, o.Wallets)
	for i := range to {
		to[i] = i
	}
	start := time.Now()
	if err := evm.Fund(ctx, codec, tgt.Submitter(0), funder, to, o.Balance, nil, nil); err != nil {
		_ = n.Down()
		return nil, fmt.Errorf("fund the test wallets: %w", err)
	}
	fmt.Fprintf(o.Log, "geth dev chain %s: %d test wallets funded with %s wei each in %.1f s\n", id, o.Wallets, o.Balance, time.Since(start).Seconds())
	return n, n.Save()
}

// clientLink puts tpslab's requests to the node behind an emulated link
// on ports, when o has a topology.
func clientLink(n *testnet.Net, o Options, ports []int) error {
	if o.Topology == "" {
		return nil
	}
	cmd, err := testnet.LinksCommand(o.Links, n.Home)
	if err != nil {
		return err
	}
	if n.Links, err = testnet.PlanLinks(n, o.Topology, true, nil, o.Bind, ports, cmd); err != nil {
		return fmt.Errorf("--%w", err)
	}
	return n.Save() // the links process reads it
}

// Check audits the node: it runs, its head advances, and the last blocks
// link by parent hash.
func Check(ctx context.Context, n *testnet.Net) (lines, problems []string) {
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			problems = append(problems, nd.Name+": not running")
			continue
		}
		cl := &evm.Client{URL: nd.RPC, HTTP: &http.Client{Timeout: 10 * time.Second}}
		h0, err := cl.BlockNumber(ctx)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", nd.Name, err))
			continue
		}
		var prev evm.Header
		for h := max(1, h0-20); h <= h0; h++ {
			b, err := cl.Block(ctx, h)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: block %d: %v", nd.Name, h, err))
				break
			}
			if prev.Hash != "" && b.ParentHash != prev.Hash {
				problems = append(problems, fmt.Sprintf("%s: block %d's parent is %s, block %d is %s", nd.Name, h, b.ParentHash, h-1, prev.Hash))
			}
			prev = b
		}
		time.Sleep(2 * time.Second)
		h1, err := cl.BlockNumber(ctx)
		if err != nil || h1 <= h0 {
			problems = append(problems, fmt.Sprintf("%s: head did not advance from %d in 2 s", nd.Name, h0))
		}
		lines = append(lines, fmt.Sprintf("%s: head %d, blocks %d..%d link by parent hash", nd.Name, h1, max(1, h0-20), h0))
	}
	return lines, problems
}

// Status is `net status` for geth: head, peers and txpool.
func Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	out := make([]testnet.NodeStatus, len(n.Nodes))
	for i, nd := range n.Nodes {
		s := nd.BaseStatus()
		if s.Running {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			cl := &evm.Client{URL: nd.RPC, HTTP: &http.Client{}}
			h, err := cl.BlockNumber(cctx)
			if err != nil {
				s.Err = err.Error()
			}
			s.Height = h
			var peers evm.Quantity
			if cl.Call(cctx, &peers, "net_peerCount") == nil {
				s.Peers = int(peers)
			}
			var pool struct{ Pending, Queued evm.Quantity }
			if cl.Call(cctx, &pool, "txpool_status") == nil {
				s.MempoolTxs = int(pool.Pending + pool.Queued)
			}
			cancel()
		}
		out[i] = s
	}
	return out
}
