package httpclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPost(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte("part1-"))
			w.(http.Flusher).Flush()
			w.Write(b)
		case "/close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(201)
			w.Write(b)
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		default:
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Host == "" {
				w.WriteHeader(400)
				return
			}
			w.Write(append([]byte("echo:"), b...))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	ctx := context.Background()

	c, err := New(srv.URL + "/rpc")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		st, body, err := c.Post(ctx, "application/json", []byte(`{"n":`+strings.Repeat("7", i)+`}`), time.Second)
		if err != nil || st != 200 || string(body) != `echo:{"n":`+strings.Repeat("7", i)+`}` {
			t.Fatalf("post %d: %d %q %v", i, st, body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("50 posts used %d connections, want 1 (keep-alive)", n)
	}
	big := strings.Repeat("x", 40000)
	ch, _ := New(srv.URL + "/chunked")
	if st, body, err := ch.Post(ctx, "application/json", []byte(big), time.Second); err != nil || st != 200 || string(body) != "part1-"+big {
		t.Errorf("chunked: %d %d bytes %v", st, len(body), err)
	}
	cl, _ := New(srv.URL + "/close")
	for i := 0; i < 2; i++ {
		if st, body, err := cl.Post(ctx, "application/json", []byte("b"), time.Second); err != nil || st != 201 || string(body) != "b" {
			t.Errorf("connection close: %d %q %v", st, body, err)
		}
	}
	slow, _ := New(srv.URL + "/slow")
	_, _, err = slow.Post(ctx, "application/json", nil, 50*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a slow answer: %v, want a timeout", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, _, err := slow.Post(cctx, "application/json", nil, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	dead, _ := New("http://" + addr + "/")
	_, _, err = dead.Post(ctx, "application/json", nil, time.Second)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("a dead endpoint: %v, want a dial error", err)
	}
	if _, err := New("https://example.org/"); err == nil {
		t.Error("https accepted")
	}
}

// BenchmarkPost is a submission's cost on loopback against net/http's
// server: request and answer without allocations in the client.
func BenchmarkPost(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"code":0,"data":"","log":"","codespace":"","hash":"AB"}}`))
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"broadcast_tx_sync","params":{"tx":"` + strings.Repeat("A", 190) + `"}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := c.Post(context.Background(), "application/json", body, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
