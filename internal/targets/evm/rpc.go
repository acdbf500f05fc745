package evm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"

	"github.com/tpslab/tpslab/internal/targets/jsonrpc"
)

// Client is a JSON-RPC client for one Ethereum endpoint. Answers are read
// into small structs: a block's receipts carry every log, and tpslab needs
// a hash and a status from each.
type Client struct {
	URL  string
	HTTP *http.Client
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// Call runs method with positional params and decodes the result into out.
func (c *Client) Call(ctx context.Context, out any, method string, params ...any) error {
	var buf bytes.Buffer
	r, err := c.callRaw(ctx, &buf, method, params...)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(r, out)
}

// callRaw runs method and returns its result, a JSON value read into buf
// (errNull for null). The answer around it is walked by hand: only an
// error is decoded.
func (c *Client) callRaw(ctx context.Context, buf *bytes.Buffer, method string, params ...any) ([]byte, error) {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	a, ok := jsonrpc.ParseAnswer(b)
	if !ok || (a.Result == nil && a.Err == nil) {
		return nil, fmt.Errorf("%s: %s answered HTTP %d with %q", method, c.URL, res.StatusCode, clip(string(b), 120))
	}
	if len(a.Err) > 0 && a.Err[0] == '{' {
		var re rpcError
		if err := json.Unmarshal(a.Err, &re); err != nil {
			return nil, fmt.Errorf("%s: %s answered with an unreadable error %q", method, c.URL, clip(string(a.Err), 120))
		}
		return nil, fmt.Errorf("%s: %w", method, &re)
	}
	r := a.Result
	if len(r) == 0 || string(r) == "null" {
		return nil, errNull
	}
	return r, nil
}

var errNull = fmt.Errorf("no such object (null)")

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Quantity is a hex-encoded integer ("0x1a").
type Quantity uint64

func (q *Quantity) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	*q = Quantity(v)
	return err
}

// Big is a hex-encoded big integer.
type Big struct{ big.Int }

func (q *Big) UnmarshalJSON(b []byte) error {
	s := strings.TrimPrefix(strings.Trim(string(b), `"`), "0x")
	if s == "" {
		s = "0"
	}
	if _, ok := q.SetString(s, 16); !ok {
		return fmt.Errorf("%s is not a hex quantity", b)
	}
	return nil
}

func hexNum(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// BlockNumber reads eth_blockNumber.
func (c *Client) BlockNumber(ctx context.Context) (int64, error) {
	var q Quantity
	err := c.Call(ctx, &q, "eth_blockNumber")
	return int64(q), err
}

// ChainID reads eth_chainId.
func (c *Client) ChainID(ctx context.Context) (*big.Int, error) {
	var q Big
	if err := c.Call(ctx, &q, "eth_chainId"); err != nil {
		return nil, err
	}
	return &q.Int, nil
}

// Header is the part of a block tpslab reads.
type Header struct {
	Number     Quantity `json:"number"`
	Hash       string   `json:"hash"`
	ParentHash string   `json:"parentHash"`
	Timestamp  Quantity `json:"timestamp"`
	Size       Quantity `json:"size"`
	GasUsed    Quantity `json:"gasUsed"`
	GasLimit   Quantity `json:"gasLimit"`
	BaseFee    *Big     `json:"baseFeePerGas"`
}

// Block reads block n's header.
func (c *Client) Block(ctx context.Context, n int64) (Header, error) {
	var h Header
	err := c.Call(ctx, &h, "eth_getBlockByNumber", hexNum(uint64(n)), false)
	return h, err
}

// Receipt is the part of a receipt tpslab reads.
type Receipt struct {
	TxHash    string   `json:"transactionHash"`
	BlockHash string   `json:"blockHash"`
	Status    Quantity `json:"status"`
}

// Receipts reads every receipt of block n with eth_getBlockReceipts.
func (c *Client) Receipts(ctx context.Context, n int64) ([]Receipt, error) {
	var r []Receipt
	err := c.Call(ctx, &r, "eth_getBlockReceipts", hexNum(uint64(n)))
	if err == errNull {
		return nil, nil // an empty block, as some nodes write it
	}
	return r, err
}

// Receipt reads one transaction's receipt (nil when not included yet).
func (c *Client) Receipt(ctx context.Context, hash string) (*Receipt, error) {
	var r Receipt
	err := c.Call(ctx, &r, "eth_getTransactionReceipt", hash)
	if err == errNull {
		return nil, nil
	}
	return &r, err
}

// Nonce reads an address's next nonce, counting its pending transactions.
func (c *Client) Nonce(ctx context.Context, addr string) (uint64, error) {
	var q Quantity
	err := c.Call(ctx, &q, "eth_getTransactionCount", addr, "pending")
	return uint64(q), err
}

// Mined reads how many of an address's transactions are in blocks (its
// nonce without the pending ones).
func (c *Client) Mined(ctx context.Context, addr string) (uint64, error) {
	var q Quantity
	err := c.Call(ctx, &q, "eth_getTransactionCount", addr, "latest")
	return uint64(q), err
}

// Balance reads an address's balance in wei.
func (c *Client) Balance(ctx context.Context, addr string) (*big.Int, error) {
	var q Big
	if err := c.Call(ctx, &q, "eth_getBalance", addr, "latest"); err != nil {
		return nil, err
	}
	return &q.Int, nil
}

// Bigq reads a method that answers one hex quantity (eth_gasPrice, ...).
func (c *Client) Bigq(ctx context.Context, method string) (*big.Int, error) {
	var q Big
	if err := c.Call(ctx, &q, method); err != nil {
		return nil, err
	}
	return &q.Int, nil
}
