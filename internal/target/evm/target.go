package evm

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/tpslab/tpslab/internal/target"
)

// Options configure the target.
type Options struct {
	Endpoints   []string // JSON-RPC HTTP URLs
	WS          []string // WebSocket URLs for new heads; empty: poll
	Depth       int      // confirmation depth k: a block is final k blocks under the head
	Connections int
	Timeout     time.Duration
}

// Target is an EVM chain.
type Target struct {
	o       Options
	http    *http.Client
	clients []*Client
	pool    *target.Pool
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
	t.pool = target.NewPool(o.Endpoints, func(ctx context.Context, i int) error {
		_, err := t.clients[i].BlockNumber(ctx)
		return err
	})
	return t, nil
}

// Client is the client of endpoint 0, for setup queries.
func (t *Target) Client() *Client { return t.clients[0] }

// Pool is the endpoint pool.
func (t *Target) Pool() *target.Pool { return t.pool }

// OnEvent reports endpoint failures.
func (t *Target) OnEvent(f func(target.Event)) { t.pool.OnEvent(f) }

// EndpointStats reports each endpoint's health and traffic.
func (t *Target) EndpointStats() []target.EndpointStat { return t.pool.EndpointStats() }

// ProbeEndpoint asks endpoint i alone whether it answers.
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	_, err := t.clients[i].BlockNumber(ctx)
	return err
}

// Close releases idle connections.
func (t *Target) Close() error {
	t.http.CloseIdleConnections()
	return nil
}

// Probe reads the chain id, head and client version of the first endpoint
// that answers.
func (t *Target) Probe(ctx context.Context) (target.Info, error) {
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
		return target.Info{ChainID: id.String(), Height: h, Version: version}, nil
	}
	return target.Info{}, last
}

// MempoolTxs is the largest txpool (pending + queued) among the endpoints.
func (t *Target) MempoolTxs(ctx context.Context) (int, error) {
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

type submitter struct {
	t    *Target
	pref int
	body []byte
	resp bytes.Buffer
	rd   bytes.Reader
	id   uint64
}

// Submitter returns submitter i, preferring endpoint i mod the count.
func (t *Target) Submitter(i int) target.Submitter {
	return &submitter{t: t, pref: i % len(t.clients), body: make([]byte, 0, 512)}
}

// Submit posts eth_sendRawTransaction; the body is built into a reused
// buffer.
func (s *submitter) Submit(ctx context.Context, tx target.Tx) target.Receipt {
	s.id++
	b := append(s.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, s.id, 10)
	b = append(b, `,"method":"eth_sendRawTransaction","params":["0x`...)
	b = hex.AppendEncode(b, tx.Bytes)
	b = append(b, `"]}`...)
	s.body = b
	return s.t.pool.Send(ctx, s.pref, s.post)
}

func (s *submitter) post(ctx context.Context, i int) (target.Receipt, error) {
	s.rd.Reset(s.body)
	sctx, cancel := context.WithTimeout(ctx, s.t.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, s.t.clients[i].URL, &s.rd)
	if err != nil {
		return target.Receipt{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.t.http.Do(req)
	if err != nil {
		return target.Receipt{}, err
	}
	s.resp.Reset()
	_, err = s.resp.ReadFrom(res.Body)
	res.Body.Close()
	if err != nil {
		return target.Receipt{}, err
	}
	return classify(res.StatusCode, s.resp.Bytes()), nil
}

// classify turns an eth_sendRawTransaction answer into a receipt. A node
// that already holds the same transaction ("already known") has it: that is
// an acceptance.
func classify(status int, body []byte) target.Receipt {
	var a struct {
		Result *string   `json:"result"`
		Error  *rpcError `json:"error"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return target.Receipt{Status: target.Rejected, Reason: "http_" + strconv.Itoa(status), Detail: clip(string(body), 200)}
	}
	if a.Error != nil {
		r := Reason(a.Error.Message)
		if r == "already_known" {
			return target.Receipt{Status: target.Pending, Detail: a.Error.Message}
		}
		return target.Receipt{Status: target.Rejected, Reason: r, Detail: a.Error.Message}
	}
	if a.Result == nil {
		return target.Receipt{Status: target.Rejected, Reason: "rpc_error", Detail: clip(string(body), 200)}
	}
	return target.Receipt{Status: target.Pending}
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
