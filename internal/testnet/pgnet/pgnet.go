// Package pgnet runs tpslab's reference centralized ledger: a private
// PostgreSQL cluster (Debian's postgresql: initdb, postgres) in a network
// home, on loopback and its own port, and one or more ledger service
// processes in front of it.
package pgnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/ledgersvc"
	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Ledger describes the reference ledger service: its database and the
// settings its services run with.
type Ledger struct {
	DatabaseURL       string `json:"database_url"`
	Processes         int    `json:"processes"`
	Connections       int    `json:"db_connections_per_process"`
	Batch             int    `json:"batch"`
	SynchronousCommit string `json:"synchronous_commit"`
	Partition         string `json:"partition"`
	Isolation         string `json:"isolation"`
	MaxQueue          int    `json:"max_queue,omitempty"` // 0: the service's default
	BatchWait         string `json:"batch_wait"`          // longest wait to fill a batch
}

// Section is the name of net.json's section this package writes: the ledger service's.
const Section = "ledger"

// Of is the network's ledger section (nil when it has none), kept on n: a
// change to it is saved with n.
func Of(n *testnet.Net) *Ledger { return testnet.Part[Ledger](n, Section) }

// Options describe a ledger network.
type Options struct {
	Kind              string // recorded in net.json: the kind that starts it
	Home              string
	ChainID           string
	Genesis           chain.Genesis
	Processes         int           // service processes
	Connections       int           // database connections per process
	Batch             int           // payments per database transaction
	BatchWait         time.Duration // longest wait to fill a batch (0: 2 ms)
	SynchronousCommit string        // on | off | local | remote_write | remote_apply
	Partition         string        // none | hash | range
	Isolation         string        // serializable | row-locks
	MaxQueue          int           // payments a process holds waiting for the database before it answers 429 (0: 10000)
	// DatabaseLink, a topology (netem.Topologies), puts PostgreSQL across an
	// emulated link from the services (service-postgres) with that
	// topology's conditions, which faults can delay, cap or cut; empty:
	// the services reach it directly.
	DatabaseLink string
	Binary       string // the tpslab executable (runs ledger-service)
	Bind         string
	Reset        bool
	Owner        *testnet.Owner
	Log          io.Writer
}

// Validate checks the settings before anything is created.
func (o Options) Validate() error {
	switch {
	case o.Processes < 1 || o.Processes > 64:
		return fmt.Errorf("--processes: %d, expected 1..64", o.Processes)
	case o.Connections < 1 || o.Connections > 500:
		return fmt.Errorf("--db-connections: %d, expected 1..500", o.Connections)
	case o.Processes*o.Connections > 900:
		return fmt.Errorf("--processes x --db-connections: %d, expected at most 900 database connections", o.Processes*o.Connections)
	case o.Batch < 1 || o.Batch > 10_000:
		return fmt.Errorf("--batch: %d, expected 1..10000 payments per database transaction", o.Batch)
	case o.BatchWait < 0 || o.BatchWait > time.Second:
		return fmt.Errorf("--batch-wait: %s, expected 0..1s (0: 2ms)", o.BatchWait)
	case o.MaxQueue < 0 || o.MaxQueue > 1_000_000:
		return fmt.Errorf("--max-queue: %d, expected 0..1000000 payments (0: 10000)", o.MaxQueue)
	}
	for _, c := range []struct {
		flag, v string
		allowed []string
	}{
		{"--synchronous-commit", o.SynchronousCommit, []string{"on", "off", "local", "remote_write", "remote_apply"}},
		{"--partition", o.Partition, []string{"none", "hash", "range"}},
		{"--isolation", o.Isolation, []string{"serializable", "row-locks"}},
	} {
		ok := false
		for _, a := range c.allowed {
			ok = ok || c.v == a
		}
		if !ok {
			return fmt.Errorf("%s: %q, expected one of %v", c.flag, c.v, c.allowed)
		}
	}
	return o.Genesis.Validate()
}

