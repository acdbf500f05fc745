package talernet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/pgnet"
)

// Exchange is net.json's taler section: where the exchange and its bank
// are, and how it was set up.
type ExchangeNet struct {
	Prefix      string   `json:"prefix"`
	Config      string   `json:"config"`
	DatabaseURL string   `json:"database_url"`
	URLs        []string `json:"exchange_urls"`
	Gateway     string   `json:"bank_gateway"` // the exchange account's wire gateway
	Debit       string   `json:"debit_payto"`  // the customers' account that funds reserves
	BankHost    string   `json:"bank_host"`    // host:port in merchants' payto URIs
	Currency    string   `json:"currency"`
	MasterPub   string   `json:"master_public_key"`
	Processes   int      `json:"processes"`
	Coins       []string `json:"coin_values"`
	// ServiceDatabaseURL is the database as the exchange's processes reach
	// it: through the emulated link, when the network has one.
	ServiceDatabaseURL string `json:"service_database_url,omitempty"`
}

// serviceDB is the database URL the exchange's processes use.
func (ex *ExchangeNet) serviceDB() string {
	if ex.ServiceDatabaseURL != "" {
		return ex.ServiceDatabaseURL
	}
	return ex.DatabaseURL
}

// Section is net.json's section for the exchange.
const Section = "taler"

// Of is the network's exchange section (nil when it has none).
func Of(n *testnet.Net) *ExchangeNet { return testnet.Part[ExchangeNet](n, Section) }

// Options describe an exchange network.
type Options struct {
	Kind              string
	Home              string
	Prefix            string // an installed exchange
	Processes         int    // taler-exchange-httpd processes
	Currency          string
	Coins             []string // coin values (CUR:V), RSA 2048 denominations without fees
	SynchronousCommit string
	Bind              string
	Reset             bool
	Owner             *testnet.Owner
	Log               io.Writer
	// DatabaseLink puts the exchange's connections to PostgreSQL through
	// an emulated link of this topology (served by Binary, tpslab: empty,
	// this one); empty: direct.
	DatabaseLink string
	Binary       string
}

