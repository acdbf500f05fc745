package sink

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/chain"
)

// The lean server answers broadcasts with their id, pipelined requests in
// order, and everything else as ServeHTTP does.
func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := NewSink("c", chain.Genesis{Seed: "s", Accounts: 3, Balance: 5})
	go s.Serve(l)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := func(body string) string {
		return "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	// Three requests in one write: two broadcasts and a status.
	io.WriteString(c, req(`{"jsonrpc":"2.0","id":7,"method":"broadcast_tx_sync","params":{"tx":"AAAA"}}`)+
		req(`{"jsonrpc":"2.0","id":"x-8","method":"broadcast_tx_async","params":{"tx":"BBBB"}}`)+
		req(`{"jsonrpc":"2.0","id":9,"method":"status","params":{}}`))
	r := bufio.NewReader(c)
	for _, want := range []string{`7`, `"x-8"`, `9`} {
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result map[string]any  `json:"result"`
		}
		if err := json.Unmarshal(b, &a); err != nil || string(a.ID) != want || res.StatusCode != 200 || a.Result == nil {
			t.Fatalf("answer %q (status %d): %v, want id %s", b, res.StatusCode, err, want)
		}
		if want == "9" && !strings.Contains(string(b), `"network":"c"`) {
			t.Errorf("status: %s", b)
		}
	}
	// A JSON-RPC batch: one answer per element, in an array.
	io.WriteString(c, req(`[{"jsonrpc":"2.0","id":11,"method":"broadcast_tx_sync","params":{"tx":"AAAA"}},{"jsonrpc":"2.0","id":12,"method":"broadcast_tx_sync","params":{"tx":"BBBB"}}]`))
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	var batch []struct {
		ID     int            `json:"id"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(b, &batch); err != nil || len(batch) != 2 || batch[0].ID != 11 || batch[1].ID != 12 || batch[1].Result == nil {
		t.Fatalf("batch answer %q: %v", b, err)
	}
	if n := s.Received.Load(); n != 4 {
		t.Errorf("received %d broadcasts, want 4", n)
	}
}

// Closing the listener ends Serve even while a keep-alive client idles.
func TestServeEndsWithOpenConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSink("c", chain.Genesis{Seed: "s", Accounts: 3, Balance: 5})
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"broadcast_tx_sync","params":{"tx":"AAAA"}}`
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still running 5 s after its listener closed")
	}
}
