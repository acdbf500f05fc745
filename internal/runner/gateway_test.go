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
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
)

// gateway forwards every request to a node; every k-th broadcast it
// forwards, drops the node's answer and answers itself: 502, 504, or an
// HTML page with status 200, in turn (nginx, a load balancer, an RPC
// provider under load).
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
	switch (i / g.k) % 3 {
	case 0:
		http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
	case 1:
		http.Error(w, "<html>504 Gateway Time-out</html>", http.StatusGatewayTimeout)
	default:
		w.Write([]byte("<html>upstream busy, try later</html>"))
	}
}

// A gateway that forwards payments and then answers with an error must not
// erase them: they commit, and the count equals the blocks' (issue 23).
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
}
