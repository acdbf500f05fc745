package evm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// receipt is an eth_getBlockReceipts element as geth writes it, logs and
// bloom included.
func receipt(block, hash, status string) string {
	return `{"blockHash":"` + block + `","blockNumber":"0x7","contractAddress":null,"cumulativeGasUsed":"0xa410",` +
		`"effectiveGasPrice":"0x3b9aca07","from":"0x6b2c51a0e7bcb1f5bd9b0d44c3cdd5f2a5d7b8f1","gasUsed":"0x8c5b",` +
		`"logs":[{"address":"0x5fbdb2315678afecb367f032d93f642f64180aa3","topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"],` +
		`"data":"0x01","blockNumber":"0x7","transactionHash":"` + hash + `","logIndex":"0x0","removed":false}],` +
		`"logsBloom":"0x` + strings.Repeat("0", 512) + `","status":"` + status + `","to":"0x5fbdb2315678afecb367f032d93f642f64180aa3",` +
		`"transactionHash":"` + hash + `","transactionIndex":"0x0","type":"0x2"}`
}

// Receipts are walked by hand: each one's hash and status, whatever else
// it carries; a receipt of another block says the block changed.
func TestReceiptsWalk(t *testing.T) {
	blk := "0x" + strings.Repeat("ab", 32)
	h1, h2 := "0x"+strings.Repeat("0", 62)+"01", "0x"+strings.Repeat("F", 64)
	answers := map[string]string{
		"0x1": `[` + receipt(blk, h1, "0x1") + `,` + receipt("0x"+strings.ToUpper(blk[2:]), h2, "0x0") + `]`,
		"0x2": `[` + receipt(blk, h1, "0x1") + `,` + receipt("0x"+strings.Repeat("cd", 32), h2, "0x1") + `]`,
		"0x3": `[{"transactionHash":"` + h1 + `","blockHash":"` + blk + `"}]`,
		"0x4": `null`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		for n, a := range answers {
			if strings.Contains(string(b), `"`+n+`"`) {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, a)
				return
			}
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no block"}}`))
	}))
	defer srv.Close()
	tg, _ := New(Options{Endpoints: []string{srv.URL}})
	c := tg.Confirmer().(*confirmer)
	cl := tg.Client()
	ctx := context.Background()

	// Block hashes compare without case.
	same, err := c.receipts(ctx, cl, 1, blk)
	if err != nil || !same {
		t.Fatalf("block 1: same %v, err %v", same, err)
	}
	var id1, id2 sut.TxID
	id1[31] = 1
	for i := range id2 {
		id2[i] = 0xff
	}
	want := []sut.TxResult{{ID: id1, OK: true, Gas: 0x8c5b}, {ID: id2, Reason: "reverted", Detail: "receipt status 0", Gas: 0x8c5b}}
	if len(c.blk.Txs) != 2 || c.blk.Txs[0] != want[0] || c.blk.Txs[1] != want[1] {
		t.Errorf("block 1's results %+v, want %+v", c.blk.Txs, want)
	}
	if same, err := c.receipts(ctx, cl, 2, blk); err != nil || same {
		t.Errorf("block 2 names another block: same %v, err %v", same, err)
	}
	if _, err := c.receipts(ctx, cl, 3, blk); err == nil || !strings.Contains(err.Error(), "without a transaction hash or status") {
		t.Errorf("a receipt without a status: %v", err)
	}
	if same, err := c.receipts(ctx, cl, 4, blk); err != nil || !same || len(c.blk.Txs) != 0 {
		t.Errorf("an empty block written as null: %v %v %d", same, err, len(c.blk.Txs))
	}
	if _, err := c.receipts(ctx, cl, 5, blk); err == nil || !strings.Contains(err.Error(), "no block") {
		t.Errorf("an error answer: %v", err)
	}
}
