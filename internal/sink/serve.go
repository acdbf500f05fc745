package sink

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Serve answers HTTP/1.1 on l until l is closed. Broadcasts, the sink's
// whole load, take a fast path: the request is read into a reused buffer
// and answered with a precomputed body around the request's id, and
// answers to pipelined requests leave in one write. Written by hand
// because net/http's server, with its per-request maps and goroutine
// handoffs, saturated one core near 31k requests/s, below the generator
// it is meant to measure. Every other method goes through ServeHTTP.
// Closing l also closes the open connections, so keep-alive clients do not
// hold Serve.
func (s *Sink) Serve(l net.Listener) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	defer func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

var (
	broadcastHead = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ")
	broadcastPre  = []byte(`{"jsonrpc":"2.0","id":`)
	broadcastPost = []byte(`,"result":{"code":0,"data":"","log":"","codespace":"","hash":"00"}}`)
	methodKey     = []byte(`"method":"`)
	idKey         = []byte(`"id":`)
)

func (s *Sink) serveConn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	var body, out []byte
	for {
		method, path, length, closeAfter, err := readHead(r)
		if err != nil {
			return
		}
		if cap(body) < length {
			body = make([]byte, length)
		}
		body = body[:length]
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if m := jsonString(body, methodKey); method == "POST" && (bytes.Equal(m, []byte("broadcast_tx_sync")) || bytes.Equal(m, []byte("broadcast_tx_async"))) {
			// A JSON-RPC batch gets one answer per element, by its id.
			out = out[:0]
			batch := len(body) > 0 && body[0] == '['
			if batch {
				out = append(out, '[')
			}
			for rest := body; ; {
				s.received()
				id := jsonValue(rest, idKey)
				if id == nil {
					id = []byte("null")
				}
				out = append(out, broadcastPre...)
				out = append(out, id...)
				out = append(out, broadcastPost...)
				k := bytes.Index(rest, idKey)
				if !batch || k < 0 {
					break
				}
				rest = rest[k+len(idKey):]
				if bytes.Index(rest, idKey) < 0 {
					break
				}
				out = append(out, ',')
			}
			if batch {
				out = append(out, ']')
			}
			w.Write(broadcastHead)
			w.WriteString(strconv.Itoa(len(out)))
			w.WriteString("\r\n\r\n")
			w.Write(out)
		} else {
			rec := httptest.NewRecorder()
			if req, err := http.NewRequest(method, path, bytes.NewReader(body)); err != nil {
				http.Error(rec, err.Error(), http.StatusBadRequest)
			} else {
				s.ServeHTTP(rec, req)
			}
			res := rec.Result()
			res.ContentLength = int64(rec.Body.Len())
			res.Close = closeAfter
			res.Write(w)
		}
		if closeAfter {
			w.Flush()
			return
		}
		if r.Buffered() == 0 { // nothing pipelined behind it: send now
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// received counts a broadcast and holds it while the sink is stalled.
func (s *Sink) received() {
	if n := s.Received.Add(1); s.StallAfter > 0 && n == s.StallAfter {
		until := time.Now().Add(s.StallFor)
		s.StallUntil.Store(&until)
	}
	if until := s.StallUntil.Load(); until != nil {
		time.Sleep(time.Until(*until))
	}
}

// readHead reads a request line and headers: the method, the path, the
// body's length and whether the client asked to close.
func readHead(r *bufio.Reader) (method, path string, length int, closeAfter bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return "", "", 0, false, err
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return "", "", 0, false, io.ErrUnexpectedEOF
	}
	method, path = string(f[0]), string(f[1])
	closeAfter = bytes.Equal(f[2], []byte("HTTP/1.0"))
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return "", "", 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			return method, path, length, closeAfter, nil
		}
		i := bytes.IndexByte(h, ':')
		if i < 0 {
			continue
		}
		name, value := h[:i], bytes.TrimSpace(h[i+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 || length > 16<<20 {
				return "", "", 0, false, io.ErrUnexpectedEOF
			}
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return "", "", 0, false, http.ErrNotSupported // clients send bodies with a length
		}
	}
}

// jsonString is the string after key (`"method":"`) up to its closing
// quote; the sink's clients write compact JSON-RPC.
func jsonString(b, key []byte) []byte {
	i := bytes.Index(b, key)
	if i < 0 {
		return nil
	}
	rest := b[i+len(key):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return nil
}

// jsonValue is the scalar after key (`"id":`): a number or a string.
func jsonValue(b, key []byte) []byte {
	i := bytes.Index(b, key)
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(b[i+len(key):], " ")
	if len(rest) > 0 && rest[0] == '"' {
		if j := bytes.IndexByte(rest[1:], '"'); j >= 0 {
			return rest[:j+2]
		}
		return nil
	}
	j := bytes.IndexAny(rest, ",}")
	if j <= 0 {
		return nil
	}
	return bytes.TrimSpace(rest[:j])
}
