// Package cometbft is the target for any CometBFT chain, reached through its
// RPC: broadcast_tx_sync/async over keep-alive HTTP, spread over endpoints
// with failover, and blocks through a WebSocket NewBlock subscription with
// polling as the fallback. It knows no application: result codes are named
// by the Reason function the caller gives it.
package cometbft

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/tpslab/tpslab/internal/targets/httpclient"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// Options configure the target.
type Options struct {
	Endpoints   []string
	Async       bool // broadcast_tx_async instead of broadcast_tx_sync
	Poll        bool // read blocks by polling only
	Connections int
	Timeout     time.Duration // per submission
	// Reason names a non-zero result code; nil gives "<codespace>_<code>".
	Reason func(codespace string, code uint32, log string) string
	// GiveUp is how long the confirmer goes on when no endpoint answers
	// before it returns an error (default 15 s).
	GiveUp time.Duration
	// Seen, when set, times the sampled transactions' arrival in a second
	// node's mempool (sut.TxResult.Gossiped).
	Seen *SeenQuery
	// MempoolLogs, when set, time it from the nodes' logs instead.
	MempoolLogs *MempoolLogs
}

// Target talks to one or more CometBFT RPC endpoints.
type Target struct {
	o       Options
	http    *http.Client
	clients []*Client
	subMu   sync.Mutex
	subs    []*httpclient.Set // submitters' connections, closed with the target
	pool    *sut.Pool
	method  string
	evMu    sync.Mutex
	ev      func(sut.Event)
	batch   atomic.Int32 // requests per JSON-RPC batch
}

// New prepares clients; it does not contact the endpoints.
func New(o Options) (*Target, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.GiveUp == 0 {
		o.GiveUp = 15 * time.Second
	}
	if o.Reason == nil {
		o.Reason = CodeReason
	}
	if o.Connections < 1 {
		o.Connections = 1
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        o.Connections + 16,
		MaxIdleConnsPerHost: o.Connections + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	t := &Target{o: o, http: &http.Client{Transport: tr}, method: "broadcast_tx_sync"}
	if o.Async {
		t.method = "broadcast_tx_async"
	}
	t.batch.Store(defaultBatch)
	queries := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for _, e := range o.Endpoints {
		t.clients = append(t.clients, &Client{URL: e, HTTP: queries})
	}
	t.pool = sut.NewPool(o.Endpoints, func(ctx context.Context, i int) error {
		_, err := t.clients[i].Status(ctx)
		return err
	})
	return t, nil
}

// CodeReason names a result code as "<codespace>_<code>", or "code_<code>".
func CodeReason(space string, code uint32, _ string) string {
	if space != "" {
		return space + "_" + strconv.FormatUint(uint64(code), 10)
	}
	return "code_" + strconv.FormatUint(uint64(code), 10)
}

// OnEvent sets the function told about endpoint failures and fallbacks.
func (t *Target) OnEvent(f func(sut.Event)) {
	t.evMu.Lock()
	t.ev = f
	t.evMu.Unlock()
	t.pool.OnEvent(f)
}

func (t *Target) note(format string, a ...any) {
	t.evMu.Lock()
	f := t.ev
	t.evMu.Unlock()
	if f != nil {
		f(sut.Event{Time: time.Now(), Kind: "note", Detail: fmt.Sprintf(format, a...)})
	}
}

// Close releases idle connections and closes the submitters'.
func (t *Target) Close() error {
	t.http.CloseIdleConnections()
	t.subMu.Lock()
	defer t.subMu.Unlock()
	for _, s := range t.subs {
		s.Close()
	}
	t.subs = nil
	return nil
}

// Pool is the endpoint pool, for its health watch.
func (t *Target) Pool() *sut.Pool { return t.pool }

// Clients are the per-endpoint RPC clients.
func (t *Target) Clients() []*Client { return t.clients }

// EndpointStats reports each endpoint's health and traffic.
func (t *Target) EndpointStats() []sut.EndpointStat { return t.pool.EndpointStats() }

// Probe reads the chain id and height from the first endpoint that answers.
func (t *Target) Probe(ctx context.Context) (sut.Info, error) {
	var last error
	for _, c := range t.clients {
		st, err := c.Status(ctx)
		if err == nil {
			if st.NodeInfo.Version == "sink" {
				t.o.Poll = true // tpslab sink serves no WebSocket: its blocks are polled
			}
			return sut.Info{ChainID: st.NodeInfo.Network, Height: int64(st.SyncInfo.LatestBlockHeight), Version: st.NodeInfo.Version}, nil
		}
		last = err
	}
	return sut.Info{}, last
}

// ProbeEndpoint asks endpoint i alone whether it answers.
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	_, err := t.clients[i].Status(ctx)
	return err
}

// ABCIQuery runs an ABCI query on the first live endpoint that answers.
func (t *Target) ABCIQuery(ctx context.Context, path string, data []byte) ([]byte, error) {
	var last error
	start, _ := t.pool.Pick(0)
	for k := range t.clients {
		c := t.clients[(start+k)%len(t.clients)]
		v, err := c.ABCIQuery(ctx, path, data)
		if err == nil {
			return v, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// MempoolTxs is the largest mempool among the endpoints that answer.
func (t *Target) MempoolTxs(ctx context.Context) (int, error) {
	max, ok := 0, false
	var last error
	for _, c := range t.clients {
		m, err := c.Mempool(ctx)
		if err != nil {
			last = err
			continue
		}
		ok = true
		if int(m.Total) > max {
			max = int(m.Total)
		}
	}
	if !ok {
		return 0, last
	}
	return max, nil
}

// TxID is CometBFT's transaction id: sha256 of the bytes.
func TxID(tx []byte) sut.TxID { return sha256.Sum256(tx) }
