package cometbft

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// CometBFT's own RPC client decodes every answer with its reflection-based
// JSON (libs/json, gogoproto jsonpb), including every event of every
// transaction. tpslab needs a handful of fields, so it reads the JSON-RPC
// answers into small structs of its own.

// Client is a JSON-RPC client for one CometBFT RPC endpoint.
type Client struct {
	URL  string
	HTTP *http.Client
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data"`
}

func (e *rpcError) Error() string {
	if e.Data != "" {
		return e.Message + ": " + e.Data
	}
	return e.Message
}

// MaxAnswer bounds one answer's size.
const MaxAnswer = 256 << 20

// Call runs method with params (a JSON object) and decodes the result into out.
func (c *Client) Call(ctx context.Context, method string, params map[string]string, out any) error {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"`)
	b.WriteString(method)
	b.WriteString(`","params":`)
	p, _ := json.Marshal(params)
	if params == nil {
		p = []byte("{}")
	}
	b.Write(p)
	b.WriteString("}")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, &b)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	// Bounded: a node that answers without end must not fill the memory
	// (the largest block CometBFT takes, 100 MiB, in base64 JSON, fits).
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxAnswer+1))
	if err != nil {
		return err
	}
	if len(body) > MaxAnswer {
		return fmt.Errorf("%s: %s answered more than %d MiB: not a node's answer", method, c.URL, MaxAnswer>>20)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: %s answered HTTP %d with %q", method, c.URL, res.StatusCode, clip(body, 120))
	}
	if env.Error != nil {
		return fmt.Errorf("%s: %w", method, env.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Result, out)
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// Int64 is an integer CometBFT writes as a JSON string.
type Int64 int64

func (i *Int64) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if len(b) == 0 {
		*i = 0
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	*i = Int64(v)
	return err
}

// Status is the part of /status tpslab reads.
type Status struct {
	NodeInfo struct {
		Network string `json:"network"`
		Version string `json:"version"`
		Moniker string `json:"moniker"`
	} `json:"node_info"`
	SyncInfo struct {
		LatestBlockHeight Int64     `json:"latest_block_height"`
		LatestBlockTime   time.Time `json:"latest_block_time"`
		CatchingUp        bool      `json:"catching_up"`
	} `json:"sync_info"`
	ValidatorInfo struct {
		Address string `json:"address"` // hex, as commits name it
	} `json:"validator_info"`
}

// Signature is one validator's entry in a block's commit.
type Signature struct {
	Flag    int    `json:"block_id_flag"` // 1 absent, 2 commit, 3 nil
	Address string `json:"validator_address"`
}

// FlagAbsent marks a validator whose signature is not in the commit.
const FlagAbsent = 1

// Signatures reads the commit of block h (/commit): which validators
// signed it.
func (c *Client) Signatures(ctx context.Context, h int64) ([]Signature, error) {
	var r struct {
		SignedHeader struct {
			Commit struct {
				Signatures []Signature `json:"signatures"`
			} `json:"commit"`
		} `json:"signed_header"`
	}
	err := c.Call(ctx, "commit", map[string]string{"height": strconv.FormatInt(h, 10)}, &r)
	return r.SignedHeader.Commit.Signatures, err
}

// Status reads /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.Call(ctx, "status", nil, &s)
	return s, err
}

// Height is the latest committed height.
func (c *Client) Height(ctx context.Context) (int64, error) {
	s, err := c.Status(ctx)
	return int64(s.SyncInfo.LatestBlockHeight), err
}

// Mempool is the part of /num_unconfirmed_txs tpslab reads.
type Mempool struct {
	Total      Int64 `json:"total"`
	TotalBytes Int64 `json:"total_bytes"`
}

// Mempool reads /num_unconfirmed_txs.
func (c *Client) Mempool(ctx context.Context) (Mempool, error) {
	var m Mempool
	err := c.Call(ctx, "num_unconfirmed_txs", nil, &m)
	return m, err
}

// Peers reads the number of peers from /net_info.
func (c *Client) Peers(ctx context.Context) (int, error) {
	var n struct {
		NPeers Int64 `json:"n_peers"`
	}
	err := c.Call(ctx, "net_info", nil, &n)
	return int(n.NPeers), err
}

// ABCIQuery runs an ABCI query; a non-zero code is an error.
func (c *Client) ABCIQuery(ctx context.Context, path string, data []byte) ([]byte, error) {
	return c.ABCIQueryAt(ctx, path, data, 0)
}

// ABCIQueryAt runs an ABCI query against the state at height h (0: the
// latest).
func (c *Client) ABCIQueryAt(ctx context.Context, path string, data []byte, h int64) ([]byte, error) {
	var r struct {
		Response struct {
			Code      uint32 `json:"code"`
			Log       string `json:"log"`
			Codespace string `json:"codespace"`
			Value     []byte `json:"value"`
		} `json:"response"`
	}
	params := map[string]string{"path": path, "data": hex.EncodeToString(data)}
	if h > 0 {
		params["height"] = strconv.FormatInt(h, 10)
	}
	if err := c.Call(ctx, "abci_query", params, &r); err != nil {
		return nil, err
	}
	if r.Response.Code != 0 {
		return nil, fmt.Errorf("query %s: code %d (%s): %s", path, r.Response.Code, r.Response.Codespace, r.Response.Log)
	}
	return r.Response.Value, nil
}

// Header is the part of a block header tpslab reads.
type Header struct {
	Height   Int64     `json:"height"`
	Time     time.Time `json:"time"`
	AppHash  string    `json:"app_hash"`
	DataHash string    `json:"data_hash"` // the Merkle root of the block's transactions
}

// RawBlock is a block as /block and NewBlock events carry it: txs are
// decoded from base64 by encoding/json.
type RawBlock struct {
	Header Header `json:"header"`
	Data   struct {
		Txs [][]byte `json:"txs"`
	} `json:"data"`
}

// ExecResult is one transaction's result in a block.
type ExecResult struct {
	Code      uint32 `json:"code"`
	Codespace string `json:"codespace"`
	Log       string `json:"log"`
	GasUsed   Int64  `json:"gas_used"` // an SDK chain's; 0 elsewhere
}

// Block reads /block at height h.
func (c *Client) Block(ctx context.Context, h int64) (RawBlock, error) {
	var r struct {
		Block RawBlock `json:"block"`
	}
	err := c.Call(ctx, "block", map[string]string{"height": strconv.FormatInt(h, 10)}, &r)
	return r.Block, err
}

// Event is an ABCI event as /block_results writes it.
type Event struct {
	Type       string `json:"type"`
	Attributes []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"attributes"`
}

// BlockEvents reads the events of height h's block outside its
// transactions (begin and end blockers: minting, ...).
func (c *Client) BlockEvents(ctx context.Context, h int64) ([]Event, error) {
	var r struct {
		Events []Event `json:"finalize_block_events"`
	}
	err := c.Call(ctx, "block_results", map[string]string{"height": strconv.FormatInt(h, 10)}, &r)
	return r.Events, err
}

// BlockResults reads the transaction results of height h.
func (c *Client) BlockResults(ctx context.Context, h int64) ([]ExecResult, error) {
	var r struct {
		TxsResults []ExecResult `json:"txs_results"`
	}
	err := c.Call(ctx, "block_results", map[string]string{"height": strconv.FormatInt(h, 10)}, &r)
	return r.TxsResults, err
}
