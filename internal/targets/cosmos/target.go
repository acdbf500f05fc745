package cosmos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
)

// Options configure the target.
type Options struct {
	RPC         []string // CometBFT RPC URLs: blocks, queries, and broadcasts when Via is rpc
	API         []string // REST URLs (http://host:1317)
	GRPC        []string // gRPC addresses (host:9090)
	Via         string   // rpc | rest | grpc
	Async       bool     // broadcast_tx_async (rpc only)
	Poll        bool
	Connections int
	Timeout     time.Duration
	// MempoolLogs, when set, time the gossiped stage from the nodes' logs.
	MempoolLogs *cometbft.MempoolLogs
}

// Target is a Cosmos SDK chain. Blocks, queries and the mempool come from
// its CometBFT RPC, so commits are counted exactly as on any CometBFT chain;
// submissions go where Via says.
type Target struct {
	*cometbft.Target
	o     Options
	pool  *sut.Pool // the submission endpoints, when not the RPC
	http  *http.Client
	conns []*grpc.ClientConn
}

// New prepares the target; it does not contact the chain.
func New(o Options) (*Target, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	rpc, err := cometbft.New(cometbft.Options{Endpoints: o.RPC, Async: o.Async, Poll: o.Poll, Connections: o.Connections, Timeout: o.Timeout, Reason: Reason,
		MempoolLogs: o.MempoolLogs})
	if err != nil {
		return nil, err
	}
	t := &Target{Target: rpc, o: o}
	switch o.Via {
	case "", "rpc":
	case "rest":
		if len(o.API) == 0 {
			return nil, errors.New("cosmos.api_endpoints: empty, expected REST URLs for cosmos.via rest")
		}
		t.http = &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: o.Connections + 16, MaxIdleConns: o.Connections + 16, DisableCompression: true,
		}}
		t.pool = sut.NewPool(o.API, t.probe)
	case "grpc":
		if len(o.GRPC) == 0 {
			return nil, errors.New("cosmos.grpc_endpoints: empty, expected host:port addresses for cosmos.via grpc")
		}
		for _, a := range o.GRPC {
			c, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
			if err != nil {
				return nil, fmt.Errorf("cosmos.grpc_endpoints: %s: %w", a, err)
			}
			t.conns = append(t.conns, c)
		}
		t.pool = sut.NewPool(o.GRPC, t.probe)
	default:
		return nil, fmt.Errorf("cosmos.via: %q, expected one of [rpc rest grpc]", o.Via)
	}
	return t, nil
}

// Pool is the pool submissions go through.
func (t *Target) Pool() *sut.Pool {
	if t.pool != nil {
		return t.pool
	}
	return t.Target.Pool()
}

// OnEvent reports endpoint failures of every pool.
func (t *Target) OnEvent(f func(sut.Event)) {
	t.Target.OnEvent(f)
	if t.pool != nil {
		t.pool.OnEvent(f)
	}
}

// EndpointStats reports the submission endpoints.
func (t *Target) EndpointStats() []sut.EndpointStat { return t.Pool().EndpointStats() }

// ProbeEndpoint asks submission endpoint i whether it answers (and, for
// REST and gRPC, the RPC endpoint of the same node too).
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	if t.pool == nil {
		return t.Target.ProbeEndpoint(ctx, i)
	}
	if i < len(t.o.RPC) {
		if err := t.Target.ProbeEndpoint(ctx, i); err != nil {
			return err
		}
	}
	return t.probe(ctx, i)
}

func (t *Target) probe(ctx context.Context, i int) error {
	if t.o.Via == "rest" {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(t.o.API[i], "/")+"/cosmos/base/tendermint/v1beta1/syncing", nil)
		res, err := t.http.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered HTTP %d (is the API server enabled?)", t.o.API[i], res.StatusCode)
		}
		return nil
	}
	var out []byte
	return t.conns[i].Invoke(ctx, "/cosmos.base.tendermint.v1beta1.Service/GetSyncing", &[]byte{}, &out)
}

// Close closes the gRPC connections and idle HTTP connections.
func (t *Target) Close() error {
	for _, c := range t.conns {
		c.Close()
	}
	if t.http != nil {
		t.http.CloseIdleConnections()
	}
	return t.Target.Close()
}

// BatchLanes: JSON-RPC batches go through the CometBFT RPC only.
func (t *Target) BatchLanes() int {
	if t.o.Via == "rest" || t.o.Via == "grpc" {
		return 0
	}
	return t.Target.BatchLanes()
}

// Submitter returns submitter i on the submission path.
func (t *Target) Submitter(i int) sut.Submitter {
	switch t.o.Via {
	case "rest":
		return &restSubmitter{t: t, pref: i % len(t.o.API)}
	case "grpc":
		return &grpcSubmitter{t: t, pref: i % len(t.o.GRPC)}
	}
	return t.Target.Submitter(i)
}

