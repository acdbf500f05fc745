// Package tally is a throw-away kind that lives in this test alone: it
// proves a kind is one folder. Nothing outside this folder names it; the
// test adds it to the registry and drives it through the real command line
// (validate, run, find-max).
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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/measure/measuretest"

	"github.com/tpslab/tpslab/internal/cli"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/kinds/all"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/workload"
)

// kind is a ledger that settles a payment in its answer: POST /pay with
// the transaction as the body, 200 when recorded.
type kind struct{}

func (kind) Info() kinds.Info {
	return kinds.Info{Name: "tally", About: "a test's throw-away synchronous ledger"}
}

func (kind) Validate(sc *scenario.Scenario) error {
	if len(sc.Target.Endpoints) == 0 {
		return fmt.Errorf("target.endpoints: empty, expected the tally's URL for target kind tally")
	}
	return nil
}

func (kind) Target(sys *kinds.System, _ *scenario.Scenario) (sut.Target, error) {
	return &target{url: sys.Endpoints[0]}, nil
}

func (kind) Workload(context.Context, *kinds.System, *scenario.Scenario, sut.Target) (workload.Workload, error) {
	return workload.NewRaw(fmt.Sprint(time.Now().UnixNano()), 0), nil
}

type target struct{ url string }

func (t *target) Probe(ctx context.Context) (sut.Info, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.url+"/count", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return sut.Info{}, err
	}
	res.Body.Close()
	return sut.Info{ChainID: "tally"}, nil
}
func (t *target) Submitter(int) sut.Submitter { return submitter{t.url} }
func (t *target) Confirmer() sut.Confirmer    { return nil }
func (t *target) Close() error                { return nil }

type submitter struct{ url string }

func (s submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/pay", bytes.NewReader(tx.Bytes))
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

// ledger is the system: it records each distinct transaction once.
type ledger struct {
	mu   sync.Mutex
	seen map[[32]byte]bool
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/pay":
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.seen[sha256.Sum256(b)] = true
		l.mu.Unlock()
	case "/count":
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

func TestThrowAwayKind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs loads of a few seconds")
	}
	l := &ledger{seen: map[[32]byte]bool{}}
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
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	measuretest.Identities(t, res.Summary)
	if res.Network.Kind != "tally" {
		t.Errorf("result network.kind %q, want tally", res.Network.Kind)
	}
	if got := l.count(); res.Summary.Committed != int64(got) || got < 500 {
		t.Errorf("run committed %d, the tally recorded %d (offered %d): expected equal, about 600", res.Summary.Committed, got, res.Summary.Offered)
	}

	before := l.count()
	fm := filepath.Join(dir, "findmax")
	if err := tpslab(t, reg, "find-max", file, "--out", fm, "--start", "100", "--max-steps", "2", "--step", "3s", "--step-warmup", "1s"); err != nil {
		t.Fatalf("find-max: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fm, "find-max.json")); err != nil {
		t.Errorf("find-max wrote no find-max.json: %v", err)
	}
	if l.count() <= before {
		t.Errorf("find-max sent the tally nothing")
	}
}
