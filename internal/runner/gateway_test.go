package runner_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testnet"
)

// gateway forwards every request to a node; every k-th broadcast it
// forwards, drops the node's answer and answers itself: 502, 504, 500, or
// an HTML page with status 200, in turn (nginx, a load balancer, an RPC
// provider under load, an application server that failed after
// forwarding).
type gateway struct {
	rp      *httputil.ReverseProxy
	k       int64
	n       atomic.Int64
	mangled atomic.Int64
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte("broadcast_tx")) {
		g.rp.ServeHTTP(w, r)
		return
	}
	i := g.n.Add(1)
	if i%g.k != 0 {
		g.rp.ServeHTTP(w, r)
		return
	}
	g.rp.ServeHTTP(httptest.NewRecorder(), r) // forwarded: the node holds it
	g.mangled.Add(1)
	switch (i / g.k) % 4 {
	case 0:
		http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
	case 1:
		http.Error(w, "<html>504 Gateway Time-out</html>", http.StatusGatewayTimeout)
	case 2:
		http.Error(w, "<html>500 Internal Server Error</html>", http.StatusInternalServerError)
	default:
		w.Write([]byte("<html>upstream busy, try later</html>"))
	}
}

// A gateway that forwards payments and then answers with an error (any
// 5xx, or an unreadable 200) must not erase them: they commit, and the
// count equals the blocks' (issues 23 and 34). Deliberately invalid
// payments whose answers the gateway lost are not "taken": no block holds
// them, so they are unknown, and no FINDING leads the verdict (issue 34).
func TestGatewayErrorsDoNotEraseCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-validator network")
	}
	g := chain.Genesis{Seed: "gateway", Accounts: 1000, Balance: 1_000_000_000}
	n := startNet(t, g)
	u, _ := url.Parse(n.Nodes[0].RPC)
	gw := &gateway{rp: httputil.NewSingleHostReverseProxy(u), k: 5}
	srv := httptest.NewServer(gw) // 127.0.0.1
	defer srv.Close()
	sc := loadScenario(filepath.Join(t.TempDir(), "gw"), 300, 12*time.Second, 200)
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = []string{srv.URL}
	sc.Load.SendInterval = "0" // a request per payment: each mangled answer is one payment's
	sc.Workload.Invalid = scenario.Invalid{Share: 0.3, Sorts: []string{"bad_signature"}}
	sc.Thresholds = []string{"invalid_taken==0"}
	res, err := run(t, context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	ok, _ := blockCount(t, n.Nodes[0].RPC, res.Chain.FirstHeight, res.Chain.LastHeight, senderSet(g, 200))
	t.Logf("mangled %d answers; committed %d, blocks hold %d; accepted %d, unacked %v, rejected %v, expired %d",
		gw.mangled.Load(), s.Committed, ok, s.Accepted, s.Unacked, s.Rejected, s.Expired)
	if gw.mangled.Load() < 100 {
		t.Fatalf("the gateway mangled only %d answers", gw.mangled.Load())
	}
	if ok != s.Committed {
		t.Errorf("committed %d, blocks hold %d of ours", s.Committed, ok)
	}
	if s.RejectedTotal > 0 {
		t.Errorf("payments a gateway forwarded were counted as refused: %v", s.Rejected)
	}
	if s.Committed < s.Sent*95/100 {
		t.Errorf("committed %d of %d sent", s.Committed, s.Sent)
	}
	if s.Unacked["http_500"] == 0 || s.Unacked["http_502"] == 0 {
		t.Errorf("unacked %v: the gateway's 500s and 502s are not tracked", s.Unacked)
	}
	t.Logf("invalid sent %v, refused %v, unanswered %v, unknown %v, committed %v; verdict %s", s.InvalidSent, s.InvalidRefused, s.InvalidUnanswered, s.InvalidUnknown, s.InvalidCommitted, res.Verdict())
	if measure.Sum(s.InvalidUnknown) == 0 || len(s.InvalidCommitted) > 0 || len(s.InvalidTaken()) > 0 || strings.Contains(res.Verdict(), "FINDING") {
		t.Errorf("invalid payments whose answers were lost: unknown %v, committed %v, taken %v; verdict %q", s.InvalidUnknown, s.InvalidCommitted, s.InvalidTaken(), res.Verdict())
	}
	if measure.Sum(s.InvalidUnanswered) != measure.Sum(s.InvalidUnknown) {
		t.Errorf("%d invalid answers lost, %d unknown: a bad signature in a block?", measure.Sum(s.InvalidUnanswered), measure.Sum(s.InvalidUnknown))
	}
	if len(res.Thresholds) != 1 || !res.Thresholds[0].OK {
		t.Errorf("thresholds %+v: invalid_taken==0 must hold", res.Thresholds)
	}
	// A 30% invalid share behind a gateway answering 5xx: every valid
	// payment committed is a system that kept up (issue 51, item 1).
	if o := res.Outcome(); o != report.OutcomeKeptUp {
		t.Errorf("outcome %s, want kept_up: %s", o, res.Verdict())
	}
}

// An endpoint that accepts and never answers must not keep a run going:
// nothing new is sent after the load, and the run ends within duration +
// drain + one request timeout (issue 23).
func TestHungEndpointEndsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	sk := sink.NewSink("tpslab", testnet.DefaultGenesis())
	sk.StallAfter, sk.StallFor = 400, 20*time.Second // hung from about t = 2 s, past the run
	srv := httptest.NewServer(sk)
	defer srv.Close()
	sc := scenario.Default()
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = []string{srv.URL}
	sc.Workload.Kind = "raw"
	sc.Load.Rate = 200
	sc.Load.Duration = scenario.Duration(5 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Load.Drain = scenario.Duration(3 * time.Second)
	sc.Out = filepath.Join(t.TempDir(), "run")
	start := time.Now()
	res, _ := run(t, context.Background(), sc)
	took := time.Since(start)
	limit := 5*time.Second + 3*time.Second + 10*time.Second + 5*time.Second // + the request timeout, + setup
	if took > limit {
		t.Errorf("the run took %s, expected at most %s (duration + drain + one request timeout + setup)", took.Round(time.Second), limit)
	}
	if res == nil {
		t.Fatal("no result")
	}
	s := res.Summary
	if s.Offered != s.Sent+s.Unsent {
		t.Errorf("offered %d, sent %d + unsent %d", s.Offered, s.Sent, s.Unsent)
	}
	if got := sk.Received.Load(); got > s.Sent {
		t.Errorf("the endpoint received %d broadcasts, the run says %d sent", got, s.Sent)
	}
}
