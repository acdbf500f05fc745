package evm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/httpclient"
)

// Options configure the target.
type Options struct {
	Endpoints   []string // JSON-RPC HTTP URLs
	WS          []string // WebSocket URLs for new heads; empty: poll
	Depth       int      // confirmation depth k: a block is final k blocks under the head
	Connections int
	// Mempool, when set, reads the nodes' pools instead of txpool_status:
	// on Cosmos EVM chains txpool_status answers 0 while CometBFT's
	// mempool holds hundreds of transactions.
	Mempool func(ctx context.Context) (int, error)
	// Gossip, when set, times each sampled payment's arrival at a second
	// node from the nodes' logs (a Cosmos EVM network on this machine).
	Gossip  *cometbft.MempoolLogs
	Timeout time.Duration
}

// Target is an EVM chain.
type Target struct {
	o       Options
	http    *http.Client
	clients []*Client
	pool    *sut.Pool
	subMu   sync.Mutex
	subs    []*httpclient.Set // submitters' connections, closed with the target
}

// New prepares the target; it does not contact the chain.
func New(o Options) (*Target, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        o.Connections + 16,
		MaxIdleConnsPerHost: o.Connections + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	t := &Target{o: o, http: &http.Client{Transport: tr}}
	queries := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for _, e := range o.Endpoints {
		t.clients = append(t.clients, &Client{URL: e, HTTP: queries})
	}
	t.pool = sut.NewPool(o.Endpoints, func(ctx context.Context, i int) error {
		_, err := t.clients[i].BlockNumber(ctx)
		return err
	})
	return t, nil
}

// Client is the client of endpoint 0, for setup queries.
func (t *Target) Client() *Client { return t.clients[0] }

// Pool is the endpoint pool.
func (t *Target) Pool() *sut.Pool { return t.pool }

// OnEvent reports endpoint failures.
func (t *Target) OnEvent(f func(sut.Event)) { t.pool.OnEvent(f) }

// EndpointStats reports each endpoint's health and traffic.
func (t *Target) EndpointStats() []sut.EndpointStat { return t.pool.EndpointStats() }

// ProbeEndpoint asks endpoint i alone whether it answers.
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	_, err := t.clients[i].BlockNumber(ctx)
	return err
}

// Close releases idle connections.
func (t *Target) Close() error {
	t.subMu.Lock()
	for _, s := range t.subs {
		s.Close()
	}
	t.subs = nil
	t.subMu.Unlock()
	t.http.CloseIdleConnections()
	return nil
}

// Probe reads the chain id, head and client version of the first endpoint
// that answers.
func (t *Target) Probe(ctx context.Context) (sut.Info, error) {
	var last error
	for _, c := range t.clients {
		id, err := c.ChainID(ctx)
		if err != nil {
			last = err
			continue
		}
		h, err := c.BlockNumber(ctx)
		if err != nil {
			last = err
			continue
		}
		var version string
		_ = c.Call(ctx, &version, "web3_clientVersion")
		return sut.Info{ChainID: id.String(), Height: h, Version: version}, nil
	}
	return sut.Info{}, last
}

// SetMempool makes MempoolTxs read the nodes' pools with f (Options.Mempool).
func (t *Target) SetMempool(f func(ctx context.Context) (int, error)) { t.o.Mempool = f }

// SetGossip times the gossiped stage from the nodes' logs (Options.Gossip).
func (t *Target) SetGossip(m *cometbft.MempoolLogs) { t.o.Gossip = m }

// MempoolTxs is the largest txpool (pending + queued) among the endpoints,
// or what Options.Mempool reads.
func (t *Target) MempoolTxs(ctx context.Context) (int, error) {
	if t.o.Mempool != nil {
		return t.o.Mempool(ctx)
	}
	max, ok := 0, false
	var last error
	for _, c := range t.clients {
		var st struct {
			Pending Quantity `json:"pending"`
			Queued  Quantity `json:"queued"`
		}
		if err := c.Call(ctx, &st, "txpool_status"); err != nil {
			last = err
			continue
		}
		ok = true
		if n := int(st.Pending + st.Queued); n > max {
			max = n
		}
	}
	if !ok {
		return 0, last
	}
	return max, nil
}

// Fees reads what transactions should offer now: eth_gasPrice (legacy), or
// a fee cap of twice the latest base fee plus the tip from
// eth_maxPriorityFeePerGas; each is held under its cap when one is given.
func (t *Target) Fees(ctx context.Context, legacy bool, maxFee, maxTip *big.Int) (Fees, error) {
	c := t.clients[0]
	if legacy {
		p, err := c.Bigq(ctx, "eth_gasPrice")
		if err != nil {
			return Fees{}, fmt.Errorf("eth_gasPrice: %w", err)
		}
		if maxFee != nil && p.Cmp(maxFee) > 0 {
			p = maxFee
		}
		return Fees{Legacy: true, GasPrice: p}, nil
	}
	tip, err := c.Bigq(ctx, "eth_maxPriorityFeePerGas")
	if err != nil {
		return Fees{}, fmt.Errorf("eth_maxPriorityFeePerGas: %w", err)
	}
	if maxTip != nil && tip.Cmp(maxTip) > 0 {
		tip = maxTip
	}
	h, err := c.BlockNumber(ctx)
	if err != nil {
		return Fees{}, err
	}
	head, err := c.Block(ctx, h)
	if err != nil {
		return Fees{}, err
	}
	base := new(big.Int)
	if head.BaseFee != nil {
		base = &head.BaseFee.Int
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)
	if maxFee != nil && feeCap.Cmp(maxFee) > 0 {
		feeCap = maxFee
	}
	if feeCap.Cmp(tip) < 0 {
		tip = new(big.Int).Set(feeCap)
	}
	return Fees{FeeCap: feeCap, TipCap: tip}, nil
}