// Up sets up and starts the exchange and its bank.
func Up(ctx context.Context, o Options) (*testnet.Net, error) {
	if o.Bind == "" {
		o.Bind = "127.0.0.1"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := CheckPrefix(o.Prefix); err != nil {
		return nil, err
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, err
	}
	if err := testnet.PrepareHome(home, o.Reset); err != nil {
		return nil, err
	}
	ports, err := testnet.FreePorts(o.Bind, 2+o.Processes+2) // the last two: the link's proxy and its API
	if err != nil {
		return nil, err
	}
	n := &testnet.Net{Version: 1, Kind: o.Kind, ChainID: "taler-" + o.Currency, Home: home, Owner: o.Owner}
	fmt.Fprintf(o.Log, "starting PostgreSQL for the exchange in %s\n", home)
	pg, dbURL, err := pgnet.Cluster(ctx, home, o.Bind, ports[0], 20*o.Processes+40, o.SynchronousCommit, "taler", o.Log)
	if pg.PID != 0 {
		n.Nodes = append(n.Nodes, pg)
	}
	if err != nil {
		_ = n.Down()
		return nil, err
	}
	bank := o.Bind + ":" + strconv.Itoa(ports[1])
	ex := &ExchangeNet{Prefix: o.Prefix, Config: filepath.Join(home, "taler.conf"), DatabaseURL: dbURL, Currency: o.Currency,
		Gateway: "http://" + bank + "/exchange/", Debit: "payto://x-taler-bank/" + bank + "/customers?receiver-name=Customers",
		BankHost: bank, Processes: o.Processes, Coins: o.Coins}
	for i := 0; i < o.Processes; i++ {
		ex.URLs = append(ex.URLs, "http://"+o.Bind+":"+strconv.Itoa(ports[2+i])+"/")
	}
	n.SetSection(Section, ex)
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	if o.DatabaseLink != "" {
		if o.Binary == "" {
			if o.Binary, err = os.Executable(); err != nil {
				return nil, err
			}
		}
		if ex.ServiceDatabaseURL, err = pgnet.DatabaseLink(n, o.DatabaseLink, o.Bind, o.Binary, dbURL, ports[2+o.Processes:]); err != nil {
			_ = n.Down()
			return nil, err
		}
	}
	if err := setUp(ctx, n, ex, o, ports); err != nil {
		_ = n.Down()
		return nil, err
	}
	n.Started = time.Now().UTC()
	return n, n.Save()
}

// runtimeDir is where the key helpers' sockets live: a short path, as a
// Unix socket's is at most 107 bytes and a test's home is deep.
func runtimeDir(home string) string {
	h := sha256.Sum256([]byte(home))
	return filepath.Join(os.TempDir(), "tpslab-taler-"+hex.EncodeToString(h[:6]))
}

// setUp writes the configuration, makes the master key, creates the
// schema, starts the processes and signs the exchange's keys offline.
func setUp(ctx context.Context, n *testnet.Net, ex *ExchangeNet, o Options, ports []int) error {
	rt := runtimeDir(n.Home)
	os.RemoveAll(rt)
	n.Scratch = append(n.Scratch, rt)
	if err := os.WriteFile(ex.Config, []byte(config(n.Home, rt, ex, o, ports, "")), 0o600); err != nil {
		return err
	}
	out, err := tool(ctx, ex, "taler-exchange-offline", "setup")
	if err != nil {
		return err
	}
	ex.MasterPub = strings.TrimSpace(out)
	if err := os.WriteFile(ex.Config, []byte(config(n.Home, rt, ex, o, ports, ex.MasterPub)), 0o600); err != nil {
		return err
	}
	if _, err := tool(ctx, ex, "taler-exchange-dbinit"); err != nil {
		return err
	}
	start := func(name, prog, role, rpc string, args ...string) error {
		nd := testnet.Node{Name: name, Home: n.Home, Role: role, RPC: rpc, Log: filepath.Join(n.Home, name+".log"),
			Command: append([]string{filepath.Join(ex.Prefix, "bin", prog), "-c", ex.Config, "-L", "WARNING"}, args...)}
		pid, err := testnet.StartProcess(nd)
		if err != nil {
			return err
		}
		nd.PID = pid
		n.Nodes = append(n.Nodes, nd)
		return n.Save()
	}
	for _, h := range []string{"rsa", "cs", "eddsa"} {
		if err := start("secmod-"+h, "taler-exchange-secmod-"+h, "helper", ""); err != nil {
			return err
		}
	}
	if err := start("bank", "taler-fakebank-run", "bank", ""); err != nil {
		return err
	}
	for i, u := range ex.URLs {
		cfg := filepath.Join(n.Home, "httpd"+strconv.Itoa(i)+".conf")
		// Each process its own port; the rest is the shared file's.
		if err := os.WriteFile(cfg, []byte("@inline@ "+ex.Config+"\n[exchange]\nPORT = "+strconv.Itoa(ports[2+i])+"\n"), 0o600); err != nil {
			return err
		}
		nd := testnet.Node{Name: "exchange" + strconv.Itoa(i), Home: n.Home, Role: "service", RPC: u, Log: filepath.Join(n.Home, "exchange"+strconv.Itoa(i)+".log"),
			Command: []string{filepath.Join(ex.Prefix, "bin", "taler-exchange-httpd"), "-c", cfg, "-L", "WARNING"}}
		if nd.PID, err = testnet.StartProcess(nd); err != nil {
			return err
		}
		n.Nodes = append(n.Nodes, nd)
	}
	if err := n.Save(); err != nil {
		return err
	}
	for _, u := range ex.URLs {
		if err := waitHTTP(ctx, n, u+"config"); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Log, "signing the exchange's keys offline (master key %s…)\n", ex.MasterPub[:8])
	payto := "payto://x-taler-bank/" + ex.BankHost + "/exchange?receiver-name=Exchange"
	zero := ex.Currency + ":0"
	if _, err := tool(ctx, ex, "taler-exchange-offline", "download", "sign", "enable-account", payto,
		"wire-fee", "now", "x-taler-bank", zero, zero, "global-fee", "now", zero, zero, zero, "1h", "1year", "5", "upload"); err != nil {
		return err
	}
	// The bank does not wake its first long poll: poll at most 300 ms.
	if err := start("wirewatch", "taler-exchange-wirewatch", "helper", "", "--longpoll-timeout", "300 ms"); err != nil {
		return err
	}
	for _, u := range ex.URLs {
		if err := waitHTTP(ctx, n, u+"keys"); err != nil {
			return err
		}
	}
	return nil
}

// config is the exchange's configuration: the paths under home, the
// database, the fakebank and its account, and one RSA denomination per
// coin value without fees.
func config(home, rt string, ex *ExchangeNet, o Options, ports []int, master string) string {
	if master == "" {
		master = "UNSET"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `[PATHS]
TALER_HOME = %[1]s
TALER_DATA_HOME = %[1]s/data/
TALER_CONFIG_HOME = %[1]s/config/
TALER_CACHE_HOME = %[1]s/cache/
TALER_RUNTIME_DIR = %[2]s/

[taler]
CURRENCY = %[3]s
CURRENCY_ROUND_UNIT = %[3]s:0.01
AML_THRESHOLD = %[3]s:1000000000

[exchange]
BASE_URL = %[4]s
PORT = %[5]d
BIND_TO = %[6]s
SERVE = tcp
MASTER_PUBLIC_KEY = %[7]s
DB = postgres
ATTRIBUTE_ENCRYPTION_KEY = tpslab-test-network
WIREWATCH_IDLE_SLEEP_INTERVAL = 50 ms

[exchangedb-postgres]
CONFIG = %[8]s

[exchange-offline]
MASTER_PRIV_FILE = %[1]s/data/offline/master.priv

[taler-exchange-secmod-rsa]
LOOKAHEAD_SIGN = 14 days
[taler-exchange-secmod-cs]
LOOKAHEAD_SIGN = 14 days
[taler-exchange-secmod-eddsa]
LOOKAHEAD_SIGN = 14 days
DURATION = 7 days

[bank]
HTTP_PORT = %[9]d
BIND_TO = %[6]s
SERVE = tcp
MAX_DEBT = %[3]s:100000000000
MAX_DEBT_BANK = %[3]s:1000000000000000

[exchange-account-1]
PAYTO_URI = payto://x-taler-bank/%[10]s/exchange?receiver-name=Exchange
ENABLE_DEBIT = YES
ENABLE_CREDIT = YES

[exchange-accountcredentials-1]
WIRE_GATEWAY_URL = %[11]s
WIRE_GATEWAY_AUTH_METHOD = none
`, home, rt, ex.Currency, ex.URLs[0], ports[2], o.Bind, master, strings.Replace(ex.serviceDB(), "?sslmode=disable", "", 1), ports[1], ex.BankHost, ex.Gateway)
	for _, c := range o.Coins {
		fmt.Fprintf(&b, `
[coin_%s]
VALUE = %s
DURATION_WITHDRAW = 7 days
DURATION_SPEND = 2 years
DURATION_LEGAL = 3 years
FEE_WITHDRAW = %[3]s:0
FEE_DEPOSIT = %[3]s:0
FEE_REFRESH = %[3]s:0
FEE_REFUND = %[3]s:0
CIPHER = RSA
RSA_KEYSIZE = 2048
`, strings.NewReplacer(":", "_", ".", "_").Replace(strings.ToLower(c)), c, ex.Currency)
	}
	return b.String()
}

// tool runs one of the exchange's command-line programs to completion.
func tool(ctx context.Context, ex *ExchangeNet, prog string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, filepath.Join(ex.Prefix, "bin", prog), append([]string{"-c", ex.Config, "-L", "WARNING"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// waitHTTP waits for url to answer 200.
func waitHTTP(ctx context.Context, n *testnet.Net, url string) error {
	cl := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := cl.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if d := n.Dead(); len(d) > 0 {
			return d[0].Exited(10)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not answer 200 within a minute; see the logs in %s", url, n.Home)
		}
	}
}
