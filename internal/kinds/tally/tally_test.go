// Package tally is a throw-away kind that lives in this test alone: it
// proves a kind is one folder. Nothing outside this folder names it; the
// test adds it to the registry and drives it through the real command line
// (validate, run, find-max, net up/status/check/down). It has a setting of
// its own (tally.account, flag --tally-account) and a section of net.json
// of its own (the accounts its ledger opened).
package tally

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/workload"
)

// kind is a ledger that settles a payment in its answer: POST
// /pay/ACCOUNT with the transaction as the body, 200 when recorded, 404
// when the ledger has no such account.
type kind struct{}

func (kind) Info() kinds.Info {
	return kinds.Info{Name: "tally", About: "a test's throw-away synchronous ledger"}
}

// settings are the kind's own section of the scenario.
type settings struct {
	Account string `yaml:"account" json:"account"` // the account paid
}

func (kind) Settings() (string, any) { return "tally", &settings{Account: "main"} }

func (kind) Flags() []kinds.Flag {
	return []kinds.Flag{{Name: "tally-account", Path: "tally.account", Help: "tally: the account paid (net up: the account its ledger opens)", NetUp: true}}
}

// netSection is the kind's own section of net.json.
type netSection struct {
	Accounts []string `json:"accounts"`
}

func (kind) Validate(sc *scenario.Scenario) error {
	if len(sc.Target.Endpoints) == 0 && sc.Target.NetHome == "" {
		return fmt.Errorf("target.endpoints: empty, expected the tally's URL for target kind tally")
	}
	if a := kinds.SectionOf[settings](sc, "tally").Account; a == "" || strings.Contains(a, "/") {
		return fmt.Errorf("tally.account: %q, expected an account name without a slash", a)
	}
	return nil
}

func (kind) Target(sys *kinds.System, sc *scenario.Scenario) (sut.Target, error) {
	account := kinds.SectionOf[settings](sc, "tally").Account
	if sys.Net != nil {
		var ns netSection
		if ok, err := sys.Net.Section("tally", &ns); err != nil || !ok {
			return nil, fmt.Errorf("%s: no tally section (%v)", sys.Net.Home, err)
		}
		if !slices.Contains(ns.Accounts, account) {
			return nil, exitcode.BadInputf("tally.account: %q, expected one of the accounts the network in %s opened: %v", account, sys.Net.Home, ns.Accounts)
		}
	}
	return &target{url: sys.Endpoints[0] + "/pay/" + account, base: sys.Endpoints[0]}, nil
}

// The kind's network: one ledger process, started from this test's own
// binary (TestMain), with the accounts the settings name.

func (kind) NetDefaults(o *kinds.NetOptions, _ func(string) bool) error {
	if o.Validators != 4 && o.Validators != 1 {
		return fmt.Errorf("--validators: %d, expected 1: a tally is one process", o.Validators)
	}
	return nil
}

func (kind) Up(ctx context.Context, o kinds.NetOptions) (*testnet.Net, error) {
	if err := testnet.PrepareHome(o.Home, o.Reset); err != nil {
		return nil, err
	}
	ports, err := testnet.FreePorts("127.0.0.1", 1)
	if err != nil {
		return nil, err
	}
	account := kinds.SectionOf[settings](o.Scenario, "tally").Account
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	nd := testnet.Node{Name: "tally0", Home: o.Home, RPC: url, Log: filepath.Join(o.Home, "tally0.log"), Role: "service",
		Command: []string{os.Args[0], "-test.run=^$", "tally-ledger", fmt.Sprintf("127.0.0.1:%d", ports[0]), account, o.Home}}
	if nd.PID, err = testnet.StartProcess(nd); err != nil {
		return nil, err
	}
	n := &testnet.Net{Version: 1, Kind: o.Kind, ChainID: "tally", Home: o.Home, Started: time.Now(), Owner: o.Owner, Nodes: []testnet.Node{nd}}
	if err := n.SetSection("tally", netSection{Accounts: []string{account}}); err != nil {
		return nil, err
	}
	if err := n.Save(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := (&target{base: url}).count(ctx); err == nil {
			return n, nil
		} else if time.Now().After(deadline) {
			n.Down()
			return nil, fmt.Errorf("the tally ledger did not answer: %w", err)
		}
	}
}

func (kind) Status(ctx context.Context, n *testnet.Net) []testnet.NodeStatus {
	st := n.Nodes[0].BaseStatus()
	c, err := (&target{base: n.Nodes[0].RPC}).count(ctx)
	st.Height = int64(c)
	if err != nil {
		st.Err = err.Error()
	}
	return []testnet.NodeStatus{st}
}

func (kind) Check(ctx context.Context, n *testnet.Net) kinds.Audit {
	var ns netSection
	if _, err := n.Section("tally", &ns); err != nil {
		return kinds.Audit{Problems: []string{err.Error()}}
	}
	c, err := (&target{base: n.Nodes[0].RPC}).count(ctx)
	if err != nil {
		return kinds.Audit{Problems: []string{err.Error()}}
	}
	return kinds.Audit{Lines: []string{fmt.Sprintf("tally0: %d payments to %v", c, ns.Accounts)}, OK: "ok: the ledger answers"}
}

