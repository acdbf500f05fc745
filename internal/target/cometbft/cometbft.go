// Package cometbft is the target for any CometBFT chain, reached through its
// RPC: broadcast_tx_sync/async over keep-alive HTTP, and blocks through a
// WebSocket NewBlock subscription with polling as the fallback.
package cometbft

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	"github.com/cometbft/cometbft/types"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/target"
)

// Options configure the target.
type Options struct {
	Endpoints   []string
	Async       bool // broadcast_tx_async instead of broadcast_tx_sync
	Poll        bool // read blocks by polling only
	Connections int
	Timeout     time.Duration // per request
}

// Target talks to one or more CometBFT RPC endpoints.
type Target struct {
	o       Options
	http    *http.Client
	rpc     []*rpchttp.HTTP
	method  string
	OnEvent func(msg string) // notes such as a fallback to polling
}

// New prepares clients; it does not contact the endpoints.
func New(o Options) (*Target, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        o.Connections + 16,
		MaxIdleConnsPerHost: o.Connections + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	t := &Target{o: o, http: &http.Client{Transport: tr, Timeout: o.Timeout}, method: "broadcast_tx_sync"}
	if o.Async {
		t.method = "broadcast_tx_async"
	}
	for _, e := range o.Endpoints {
		c, err := rpchttp.NewWithClient(e, "/websocket", &http.Client{Timeout: 30 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", e, err)
		}
		t.rpc = append(t.rpc, c)
	}
	return t, nil
}

// Close releases idle connections.
func (t *Target) Close() { t.http.CloseIdleConnections() }

func (t *Target) note(format string, a ...any) {
	if t.OnEvent != nil {
		t.OnEvent(fmt.Sprintf(format, a...))
	}
}

type conn struct {
	t    *Target
	url  string
	body []byte
	resp []byte
	id   uint64
}

// Conn returns connection i, bound to endpoint i mod the endpoint count.
func (t *Target) Conn(i int) target.Conn {
	return &conn{t: t, url: t.o.Endpoints[i%len(t.o.Endpoints)], body: make([]byte, 0, 1024), resp: make([]byte, 0, 1024)}
}

// rpcResponse is a JSON-RPC answer to broadcast_tx_*.
type rpcResponse struct {
	Result *struct {
		Code      uint32 `json:"code"`
		Log       string `json:"log"`
		Codespace string `json:"codespace"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    string `json:"data"`
	} `json:"error"`
}

// Submit posts one transaction. The JSON-RPC body is built into a reused
// buffer: this is the load generator's hot path.
func (c *conn) Submit(ctx context.Context, tx []byte) target.Ack {
	c.id++
	b := append(c.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, c.id, 10)
	b = append(b, `,"method":"`...)
	b = append(b, c.t.method...)
	b = append(b, `","params":{"tx":"`...)
	b = base64.StdEncoding.AppendEncode(b, tx)
	b = append(b, `"}}`...)
	c.body = b
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return target.Ack{Reason: "transport_error", Log: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.t.http.Do(req)
	if err != nil {
		return transportAck(err)
	}
	buf := bytes.NewBuffer(c.resp[:0])
	_, err = buf.ReadFrom(res.Body)
	res.Body.Close()
	c.resp = buf.Bytes()
	if err != nil {
		return transportAck(err)
	}
	return classify(res.StatusCode, c.resp)
}

func transportAck(err error) target.Ack {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return target.Ack{Reason: "timeout", Log: err.Error()}
	}
	if errors.Is(err, context.Canceled) {
		return target.Ack{Reason: "canceled", Log: err.Error()}
	}
	return target.Ack{Reason: "transport_error", Log: err.Error()}
}

// classify turns an RPC answer into an Ack; rejections are named by the
// ledger's result codes (docs/ledger.md) or by CometBFT's mempool errors.
func classify(status int, body []byte) target.Ack {
	var r rpcResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return target.Ack{Reason: "http_" + strconv.Itoa(status), Log: string(body)}
	}
	if r.Error != nil {
		d := r.Error.Data
		switch {
		case strings.Contains(d, "mempool is full"):
			return target.Ack{Reason: "mempool_full", Log: d}
		case strings.Contains(d, "already exists in cache"):
			return target.Ack{Reason: "duplicate", Log: d}
		case strings.Contains(d, "Tx too large"):
			return target.Ack{Reason: "tx_too_large", Log: d}
		}
		return target.Ack{Reason: "rpc_error", Log: r.Error.Message + ": " + d}
	}
	if r.Result == nil {
		return target.Ack{Reason: "rpc_error", Log: string(body)}
	}
	if r.Result.Code != 0 {
		return target.Ack{Reason: CodeReason(r.Result.Codespace, r.Result.Code), Log: r.Result.Log}
	}
	return target.Ack{OK: true}
}

// CodeReason names a non-zero result code: the ledger's names for its
// codespace, "<codespace>_<code>" or "code_<code>" otherwise.
func CodeReason(space string, code uint32) string {
	switch {
	case space == chain.Codespace:
		return chain.CodeName(code)
	case space != "":
		return space + "_" + strconv.FormatUint(uint64(code), 10)
	}
	return "code_" + strconv.FormatUint(uint64(code), 10)
}

// Height is the latest height of the first endpoint that answers.
func (t *Target) Height(ctx context.Context) (int64, error) {
	var last error
	for _, c := range t.rpc {
		st, err := c.Status(ctx)
		if err == nil {
			return st.SyncInfo.LatestBlockHeight, nil
		}
		last = err
	}
	return 0, last
}

// MempoolTxs is the largest mempool among the endpoints.
func (t *Target) MempoolTxs(ctx context.Context) (int, error) {
	max, ok := 0, false
	var last error
	for _, c := range t.rpc {
		r, err := c.NumUnconfirmedTxs(ctx)
		if err != nil {
			last = err
			continue
		}
		ok = true
		if r.Total > max {
			max = r.Total
		}
	}
	if !ok {
		return 0, last
	}
	return max, nil
}

// Query runs an ABCI query on the first endpoint that answers.
func (t *Target) Query(ctx context.Context, path string, data []byte) ([]byte, error) {
	var last error
	for _, c := range t.rpc {
		r, err := c.ABCIQuery(ctx, path, data)
		if err != nil {
			last = err
			continue
		}
		if r.Response.Code != 0 {
			return nil, fmt.Errorf("query %s: code %d: %s", path, r.Response.Code, r.Response.Log)
		}
		return r.Response.Value, nil
	}
	return nil, last
}

// Account reads a tpslab ledger account's next admissible sequence.
func (t *Target) Account(ctx context.Context, addr chain.Address) (uint64, error) {
	v, err := t.Query(ctx, "/account", addr[:])
	if err != nil {
		return 0, err
	}
	var a chain.AccountInfo
	if err := json.Unmarshal(v, &a); err != nil {
		return 0, err
	}
	return a.NextSequence, nil
}

// Ledger reads the chain id and, for a tpslab ledger, its genesis.
func (t *Target) Ledger(ctx context.Context) (chainID string, g chain.Genesis, err error) {
	st, err := t.rpc[0].Status(ctx)
	if err != nil {
		return "", g, err
	}
	v, err := t.Query(ctx, "/genesis", nil)
	if err != nil {
		return st.NodeInfo.Network, g, fmt.Errorf("not a tpslab ledger (its /genesis query failed: %v)", err)
	}
	g, err = chain.ParseGenesis(v)
	return st.NodeInfo.Network, g, err
}

func toBlock(b *types.Block, results []*abciResult, seen time.Time) target.Block {
	out := target.Block{Height: b.Height, Time: b.Time, Seen: seen,
		TxIDs: make([][32]byte, len(b.Txs)), Codes: make([]uint32, len(b.Txs)), Spaces: make([]string, len(b.Txs))}
	for i, tx := range b.Txs {
		out.TxIDs[i] = sha256.Sum256(tx)
		out.Bytes += len(tx)
		if i < len(results) {
			out.Codes[i], out.Spaces[i] = results[i].code, results[i].space
		}
	}
	return out
}

type abciResult struct {
	code  uint32
	space string
}

// fetch reads block h and its results by RPC.
func (t *Target) fetch(ctx context.Context, c *rpchttp.HTTP, h int64) (target.Block, error) {
	b, err := c.Block(ctx, &h)
	if err != nil {
		return target.Block{}, err
	}
	seen := time.Now()
	r, err := c.BlockResults(ctx, &h)
	if err != nil {
		return target.Block{}, err
	}
	res := make([]*abciResult, len(r.TxsResults))
	for i, x := range r.TxsResults {
		res[i] = &abciResult{code: x.Code, space: x.Codespace}
	}
	return toBlock(b.Block, res, seen), nil
}

// Blocks delivers blocks from height from on. It follows NewBlock events over
// a WebSocket and fills any gap by RPC; if the subscription cannot be made or
// breaks, it polls. It gives up when no endpoint answers for 15 s.
func (t *Target) Blocks(ctx context.Context, from int64, out chan<- target.Block) error {
	next := from
	deliver := func(b target.Block) bool {
		select {
		case out <- b:
			next = b.Height + 1
			return true
		case <-ctx.Done():
			return false
		}
	}
	catchUp := func(c *rpchttp.HTTP, upto int64) error {
		for next <= upto {
			b, err := t.fetch(ctx, c, next)
			if err != nil {
				return err
			}
			if !deliver(b) {
				return ctx.Err()
			}
		}
		return nil
	}
	if !t.o.Poll {
		err := t.follow(ctx, &next, deliver, catchUp)
		if ctx.Err() != nil {
			return nil
		}
		t.note("block subscription ended (%v); polling blocks instead", err)
	}
	var failingSince time.Time
	for i := 0; ctx.Err() == nil; i++ {
		c := t.rpc[i%len(t.rpc)]
		st, err := c.Status(ctx)
		if err == nil {
			err = catchUp(c, st.SyncInfo.LatestBlockHeight)
		}
		if err != nil && ctx.Err() == nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > 15*time.Second {
				return fmt.Errorf("no endpoint answered for 15s: %w", err)
			}
		} else {
			failingSince = time.Time{}
			i-- // stay on an endpoint that works
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// follow consumes NewBlock events until the subscription breaks.
func (t *Target) follow(ctx context.Context, next *int64, deliver func(target.Block) bool, catchUp func(*rpchttp.HTTP, int64) error) error {
	c, err := rpchttp.New(t.o.Endpoints[0], "/websocket")
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Stop() //nolint:errcheck
	events, err := c.Subscribe(ctx, "tpslab", types.QueryForEvent(types.EventNewBlock).String(), 1000)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.Quit():
			return errors.New("websocket closed")
		case ev, ok := <-events:
			if !ok {
				return errors.New("subscription closed")
			}
			seen := time.Now()
			nb, ok := ev.Data.(types.EventDataNewBlock)
			if !ok || nb.Block == nil {
				continue
			}
			h := nb.Block.Height
			if h < *next {
				continue
			}
			if err := catchUp(c, h-1); err != nil {
				return err
			}
			res := make([]*abciResult, len(nb.ResultFinalizeBlock.TxResults))
			for i, x := range nb.ResultFinalizeBlock.TxResults {
				res[i] = &abciResult{code: x.Code, space: x.Codespace}
			}
			if !deliver(toBlock(nb.Block, res, seen)) {
				return nil
			}
		}
	}
}
