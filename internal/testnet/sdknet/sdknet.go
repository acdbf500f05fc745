// Package sdknet creates and checks local networks of a Cosmos SDK chain:
// tpslab's own (tpsd) or a user's daemon (gaiad, simd, an app chain). It
// drives the daemon only through the SDK's standard command line (init,
// keys add, genesis add-genesis-account / gentx / collect-gentxs, start), so
// one code path serves both; it edits genesis.json to fund the test wallets
// and the node configuration files to put every listener on loopback.
package sdknet

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tpslab/tpslab/internal/testnet/gethnet"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/pelletier/go-toml/v2"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/targets/cosmos"
	"github.com/tpslab/tpslab/internal/targets/evm"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Cosmos describes a Cosmos SDK network: its daemon, denom and prefix, and
// the test wallets its genesis funded (derived from WalletSeed; the seed is
// test-only and derives keys, like the ledger's genesis seed).
type Cosmos struct {
	Binary     string `json:"binary"`
	Denom      string `json:"denom"`
	Prefix     string `json:"bech32_prefix"`
	WalletSeed string `json:"wallet_seed"`
	Wallets    int    `json:"wallets"`
	Balance    uint64 `json:"wallet_balance"`
	Supply     string `json:"genesis_supply"`  // of Denom, conserved by bank sends
	FunderKey  string `json:"funder_key_file"` // a funded key for fan-out funding (a path; the key stays in the file)
	// What the genesis set of the Hub's economics, where the daemon has
	// the modules: the fee market on, and minting on (the supply grows).
	FeeMarket bool `json:"fee_market,omitempty"`
	Minting   bool `json:"minting,omitempty"`
}

// Section is the name of net.json's section this package writes: a Cosmos SDK chain's.
const Section = "cosmos"

// Of is the network's cosmos section (nil when it has none), kept on n: a
// change to it is saved with n.
func Of(n *testnet.Net) *Cosmos { return testnet.Part[Cosmos](n, Section) }

// Economics are the Cosmos Hub's fee market and minting, for the genesis of
// an SDK chain whose daemon has the modules.
type Economics struct {
	FeeMarket           bool
	MinBaseGasPrice     string // a decimal
	MaxBlockUtilization uint64
	Mint                bool
}

// Options describe a network to create.
type Options struct {
	Kind       string // recorded in net.json: the kind that starts it
	Binary     string // the SDK daemon
	Validators int
	Home       string
	ChainID    string
	Denom      string // empty: the one the daemon's `init` chose (staking bond denom)
	Prefix     string // empty: the one its `keys add` uses
	WalletSeed string
	Wallets    int    // test wallets funded in genesis
	Balance    uint64 // per wallet
	Settings   testnet.Settings
	Bind       string
	Reset      bool
	Owner      *testnet.Owner
	Log        io.Writer
	Wait       time.Duration
	// EVM: a Cosmos EVM chain (tpsevmd): every node also serves the
	// Ethereum JSON-RPC, and the test wallets are Ethereum keys.
	EVM bool
	// Economics are applied where the daemon's genesis has the modules.
	Economics Economics
	// PodPorts: every node listens on all its addresses at the standard
	// ports, as a pod of its own does (Generate, for Kubernetes).
	PodPorts bool
	// Topology routes every P2P connection through an emulated link
	// (netem.Topologies), served by Links (`tpslab links`); empty: direct.
	Topology string
	// ClientLinks puts the load behind emulated links too.
	ClientLinks bool
	// RPCNodes are full nodes that do not validate; the load goes to them.
	RPCNodes int
	// Links is the tpslab program that serves the links (empty: this one).
	Links string
	// aligned: tpslab aligned the daemon's genesis for x/vm (evmd's).
	aligned bool
}

// PodPorts of an SDK node in a pod: RPC, P2P, REST, gRPC, metrics, pprof;
// EVMPodPorts add a Cosmos EVM node's JSON-RPC (HTTP, WebSocket) and its
// two metrics listeners.
var (
	PodPorts    = []int{26657, 26656, 1317, 9090, 26660, 6060, 26658}
	EVMPodPorts = append(append([]int(nil), PodPorts...), 8545, 8546, 6065, 6066)
)