func (kind) Workload(context.Context, *kinds.System, *scenario.Scenario, sut.Target) (workload.Workload, error) {
	return workload.NewRaw(fmt.Sprint(time.Now().UnixNano()), 0), nil
}

type target struct{ url, base string }

func (t *target) Probe(ctx context.Context) (sut.Info, error) {
	if _, err := t.count(ctx); err != nil {
		return sut.Info{}, err
	}
	return sut.Info{ChainID: "tally"}, nil
}

// count asks the ledger how many payments it recorded.
func (t *target) count(ctx context.Context) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.base+"/count", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var n int
	_, err = fmt.Fscan(res.Body, &n)
	return n, err
}
func (t *target) Submitter(int) sut.Submitter { return submitter{t.url} }
func (t *target) Confirmer() sut.Confirmer    { return nil }
func (t *target) Close() error                { return nil }

type submitter struct{ url string }

func (s submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(tx.Bytes))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return sut.Receipt{Status: sut.Unacked, Reason: "transport"}
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return sut.Receipt{Status: sut.Rejected, Reason: fmt.Sprintf("http_%d", res.StatusCode)}
	}
	return sut.Receipt{Status: sut.Committed}
}

// ledger is the system: it records each distinct transaction to an open
// account once.
type ledger struct {
	mu       sync.Mutex
	seen     map[[32]byte]bool
	accounts []string
}