// PostgresBin is the directory of Debian's PostgreSQL server programs.
func PostgresBin() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if fileExists(filepath.Join(dirs[i], "initdb")) {
			return dirs[i], nil
		}
	}
	return "", errors.New("PostgreSQL's server programs (initdb, postgres) are not installed: apt-get install postgresql")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// runAs runs a PostgreSQL program, as the postgres user when tpslab is root.
func runAs(ctx context.Context, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	if os.Geteuid() == 0 {
		cred, err := testnet.Credential("postgres")
		if err != nil {
			return fmt.Errorf("PostgreSQL refuses to run as root and %v", err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", filepath.Base(bin), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// chownTree gives dir to the postgres user when tpslab is root.
func chownTree(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	cred, err := testnet.Credential("postgres")
	if err != nil {
		return err
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, int(cred.Uid), int(cred.Gid))
	})
}

// Cluster creates a private PostgreSQL cluster in home/postgres (settings
// as the ledger's: TCP only on bind:port, pg_stat_statements), starts it
// and creates database db; it returns the running node and the database's
// URL. Other kinds' networks keep their database in it (the Taler exchange's).
func Cluster(ctx context.Context, home, bind string, port, maxConns int, syncCommit, db string, log io.Writer) (testnet.Node, string, error) {
	bin, err := PostgresBin()
	if err != nil {
		return testnet.Node{}, "", err
	}
	pgHome := filepath.Join(home, "postgres")
	data := filepath.Join(pgHome, "data")
	o := Options{Bind: bind, Processes: 1, Connections: maxConns, SynchronousCommit: syncCommit, Log: log}
	if err := initCluster(ctx, bin, pgHome, data, o, port); err != nil {
		return testnet.Node{}, "", err
	}
	pg := testnet.Node{Name: "postgres", Home: pgHome, RPC: fmt.Sprintf("postgres://%s:%d", bind, port), Log: filepath.Join(pgHome, "postgres.log"),
		Command: []string{filepath.Join(bin, "postgres"), "-D", data}, User: "postgres", Role: "database", PIDFile: filepath.Join(data, "postmaster.pid")}
	if err := os.WriteFile(pg.Log, nil, 0o644); err != nil {
		return pg, "", err
	}
	if err := chownTree(pg.Log); err != nil {
		return pg, "", err
	}
	if pg.PID, err = testnet.StartProcess(pg); err != nil {
		return pg, "", err
	}
	admin := fmt.Sprintf("postgres://tpslab@%s:%d/postgres?sslmode=disable", bind, port)
	var conn *pgx.Conn
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if conn, err = pgx.Connect(ctx, admin); err == nil {
			break
		}
		if time.Now().After(deadline) || !pg.Alive() {
			return pg, "", fmt.Errorf("PostgreSQL did not start (%v); see %s", err, pg.Log)
		}
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize()); err != nil {
		return pg, "", err
	}
	url := fmt.Sprintf("postgres://tpslab@%s:%d/%s?sslmode=disable", bind, port, db)
	// The statistics telemetry reads (the slowest statements).
	dbc, err := pgx.Connect(ctx, url)
	if err != nil {
		return pg, "", err
	}
	defer dbc.Close(ctx)
	if _, err := dbc.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return pg, "", fmt.Errorf("create extension pg_stat_statements: %w", err)
	}
	return pg, url, nil
}