// Validate checks the options before anything is created.
func (o Options) Validate() error {
	switch {
	case o.Validators < 1 || o.Validators > 64:
		return fmt.Errorf("--validators: %d, expected 1..64", o.Validators)
	case o.Wallets < 1 || o.Wallets > 1_000_000:
		return fmt.Errorf("--accounts: %d, expected 1..1000000 test wallets", o.Wallets)
	case o.Balance == 0:
		return errors.New("--balance: 0, expected a balance per wallet >= 1")
	case o.ChainID == "" || len(o.ChainID) > 48:
		return fmt.Errorf("--chain-id: %q, expected 1..48 characters", o.ChainID)
	case o.RPCNodes < 0 || o.RPCNodes > 16:
		return fmt.Errorf("--rpc-nodes: %d, expected 0..16", o.RPCNodes)
	case o.ClientLinks && o.Topology == "":
		return fmt.Errorf("--client-links: the generator's links take the conditions of a topology, expected --topology too")
	case o.PodPorts && (o.Topology != "" || o.RPCNodes > 0):
		return fmt.Errorf("--topology/--rpc-nodes: on Kubernetes an SDK chain runs validators on the cluster's network, expected neither")
	}
	if o.Topology != "" {
		if _, _, err := netem.Plan(o.Topology, nil, nil); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	return o.Settings.Validate()
}

// run runs the daemon with args; its output is returned, and named in the
// error when it fails.
func run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return nil, fmt.Errorf("%s %s: %v: %s", filepath.Base(bin), args[0], err, msg)
	}
	return append(out.Bytes(), errb.Bytes()...), nil
}

const validatorStake = 1_000_000_000_000 // bonded by each validator's gentx

