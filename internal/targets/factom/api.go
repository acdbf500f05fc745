// Package factom drives factomd, the Factom protocol's node, through its
// JSON-RPC API (/v2): entries (commit-entry signed with an entry-credit key,
// then reveal-entry), new chains and factoid transactions, each counted
// committed when a directory block holds it (its entry block's entry, or
// its factoid block's transaction). Entries, chains and keys are the
// Factom project's own client library's (github.com/FactomProject/factom);
// factoid transactions its factoid library's. See docs/factom.md.
package factom

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Client calls one node's API.
type Client struct {
	URL  string // http://host:port/v2
	HTTP *http.Client
}

// NewClient is a client of the API at base (http://host:port, /v2 added).
func NewClient(base string) *Client {
	return &Client{URL: base + "/v2", HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// RPCError is the node's refusal.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

type answer struct {
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// Call posts method with params and decodes the result into out.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	req := map[string]any{"jsonrpc": "2.0", "id": 0, "method": method}
	if params != nil {
		req["params"] = params
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.post(ctx, body, out)
}

// post sends a request body made ahead and decodes the result into out.
func (c *Client) post(ctx context.Context, body []byte, out any) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("%s: HTTP %d, not a JSON-RPC answer: %.200s", c.URL, resp.StatusCode, b)
	}
	if a.Error != nil {
		return a.Error
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(a.Result, out)
}

// Heights are the node's heights: DirectoryBlock is the last saved
// directory block's.
type Heights struct {
	DirectoryBlock int64 `json:"directoryblockheight"`
	Leader         int64 `json:"leaderheight"`
	EntryBlock     int64 `json:"entryblockheight"`
	Entry          int64 `json:"entryheight"`
}

// Heights asks the node its heights.
func (c *Client) Heights(ctx context.Context) (Heights, error) {
	var h Heights
	return h, c.Call(ctx, "heights", nil, &h)
}

// DBlock is a directory block: the key Merkle root of each chain's block
// in it (entry blocks; the admin, entry-credit and factoid blocks' chains
// are 0x0a, 0x0c and 0x0f).
type DBlock struct {
	KeyMR  string `json:"keymr"`
	Header struct {
		Height    int64  `json:"dbheight"`
		Timestamp int64  `json:"timestamp"` // minutes since 1970
		PrevKeyMR string `json:"prevkeymr"`
	} `json:"header"`
	Entries []struct {
		ChainID string `json:"chainid"`
		KeyMR   string `json:"keymr"`
	} `json:"dbentries"`
}

// FactoidChain is the factoid block's chain id.
const FactoidChain = "000000000000000000000000000000000000000000000000000000000000000f"

// IsEntryChain says whether a directory block entry is an entry block
// (not the admin, entry-credit or factoid block).
func IsEntryChain(id string) bool {
	return len(id) == 64 && id[:62] != "00000000000000000000000000000000000000000000000000000000000000"
}

// DBlockByHeight reads the directory block at height h.
func (c *Client) DBlockByHeight(ctx context.Context, h int64) (DBlock, error) {
	var a struct {
		DBlock DBlock `json:"dblock"`
	}
	err := c.Call(ctx, "dblock-by-height", map[string]int64{"height": h}, &a)
	return a.DBlock, err
}

// EntryBlock is a chain's entry block: its entries' hashes.
type EntryBlock struct {
	Header struct {
		ChainID string `json:"chainid"`
		Height  int64  `json:"dbheight"`
	} `json:"header"`
	Entries []struct {
		Hash string `json:"entryhash"`
	} `json:"entrylist"`
}

// EntryBlock reads an entry block by its key Merkle root.
func (c *Client) EntryBlock(ctx context.Context, keymr string) (EntryBlock, error) {
	var b EntryBlock
	return b, c.Call(ctx, "entry-block", map[string]string{"keymr": keymr}, &b)
}

// FBlock is a factoid block: its transactions' ids.
type FBlock struct {
	Txs []struct {
		ID      string `json:"txid"`
		Inputs  []any  `json:"inputs"`
		Outputs []any  `json:"outputs"`
		OutECs  []any  `json:"outecs"`
	} `json:"transactions"`
}

// FactoidBlock reads a factoid block by its key Merkle root.
func (c *Client) FactoidBlock(ctx context.Context, keymr string) (FBlock, error) {
	var a struct {
		FBlock FBlock `json:"fblock"`
	}
	err := c.Call(ctx, "factoid-block", map[string]string{"keymr": keymr}, &a)
	return a.FBlock, err
}

// ECBalance is an entry-credit address's balance (EC...).
func (c *Client) ECBalance(ctx context.Context, addr string) (int64, error) {
	var a struct {
		Balance int64 `json:"balance"`
	}
	err := c.Call(ctx, "entry-credit-balance", map[string]string{"address": addr}, &a)
	return a.Balance, err
}

// FactoidBalance is a factoid address's balance in factoshis (FA...).
func (c *Client) FactoidBalance(ctx context.Context, addr string) (int64, error) {
	var a struct {
		Balance int64 `json:"balance"`
	}
	err := c.Call(ctx, "factoid-balance", map[string]string{"address": addr}, &a)
	return a.Balance, err
}

// ECRate is how many factoshis buy one entry credit.
func (c *Client) ECRate(ctx context.Context) (uint64, error) {
	var a struct {
		Rate uint64 `json:"rate"`
	}
	err := c.Call(ctx, "entry-credit-rate", nil, &a)
	return a.Rate, err
}