// Up creates the cluster and the ledger, and starts the services.
func Up(ctx context.Context, o Options) (*testnet.Net, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Bind == "" {
		o.Bind = "127.0.0.1"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if _, err := PostgresBin(); err != nil {
		return nil, err
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, err
	}
	if err := testnet.PrepareHome(home, o.Reset); err != nil {
		return nil, err
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	ports, err := testnet.FreePorts(o.Bind, 1+o.Processes+2) // the last two: the link's proxy and its API
	if err != nil {
		return nil, err
	}
	n := &testnet.Net{Version: 1, Kind: o.Kind, ChainID: o.ChainID, Genesis: o.Genesis, Home: home, Owner: o.Owner}
	pg, dbURL, err := Cluster(ctx, home, o.Bind, ports[0], o.Processes*o.Connections, o.SynchronousCommit, "ledger", o.Log)
	if pg.PID != 0 {
		n.Nodes = append(n.Nodes, pg)
	}
	if err != nil {
		_ = n.Down()
		return nil, err
	}
	n.SetSection(Section, &Ledger{DatabaseURL: dbURL, Processes: o.Processes, Connections: o.Connections, Batch: o.Batch,
		SynchronousCommit: o.SynchronousCommit, Partition: o.Partition, Isolation: o.Isolation, MaxQueue: o.MaxQueue, BatchWait: o.BatchWait.String()})
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	if err := setup(ctx, n, o); err != nil {
		_ = n.Down()
		return nil, err
	}
	svcURL := dbURL
	if o.DatabaseLink != "" {
		if svcURL, err = DatabaseLink(n, o.DatabaseLink, o.Bind, o.Binary, dbURL, ports[1+o.Processes:]); err != nil {
			_ = n.Down()
			return nil, err
		}
	}
	for i := 0; i < o.Processes; i++ {
		addr := o.Bind + ":" + strconv.Itoa(ports[1+i])
		name := "svc" + strconv.Itoa(i)
		nd := testnet.Node{Name: name, Role: "service", Home: filepath.Join(home, name), RPC: "http://" + addr, Metrics: "http://" + addr + "/metrics",
			Log: filepath.Join(home, name, "service.log"),
			Command: []string{o.Binary, "ledger-service", "--home", filepath.Join(home, name), "--listen", addr, "--db", svcURL, "--chain-id", o.ChainID,
				"--db-connections", strconv.Itoa(o.Connections), "--batch", strconv.Itoa(o.Batch), "--isolation", o.Isolation,
				"--max-queue", strconv.Itoa(max(o.MaxQueue, 0)), "--batch-wait", o.BatchWait.String()}}
		if err := os.MkdirAll(nd.Home, 0o755); err != nil {
			_ = n.Down()
			return nil, err
		}
		if nd.PID, err = testnet.StartProcess(nd); err != nil {
			_ = n.Down()
			return nil, err
		}
		n.Nodes = append(n.Nodes, nd)
	}
	n.Started = time.Now().UTC()
	if err := n.Save(); err != nil {
		_ = n.Down()
		return nil, err
	}
	for _, nd := range n.Nodes[1:] {
		if err := waitHealthy(ctx, nd); err != nil {
			_ = n.Down()
			return nil, err
		}
	}
	return n, nil
}

// DatabaseLink starts the links process (binary: tpslab) with one link of
// topology's conditions, from the services to PostgreSQL (Link.From
// "service"), on ports (two: the proxy and its API), and returns the
// database URL through it. tpslab's own readings (telemetry, the audit,
// counting) go direct.
func DatabaseLink(n *testnet.Net, topology, bind, binary, dbURL string, ports []int) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	pair := netem.Pair{From: "service", To: "postgres"}
	conds, regions, err := netem.Plan(topology, []string{pair.From, pair.To}, []netem.Pair{pair})
	if err != nil {
		return "", err
	}
	hp := func(p int) string { return net.JoinHostPort(bind, strconv.Itoa(p)) }
	n.Links = &testnet.Proxies{Emulation: netem.Emulation{Topology: topology, API: hp(ports[1]), Regions: regions,
		Links: []netem.Link{{Name: "service-postgres", From: pair.From, To: pair.To, Listen: hp(ports[0]), Upstream: u.Host, Protocol: "postgres", Conditions: conds[pair]}}},
		Command: []string{binary, "links", "--home", n.Home}, Log: filepath.Join(n.Home, "links.log")}
	n.Links.Metrics = "http://" + n.Links.API + "/metrics"
	if err := n.Save(); err != nil { // the links process reads it
		return "", err
	}
	if err := n.StartLinks(); err != nil {
		return "", err
	}
	u.Host = hp(ports[0])
	return u.String(), n.Save()
}

// initCluster creates the database cluster in data, owned by the postgres
// user, with tpslab's settings (TCP only, on port).
func initCluster(ctx context.Context, bin, pgHome, data string, o Options, port int) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	// The postgres user must reach its directory through the home.
	for d := pgHome; d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o011 != 0o011 && os.Geteuid() == 0 {
			os.Chmod(d, st.Mode().Perm()|0o011)
		}
	}
	if err := chownTree(pgHome); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "initialising a PostgreSQL cluster in %s\n", data)
	if err := runAs(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "tpslab", "--auth", "trust", "--encoding", "UTF8", "--no-instructions"); err != nil {
		return err
	}
	// TCP only: a Unix socket's path is limited to 107 bytes, which a deep
	// home (a test's temporary folder) passes.
	conf := fmt.Sprintf(`
# tpslab's settings
listen_addresses = '%s'
port = %d
unix_socket_directories = ''
max_connections = %d
shared_buffers = 256MB
synchronous_commit = %s
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
track_io_timing = on
`, o.Bind, port, o.Processes*o.Connections+20, o.SynchronousCommit)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	f.Close()
	return err
}