// Up creates and starts a network, then waits until every node commits.
func Up(ctx context.Context, o Options) (*testnet.Net, error) {
	n, err := Generate(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := n.Save(); err != nil { // the links process reads it
		return nil, err
	}
	if err := n.StartAll(); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	wait := o.Wait
	if wait == 0 {
		wait = 90 * time.Second
	}
	if err := n.WaitForBlocks(ctx, 2, wait); err != nil {
		_ = n.Down()
		return nil, err
	}
	return n, nil
}

// Generate makes every node's home (keys, genesis with the validators and
// test wallets, configuration) without starting anything.
func Generate(ctx context.Context, o Options) (*testnet.Net, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Bind == "" {
		o.Bind = "127.0.0.1"
	}
	gentxIP := o.Bind
	if o.PodPorts {
		o.Bind, gentxIP = "0.0.0.0", "127.0.0.1" // peers are given at start, by pod address
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, err
	}
	if err := testnet.PrepareHome(home, o.Reset); err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return nil, err
	}
	n := &testnet.Net{Version: 1, Kind: o.Kind, ChainID: o.ChainID, Settings: o.Settings, Home: home, Owner: o.Owner}
	n.SetSection(Section, &Cosmos{Binary: bin, WalletSeed: o.WalletSeed, Wallets: o.Wallets, Balance: o.Balance})
	per := 7
	if o.EVM {
		n.SetSection(gethnet.Section, &gethnet.EVM{Binary: bin, WalletSeed: o.WalletSeed, Wallets: o.Wallets, Balance: strconv.FormatUint(o.Balance, 10)})
		per = 11 // and the JSON-RPC's HTTP, WebSocket and two metrics listeners
	}
	total := o.Validators + o.RPCNodes
	pairs := testnet.PeerPairs(o.Validators, o.RPCNodes)
	nLinks := 0
	if o.Topology != "" {
		nLinks = testnet.LinkPorts(len(pairs), total, o.ClientLinks)
	}
	var ports []int
	if o.PodPorts {
		pp := PodPorts
		if o.EVM {
			pp = EVMPodPorts
		}
		for i := 0; i < o.Validators; i++ {
			ports = append(ports, pp...)
		}
	} else if ports, err = testnet.FreePorts(o.Bind, per*total+nLinks); err != nil {
		return nil, err
	}
	var evmMetrics [][2]string // the JSON-RPC's and geth's metrics listeners, per node
	addrs := make([]string, total)
	for i := 0; i < total; i++ {
		name, role := "node"+strconv.Itoa(i), ""
		if i >= o.Validators {
			name, role = "rpc"+strconv.Itoa(i-o.Validators), "rpc"
		}
		nh := filepath.Join(home, name)
		p := ports[per*i : per*i+per]
		hp := func(k int) string { return o.Bind + ":" + strconv.Itoa(p[k]) }
		n.Nodes = append(n.Nodes, testnet.Node{Name: name, Home: nh, RPC: "http://" + hp(0), P2P: "tcp://" + hp(1),
			API: "http://" + hp(2), GRPC: hp(3), Metrics: "http://" + hp(4) + "/metrics", Pprof: hp(5),
			Log: filepath.Join(nh, "node.log"), Command: []string{bin, "start", "--home", nh}, Role: role})
		if o.EVM {
			n.Nodes[i].LoadRPC, n.Nodes[i].WS = "http://"+hp(7), "ws://"+hp(8)
			evmMetrics = append(evmMetrics, [2]string{hp(9), hp(10)})
		}
		if addrs[i], err = initNode(ctx, bin, o.ChainID, o.Denom, &n.Nodes[i]); err != nil {
			return nil, err
		}
	}
	g0 := filepath.Join(n.Nodes[0].Home, "config", "genesis.json")
	stakeAmount := new(big.Int).SetUint64(validatorStake)
	if o.EVM {
		aligned, err := alignEVMGenesis(g0, o.Denom)
		if err != nil {
			return nil, err
		}
		if aligned {
			stakeAmount.SetString(alignedStake, 10)
			o.aligned = true
			fmt.Fprintf(o.Log, "aligned %s's genesis for x/vm: one denom for staking, minting and x/vm, its 18-decimal metadata, block gas limit, %s staked per validator\n", filepath.Base(bin), alignedStake)
		}
	}
	if err := readChainFacts(g0, addrs[0], &o, Of(n)); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "cosmos network %s: denom %s, bech32 prefix %s, %d validators, %d test wallets\n", o.ChainID, Of(n).Denom, Of(n).Prefix, o.Validators, o.Wallets)
	stake := stakeAmount.String() + Of(n).Denom
	for _, a := range addrs[:o.Validators] {
		if _, err := run(ctx, bin, "genesis", "add-genesis-account", a, new(big.Int).Mul(stakeAmount, big.NewInt(10)).String()+Of(n).Denom, "--home", n.Nodes[0].Home); err != nil {
			return nil, err
		}
	}
	if err := gentxs(ctx, bin, n.Nodes[:o.Validators], g0, stake, o.ChainID, gentxIP); err != nil {
		return nil, err
	}
	wallets, funder, funderKey := testWallets(o, Of(n).Prefix)
	if err := fundWallets(g0, o, Of(n), wallets, funder); err != nil {
		return nil, err
	}
	if _, err := run(ctx, bin, "genesis", "collect-gentxs", "--home", n.Nodes[0].Home); err != nil {
		return nil, err
	}
	keyFile := filepath.Join(home, "funder.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(funderKey)+"\n"), 0o600); err != nil {
		return nil, err
	}
	Of(n).FunderKey = keyFile
	if gethnet.Of(n) != nil {
		gethnet.Of(n).FunderKey = keyFile
		chainID, err := evmChainID(n.Nodes[0].Home)
		if err != nil {
			return nil, err
		}
		gethnet.Of(n).ChainID = chainID
	}
	return n, connect(n, o, g0, pairs, ports[per*total:], evmMetrics)
}

// connect gives every node the genesis, its peers (through the links'
// proxies when o has a topology, on linkPorts) and its configuration.
func connect(n *testnet.Net, o Options, g0 string, pairs [][2]int, linkPorts []int, evmMetrics [][2]string) error {
	if o.Topology != "" {
		cmd, err := testnet.LinksCommand(o.Links, n.Home)
		if err != nil {
			return err
		}
		if n.Links, err = testnet.PlanLinks(n, o.Topology, o.ClientLinks, pairs, o.Bind, linkPorts, cmd); err != nil {
			return err
		}
	}
	peers := testnet.LinkedPeers(n, n.Links, pairs, o.Validators)
	for i, nd := range n.Nodes {
		if i > 0 {
			if err := copyFile(g0, filepath.Join(nd.Home, "config", "genesis.json")); err != nil {
				return err
			}
		}
		if err := configure(n, i, o, evmMetrics, peers[i]); err != nil {
			return err
		}
	}
	return nil
}