func newLedger(accounts ...string) *ledger {
	return &ledger{seen: map[[32]byte]bool{}, accounts: accounts}
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	account, isPay := strings.CutPrefix(r.URL.Path, "/pay/")
	switch {
	case isPay && !slices.Contains(l.accounts, account):
		http.NotFound(w, r)
	case isPay:
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.seen[sha256.Sum256(b)] = true
		l.mu.Unlock()
	case r.URL.Path == "/count":
		l.mu.Lock()
		fmt.Fprint(w, len(l.seen))
		l.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// tpslab runs the command line in-process over reg.
func tpslab(t *testing.T, reg *kinds.Registry, args ...string) error {
	t.Helper()
	root := cli.Root(reg)
	root.SetArgs(args)
	var out bytes.Buffer
	root.SetOut(&out)
	return root.ExecuteContext(context.Background())
}

// TestMain serves a tally ledger when `net up --kind tally` starts this
// binary as one: ARGS tally-ledger ADDR ACCOUNT HOME (the home names the
// process as the network's, as testnet checks a node's).
func TestMain(m *testing.M) {
	if i := slices.Index(os.Args, "tally-ledger"); i > 0 && len(os.Args) == i+4 {
		srv := &http.Server{Addr: os.Args[i+1], Handler: newLedger(os.Args[i+2])}
		go func() {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
			<-sig
			srv.Close()
		}()
		if err := srv.ListenAndServe(); err != http.ErrServerClosed {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestThrowAwayKind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs loads of a few seconds")
	}
	l := newLedger("main")
	srv := httptest.NewServer(l) // 127.0.0.1
	defer srv.Close()
	reg := all.Registry()
	reg.Add(kind{})

	dir := t.TempDir()
	file := filepath.Join(dir, "tally.yaml")
	yaml := fmt.Sprintf("version: 1\ntarget:\n  kind: tally\n  endpoints: [%s]\nworkload:\n  kind: raw\nload:\n  rate: 200\n  duration: 3s\n  warmup: 1s\n  drain: 2s\n", srv.URL)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	run, _, err := cli.Root(reg).Find([]string{"run"})
	if err != nil || !strings.Contains(run.Flags().Lookup("target").Usage, "tally") {
		t.Errorf("run --help does not list the kind: %v", err)
	}
	if err := tpslab(t, reg, "validate", file); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if err := tpslab(t, reg, "validate", file, "--set", "target.endpoints=[]"); err == nil || !strings.Contains(err.Error(), "target kind tally") {
		t.Fatalf("validate without endpoints: %v, expected the kind's own check", err)
	}

	out := filepath.Join(dir, "run")
	if err := tpslab(t, reg, "run", file, "--out", out); err != nil {
		t.Fatalf("run: %v", err)
	}
	var res struct {
		Network struct{ Kind string }
		Summary measure.Counts
	}
	measuretest.Result(t, out, &res)
	if res.Network.Kind != "tally" {
		t.Errorf("result network.kind %q, want tally", res.Network.Kind)
	}
	if got := l.count(); res.Summary.Committed != int64(got) || got < 500 {
		t.Errorf("run committed %d, the tally recorded %d (offered %d): expected equal, about 600", res.Summary.Committed, got, res.Summary.Offered)
	}

	before := l.count()
	fm := filepath.Join(dir, "findmax")
	if err := tpslab(t, reg, "find-max", file, "--out", fm, "--start", "100", "--max-steps", "2", "--step", "3s", "--step-warmup", "1s", "--confirm-run", "3s"); err != nil {
		t.Fatalf("find-max: %v", err)
	}
	var found struct {
		Outcome struct {
			Sustainable float64 `json:"sustainable_rate"`
			Steps       []struct{ Confirm bool }
		}
	}
	if b, err := os.ReadFile(filepath.Join(fm, "find-max.json")); err != nil || json.Unmarshal(b, &found) != nil {
		t.Fatalf("find-max.json: %v", err)
	}
	if steps := found.Outcome.Steps; found.Outcome.Sustainable > 0 && (len(steps) == 0 || !steps[len(steps)-1].Confirm) {
		t.Errorf("find-max named %g tx/s without a confirmation run: %+v", found.Outcome.Sustainable, steps)
	}
	if l.count() <= before {
		t.Errorf("find-max sent the tally nothing")
	}
}

// The kind's own setting and net.json section, through every door: the
// scenario file, its flag on run and net up, --set, unknown fields refused
// by name, and the network's section read back by the kind.
func TestThrowAwayKindSettingsAndNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a tally ledger process and runs a load of a few seconds")
	}
	reg := all.Registry()
	reg.Add(kind{})
	dir := t.TempDir()
	home := filepath.Join(dir, "net")

	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	bad := write("bad.yaml", "version: 1\ntarget:\n  kind: tally\n  endpoints: [http://127.0.0.1:1]\ntally:\n  acount: shop\n")
	if err := tpslab(t, reg, "validate", bad); err == nil || !strings.Contains(err.Error(), "tally.acount: unknown field, expected one of account") {
		t.Errorf("a misspelt field of the kind's section: %v, expected it named with the section's fields", err)
	}
	if err := tpslab(t, reg, "validate", bad, "--set", "tally.nope=1"); err == nil || !strings.Contains(err.Error(), "tally.acount") {
		t.Errorf("validate: %v", err)
	}
	if err := tpslab(t, reg, "run", "--target", "tally", "--endpoint", "http://127.0.0.1:1", "--tally-account", "a/b"); err == nil || !strings.Contains(err.Error(), `tally.account: "a/b"`) {
		t.Errorf("--tally-account a/b: %v, expected the kind's own check", err)
	}

	if err := tpslab(t, reg, "net", "up", "--kind", "tally", "--home", home, "--tally-account", "shop"); err != nil {
		t.Fatalf("net up: %v", err)
	}
	defer tpslab(t, reg, "net", "down", "--home", home)
	b, err := os.ReadFile(filepath.Join(home, testnet.NetFile))
	if err != nil {
		t.Fatal(err)
	}
	var nj struct {
		Kind  string
		Tally netSection
		Nodes []testnet.Node
	}
	if err := json.Unmarshal(b, &nj); err != nil || nj.Kind != "tally" || !slices.Equal(nj.Tally.Accounts, []string{"shop"}) || len(nj.Nodes) != 1 {
		t.Fatalf("net.json: %s (%v), expected kind tally with its section {accounts: [shop]}", b, err)
	}
	if err := tpslab(t, reg, "net", "check", "--home", home); err != nil {
		t.Errorf("net check: %v", err)
	}

	// The account the network opened, from the file; another, by flag, is
	// refused by the kind reading its net.json section.
	file := write("shop.yaml", "version: 1\ntarget:\n  kind: tally\ntally:\n  account: shop\nworkload:\n  kind: raw\nload:\n  rate: 200\n  duration: 3s\n  warmup: 1s\n  drain: 2s\n")
	if err := tpslab(t, reg, "run", file, "--net-home", home, "--tally-account", "main", "--out", filepath.Join(dir, "main")); err == nil || !strings.Contains(err.Error(), `tally.account: "main", expected one of the accounts`) {
		t.Errorf("run to an account the network did not open: %v", err)
	}
	out := filepath.Join(dir, "shop")
	if err := tpslab(t, reg, "run", file, "--net-home", home, "--out", out); err != nil {
		t.Fatalf("run: %v", err)
	}
	var res struct {
		Scenario struct{ Tally settings }
		Summary  measure.Counts
	}
	measuretest.Result(t, out, &res)
	got, err := (&target{base: nj.Nodes[0].RPC}).count(context.Background())
	if err != nil || res.Summary.Committed != int64(got) || got < 500 {
		t.Errorf("run committed %d, the tally ledger process recorded %d (%v): expected equal, about 600", res.Summary.Committed, got, err)
	}
	if res.Scenario.Tally.Account != "shop" {
		t.Errorf("result.json's scenario: tally section %+v, expected the account it paid", res.Scenario.Tally)
	}
	if err := tpslab(t, reg, "net", "down", "--home", home); err != nil {
		t.Fatalf("net down: %v", err)
	}
	if nd := nj.Nodes[0]; nd.Alive() {
		t.Errorf("net down left the tally ledger (pid %d) running", nd.PID)
	}
}