// setup creates the ledger's schema and the funded accounts.
func setup(ctx context.Context, n *testnet.Net, o Options) error {
	conn, err := pgx.Connect(ctx, Of(n).DatabaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	start := time.Now()
	if err := ledgersvc.Setup(ctx, conn, o.ChainID, o.Partition, o.Genesis); err != nil {
		return err
	}
	if o.Genesis.State == 0 {
		fmt.Fprintf(o.Log, "ledger database ready: %d accounts funded in %.1f s\n", o.Genesis.Accounts, time.Since(start).Seconds())
		return nil
	}
	var size int64
	if err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&size); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "ledger database ready: %d accounts funded and %d pre-loaded (payments go to them too) in %.1f s; the database %d MB\n",
		o.Genesis.Accounts, o.Genesis.State, time.Since(start).Seconds(), size>>20)
	return nil
}

func waitHealthy(ctx context.Context, nd testnet.Node) error {
	cl := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := cl.Get(nd.RPC + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not become healthy; see %s", nd.Name, nd.Log)
		}
	}
}

// Check audits the ledger database (docs/ledger-service.md).
func Check(ctx context.Context, n *testnet.Net) (lines, problems []string) {
	return Audit(ctx, n, Of(n).DatabaseURL, "the ledger database", ledgersvc.Check)
}

// Audit is `net check` for a network whose state lives in a PostgreSQL
// database: every process must run, then audit reads the database at url
// (what names it in errors).
func Audit(ctx context.Context, n *testnet.Net, url, what string, audit func(context.Context, *pgx.Conn) (lines, problems []string)) (lines, problems []string) {
	for _, nd := range n.Nodes {
		if !nd.Alive() {
			problems = append(problems, nd.Name+": not running")
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, append(problems, "connect to "+what+": "+err.Error())
	}
	defer conn.Close(ctx)
	l, p := audit(ctx, conn)
	return l, append(problems, p...)
}

// DatabaseStatus is `net status`'s HEIGHT and PEERS for a database node:
// the two counts query reads from the database at url.
func DatabaseStatus(ctx context.Context, url, query string) (height int64, peers int, err error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, query).Scan(&height, &peers)
	return height, peers, err
}

// Status is `net status` for the ledger: the database's payments and
// connections, and each service's health and queue.
func Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	out := make([]testnet.NodeStatus, len(n.Nodes))
	cl := &http.Client{Timeout: 3 * time.Second}
	for i, nd := range n.Nodes {
		s := nd.BaseStatus()
		out[i] = s
		if !s.Running {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if nd.Name == "postgres" {
			h, p, err := DatabaseStatus(cctx, Of(n).DatabaseURL, `SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM pg_stat_activity WHERE datname = 'ledger')`)
			if err != nil {
				out[i].Err = err.Error()
			} else {
				out[i].Height, out[i].Peers = h, p
			}
		} else if res, err := cl.Get(nd.RPC + "/healthz"); err != nil {
			out[i].Err = err.Error()
		} else {
			if res.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(io.LimitReader(res.Body, 200))
				out[i].Err = strings.TrimSpace(string(b))
			}
			res.Body.Close()
		}
		cancel()
	}
	return out
}