// initNode initialises a validator's home with its key, and fills in its
// id; it returns its account address (the mnemonic is never printed).
func initNode(ctx context.Context, bin, chainID, denom string, nd *testnet.Node) (string, error) {
	initArgs := []string{"init", nd.Name, "--chain-id", chainID, "--home", nd.Home}
	if denom != "" {
		initArgs = append(initArgs, "--default-denom", denom)
	}
	if _, err := run(ctx, bin, initArgs...); err != nil {
		return "", err
	}
	// The validator key; its mnemonic (in this output) is never printed.
	out, err := run(ctx, bin, "keys", "add", "validator", "--keyring-backend", "test", "--home", nd.Home, "--output", "json")
	if err != nil {
		return "", err
	}
	var key struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal(firstJSON(out), &key); err != nil || key.Address == "" {
		return "", fmt.Errorf("%s keys add: no address in its JSON output", filepath.Base(bin))
	}
	id, err := run(ctx, bin, "comet", "show-node-id", "--home", nd.Home)
	if err != nil {
		if id, err = run(ctx, bin, "tendermint", "show-node-id", "--home", nd.Home); err != nil {
			return "", err
		}
	}
	nd.ID = strings.TrimSpace(string(id))
	return key.Address, nil
}

// gentxs has every validator sign its genesis transaction on a copy of
// node 0's genesis, and gathers them in node 0's home.
func gentxs(ctx context.Context, bin string, validators []testnet.Node, g0, stake, chainID, gentxIP string) error {
	gentxDir := filepath.Join(validators[0].Home, "config", "gentx")
	for i, nd := range validators {
		if i > 0 {
			if err := copyFile(g0, filepath.Join(nd.Home, "config", "genesis.json")); err != nil {
				return err
			}
		}
		if _, err := run(ctx, bin, "genesis", "gentx", "validator", stake, "--chain-id", chainID, "--keyring-backend", "test",
			"--home", nd.Home, "--moniker", nd.Name, "--ip", gentxIP, "--node-id", nd.ID); err != nil {
			return err
		}
		if i > 0 {
			files, _ := filepath.Glob(filepath.Join(nd.Home, "config", "gentx", "*.json"))
			for _, f := range files {
				if err := copyFile(f, filepath.Join(gentxDir, filepath.Base(f))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// firstJSON returns the first JSON object in out (daemons mix logs in).
func firstJSON(out []byte) []byte {
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		if j := bytes.LastIndexByte(out, '}'); j > i {
			return out[i : j+1]
		}
	}
	return out
}

// readChainFacts reads the denom and the bech32 prefix the daemon uses, unless set.
func readChainFacts(genesis, anAddress string, o *Options, c *Cosmos) error {
	c.Denom, c.Prefix = o.Denom, o.Prefix
	if c.Denom == "" {
		var g struct {
			AppState struct {
				Staking struct {
					Params struct {
						BondDenom string `json:"bond_denom"`
					} `json:"params"`
				} `json:"staking"`
			} `json:"app_state"`
		}
		b, err := os.ReadFile(genesis)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &g); err != nil || g.AppState.Staking.Params.BondDenom == "" {
			return fmt.Errorf("%s: no staking bond_denom; give --denom", genesis)
		}
		c.Denom = g.AppState.Staking.Params.BondDenom
	}
	if c.Prefix == "" {
		hrp, _, err := bech32.Decode(anAddress)
		if err != nil {
			return fmt.Errorf("the daemon's address %q is not bech32 (%v); give --bech32-prefix", anAddress, err)
		}
		c.Prefix = hrp
	}
	return nil
}

// testWallets are the test wallets' and the funder's addresses, and the
// funder's key: Cosmos keys, or for a Cosmos EVM chain Ethereum keys (the
// same 20 bytes are the account's bech32 and 0x address).
func testWallets(o Options, prefix string) (wallets []string, funder string, funderKey []byte) {
	if o.EVM {
		for _, w := range evm.DeriveWallets(o.WalletSeed, o.Wallets) {
			wallets = append(wallets, cosmos.Bech32(prefix, w.Address.Bytes()))
		}
		f := evm.DeriveWallet(o.WalletSeed+"/funder", 0)
		return wallets, cosmos.Bech32(prefix, f.Address.Bytes()), crypto.FromECDSA(f.Key)
	}
	for _, w := range cosmos.DeriveWallets(o.WalletSeed, o.Wallets, prefix) {
		wallets = append(wallets, w.Address)
	}
	f := cosmos.DeriveWallet(o.WalletSeed+"/funder", 0, prefix)
	return wallets, f.Address, f.Key
}

// fundWallets adds the test wallets and the funder to genesis.json, and
// records the denom's genesis supply.
func fundWallets(path string, o Options, c *Cosmos, wallets []string, funder string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var g map[string]json.RawMessage
	if err := json.Unmarshal(b, &g); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var app map[string]json.RawMessage
	if err := json.Unmarshal(g["app_state"], &app); err != nil {
		return fmt.Errorf("%s: app_state: %w", path, err)
	}
	var auth map[string]json.RawMessage
	var bank map[string]json.RawMessage
	if err := json.Unmarshal(app["auth"], &auth); err != nil {
		return fmt.Errorf("%s: auth: %w", path, err)
	}
	if err := json.Unmarshal(app["bank"], &bank); err != nil {
		return fmt.Errorf("%s: bank: %w", path, err)
	}
	var accounts []json.RawMessage
	var balances []struct {
		Address string `json:"address"`
		Coins   []struct {
			Denom  string `json:"denom"`
			Amount string `json:"amount"`
		} `json:"coins"`
	}
	json.Unmarshal(auth["accounts"], &accounts)
	json.Unmarshal(bank["balances"], &balances)
	type coin struct {
		Denom  string `json:"denom"`
		Amount string `json:"amount"`
	}
	type balance struct {
		Address string `json:"address"`
		Coins   []coin `json:"coins"`
	}
	var newBalances []balance
	for _, bl := range balances {
		nb := balance{Address: bl.Address}
		for _, c := range bl.Coins {
			nb.Coins = append(nb.Coins, coin(c))
		}
		newBalances = append(newBalances, nb)
	}
	add := func(addr string, amount string) {
		acc, _ := json.Marshal(map[string]any{"@type": "/cosmos.auth.v1beta1.BaseAccount", "address": addr, "pub_key": nil, "account_number": "0", "sequence": "0"})
		accounts = append(accounts, acc)
		newBalances = append(newBalances, balance{Address: addr, Coins: []coin{{Denom: c.Denom, Amount: amount}}})
	}
	each := strconv.FormatUint(o.Balance, 10)
	for _, w := range wallets {
		add(w, each)
	}
	add(funder, new(big.Int).Mul(big.NewInt(int64(o.Wallets)), new(big.Int).SetUint64(o.Balance)).String())
	supply := new(big.Int)
	for _, bl := range newBalances {
		for _, cn := range bl.Coins {
			if cn.Denom == c.Denom {
				v, ok := new(big.Int).SetString(cn.Amount, 10)
				if !ok {
					return fmt.Errorf("%s: balance %q of %s is not an integer", path, cn.Amount, bl.Address)
				}
				supply.Add(supply, v)
			}
		}
	}
	c.Supply = supply.String()
	auth["accounts"], _ = json.Marshal(accounts)
	bank["balances"], _ = json.Marshal(newBalances)
	bank["supply"] = json.RawMessage("[]") // recomputed from the balances at InitGenesis
	app["auth"], _ = json.Marshal(auth)
	app["bank"], _ = json.Marshal(bank)
	maxGas := o.Settings.MaxBlockGas
	if err := economics(app, o.Economics, c); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if c.FeeMarket && maxGas == -1 && o.Economics.MaxBlockUtilization > 0 {
		// Blocks hold what the fee market lets in: with no consensus cap,
		// proposers fill blocks past its maximum and the excess fails
		// inside the block (the Hub's own genesis has this mismatch).
		maxGas = int64(o.Economics.MaxBlockUtilization)
	}
	if o.aligned && maxGas == -1 {
		maxGas = 100_000_000 // cosmos/evm's chains want a finite block gas limit (its local-node script sets one)
	}
	g["app_state"], _ = json.Marshal(app)
	if o.Settings.MaxBlockBytes > 0 || maxGas != 0 {
		var cons map[string]any
		if err := json.Unmarshal(g["consensus"], &cons); err == nil {
			if params, ok := cons["params"].(map[string]any); ok {
				if block, ok := params["block"].(map[string]any); ok {
					block["max_bytes"] = strconv.FormatInt(o.Settings.MaxBlockBytes, 10)
					block["max_gas"] = strconv.FormatInt(maxGas, 10)
				}
				// Evidence must fit a block (a genesis whose evidence
				// bound passes the block's is refused).
				if ev, ok := params["evidence"].(map[string]any); ok && o.Settings.MaxBlockBytes > 0 {
					if cur, err := strconv.ParseInt(fmt.Sprint(ev["max_bytes"]), 10, 64); err == nil && cur > o.Settings.MaxBlockBytes {
						ev["max_bytes"] = strconv.FormatInt(o.Settings.MaxBlockBytes, 10)
					}
				}
			}
			g["consensus"], _ = json.Marshal(cons)
		}
	}
	out, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// economics writes the fee market's and x/mint's parameters into app
// state, for the modules the daemon's genesis has, and records in c what
// is on. The fee market collects fees for distribution (distribute_fees)
// rather than burning them, so only minting changes the supply.
func economics(app map[string]json.RawMessage, e Economics, c *Cosmos) error {
	var fm map[string]map[string]any
	// Cosmos EVM's EIP-1559 module has the same name and other parameters:
	// it keeps its own.
	if raw, ok := app["feemarket"]; ok && json.Unmarshal(raw, &fm) == nil && fm["state"] != nil && fm["params"]["max_block_utilization"] != nil {
		p := fm["params"]
		p["enabled"], p["fee_denom"], p["distribute_fees"] = e.FeeMarket, c.Denom, true
		if price := e.MinBaseGasPrice; price != "" {
			if !strings.Contains(price, ".") {
				price += ".0"
			}
			p["min_base_gas_price"], fm["state"]["base_gas_price"] = price, price
		}
		if e.MaxBlockUtilization > 0 {
			p["max_block_utilization"] = strconv.FormatUint(e.MaxBlockUtilization, 10)
		}
		c.FeeMarket = e.FeeMarket
		app["feemarket"], _ = json.Marshal(fm)
	}
	if raw, ok := app["mint"]; ok {
		var m map[string]map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m["params"] == nil || m["minter"] == nil {
			return fmt.Errorf("app_state.mint: not x/mint's params and minter (%v)", err)
		}
		m["params"]["mint_denom"] = c.Denom
		if !e.Mint {
			zero := "0.000000000000000000"
			for _, k := range []string{"inflation_rate_change", "inflation_max", "inflation_min"} {
				m["params"][k] = zero
			}
			m["minter"]["inflation"] = zero
		}
		c.Minting = e.Mint
		app["mint"], _ = json.Marshal(m)
	}
	return nil
}

// configure writes node i's listeners (loopback), peers and settings into
// its config.toml, app.toml and client.toml.
func configure(n *testnet.Net, i int, o Options, evmMetrics [][2]string, peers []string) error {
	nd := n.Nodes[i]
	s := o.Settings
	err := editTOML(filepath.Join(nd.Home, "config", "config.toml"), map[string]any{
		"moniker":   nd.Name,
		"log_level": logLevel(s),
		"rpc.laddr": "tcp://" + strings.TrimPrefix(nd.RPC, "http://"), "rpc.pprof_laddr": nd.Pprof,
		"rpc.max_open_connections": 2000, "rpc.max_subscription_clients": 200, "rpc.experimental_subscription_buffer_size": 2000,
		"rpc.experimental_websocket_write_buffer_size": 2000,
		"p2p.laddr": nd.P2P, "p2p.persistent_peers": strings.Join(peers, ","), "p2p.addr_book_strict": false,
		"p2p.allow_duplicate_ip": true, "p2p.pex": false, "p2p.flush_throttle_timeout": "10ms",
		"p2p.send_rate": 100 << 20, "p2p.recv_rate": 100 << 20, "p2p.external_address": "",
		"mempool.size": s.MempoolSize, "mempool.max_txs_bytes": s.MempoolMaxBytes, "mempool.cache_size": s.MempoolCacheSize,
		"consensus.timeout_commit": s.TimeoutCommit.String(), "consensus.timeout_propose": s.TimeoutPropose.String(),
		"consensus.create_empty_blocks": s.CreateEmptyBlocks,
		"tx_index.indexer":              "null",
		"instrumentation.prometheus":    true, "instrumentation.prometheus_listen_addr": strings.TrimSuffix(strings.TrimPrefix(nd.Metrics, "http://"), "/metrics"),
	})
	if err != nil {
		return err
	}
	if err := editTOML(filepath.Join(nd.Home, "config", "app.toml"), map[string]any{
		"minimum-gas-prices": "0" + Of(n).Denom,
		"api.enable":         true, "api.address": "tcp://" + strings.TrimPrefix(nd.API, "http://"), "api.max-open-connections": 2000,
		"grpc.enable": true, "grpc.address": nd.GRPC,
	}); err != nil {
		return err
	}
	if o.EVM {
		p := func(u string) string { _, hp, _ := strings.Cut(u, "://"); return hp }
		if err := editTOML(filepath.Join(nd.Home, "config", "app.toml"), map[string]any{
			"json-rpc.enable": true, "json-rpc.address": p(nd.LoadRPC), "json-rpc.ws-address": p(nd.WS),
			"json-rpc.api": "eth,net,web3,txpool", "json-rpc.enable-indexer": true, // eth_getBlockByNumber and receipts read it (the CometBFT indexer is off)
			"json-rpc.metrics-address": evmMetrics[i][0], "evm.geth-metrics-address": evmMetrics[i][1],
		}); err != nil {
			return err
		}
	}
	return editTOML(filepath.Join(nd.Home, "config", "client.toml"), map[string]any{
		"chain-id": n.ChainID, "keyring-backend": "test", "node": "tcp://" + strings.TrimPrefix(nd.RPC, "http://"),
	})
}

// editTOML sets dotted keys in a TOML file (tables are created as needed).
func editTOML(path string, set map[string]any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for k, v := range set {
		parts := strings.Split(k, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				if _, exists := m[p]; exists {
					return fmt.Errorf("%s: %s is not a table", path, p)
				}
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	out, err := toml.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// Tpsd is tpslab's own SDK daemon, built from chains/cosmos when missing
// or stale.
func Tpsd(log io.Writer) (string, error) {
	return buildcache.GoBuild("tpsd", "chains/cosmos", "./cmd/tpsd", log)
}

// Tpsevmd is tpslab's Cosmos EVM daemon, built from chains/cosmosevm when
// missing or stale.
func Tpsevmd(log io.Writer) (string, error) {
	return buildcache.GoBuild("tpsevmd", "chains/cosmosevm", "./cmd/tpsevmd", log)
}

// evmChainID reads the EIP-155 chain id the daemon's init wrote in app.toml.
func evmChainID(nodeHome string) (string, error) {
	b, err := os.ReadFile(filepath.Join(nodeHome, "config", "app.toml"))
	if err != nil {
		return "", err
	}
	var c struct {
		EVM struct {
			ChainID uint64 `toml:"evm-chain-id"`
		} `toml:"evm"`
	}
	if err := toml.Unmarshal(b, &c); err != nil || c.EVM.ChainID == 0 {
		return "", fmt.Errorf("%s/config/app.toml: no evm.evm-chain-id (%v)", nodeHome, err)
	}
	return strconv.FormatUint(c.EVM.ChainID, 10), nil
}