// restSubmitter posts to /cosmos/tx/v1beta1/txs with BROADCAST_MODE_SYNC,
// as the Cosmos Hub's Locust test did.
type restSubmitter struct {
	t    *Target
	pref int
	body []byte
	resp bytes.Buffer
	rd   bytes.Reader
	tx   sut.Tx
}

func (s *restSubmitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	b := append(s.body[:0], `{"tx_bytes":"`...)
	b = sut.AppendWire(b, tx, s.t) // base64, as the embedded CometBFT target encodes
	b = append(b, `","mode":"BROADCAST_MODE_SYNC"}`...)
	s.body = b
	return s.t.pool.Send(ctx, s.pref, s.post)
}

func (s *restSubmitter) post(ctx context.Context, i int) (sut.Receipt, error) {
	s.rd.Reset(s.body)
	sctx, cancel := context.WithTimeout(ctx, s.t.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, strings.TrimRight(s.t.o.API[i], "/")+"/cosmos/tx/v1beta1/txs", &s.rd)
	if err != nil {
		return sut.Receipt{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.t.http.Do(req)
	if err != nil {
		return sut.Receipt{}, err
	}
	s.resp.Reset()
	_, err = s.resp.ReadFrom(res.Body)
	res.Body.Close()
	if err != nil {
		return sut.Receipt{}, err
	}
	var a struct {
		TxResponse *struct {
			Code      uint32 `json:"code"`
			Codespace string `json:"codespace"`
			RawLog    string `json:"raw_log"`
		} `json:"tx_response"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(s.resp.Bytes(), &a); err != nil || a.TxResponse == nil {
		// A gateway's 502/504 or a 2xx without a tx_response may have been
		// forwarded: unacked, never a rejection (sut.Unreadable).
		detail := clip(s.resp.String(), 200)
		if a.Message != "" {
			detail = a.Message
		}
		return sut.Unreadable(res.StatusCode, detail), nil
	}
	return answer(a.TxResponse.Code, a.TxResponse.Codespace, a.TxResponse.RawLog), nil
}

// answer is the receipt of a synchronous broadcast's CheckTx result.
func answer(code uint32, space, log string) sut.Receipt {
	if code == 0 {
		return sut.Receipt{Status: sut.Pending}
	}
	return sut.Receipt{Status: sut.Rejected, Reason: Reason(space, code, log), Detail: log}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// rawCodec passes protobuf bytes through gRPC unchanged: the request and
// answer are built and read with protowire (see proto.go).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return nil, fmt.Errorf("rawCodec: %T", v)
}
func (rawCodec) Unmarshal(data []byte, v any) error {
	if b, ok := v.(*[]byte); ok {
		*b = append((*b)[:0], data...)
		return nil
	}
	return fmt.Errorf("rawCodec: %T", v)
}

var _ encoding.Codec = rawCodec{}

// grpcSubmitter calls cosmos.tx.v1beta1.Service/BroadcastTx with
// BROADCAST_MODE_SYNC.
type grpcSubmitter struct {
	t    *Target
	pref int
	req  []byte
	resp []byte
}

func (s *grpcSubmitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	s.req = appendBytes(s.req[:0], 1, tx.Bytes)
	s.req = appendUint(s.req, 2, broadcastSync)
	return s.t.pool.Send(ctx, s.pref, s.post)
}

func (s *grpcSubmitter) post(ctx context.Context, i int) (sut.Receipt, error) {
	sctx, cancel := context.WithTimeout(ctx, s.t.o.Timeout)
	defer cancel()
	err := s.t.conns[i].Invoke(sctx, "/cosmos.tx.v1beta1.Service/BroadcastTx", &s.req, &s.resp)
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unavailable:
			if strings.Contains(st.Message(), "connection refused") || strings.Contains(st.Message(), "no such host") {
				return sut.Receipt{}, &net.OpError{Op: "dial", Err: err} // never reached the node
			}
			return sut.Receipt{}, fmt.Errorf("%w: %v", sut.ErrBroken, err)
		case codes.DeadlineExceeded:
			return sut.Receipt{}, context.DeadlineExceeded
		case codes.Canceled:
			return sut.Receipt{}, context.Canceled
		}
		return sut.Receipt{Status: sut.Rejected, Reason: "grpc_" + strings.ToLower(st.Code().String()), Detail: st.Message()}, nil
	}
	r, err := decodeBroadcastResponse(s.resp)
	if err != nil {
		return sut.Receipt{Status: sut.Rejected, Reason: "grpc_bad_answer", Detail: err.Error()}, nil
	}
	return answer(r.Code, r.Codespace, r.RawLog), nil
}
