// Package httpclient is a minimal HTTP/1.1 keep-alive client for the
// submission hot path: one connection owned by one goroutine, each request
// written with one write from a reused buffer, each answer read into a
// reused buffer. Written by hand because net/http's transport runs two
// goroutines per connection and hands every request and answer across
// channels, with header maps per request: at a thousand submissions a
// second those handoffs and allocations were most of tpslab's own CPU
// (bench/vs-loadtime.sh). Only what a JSON-RPC or REST POST needs is
// here: Content-Length or chunked answers, keep-alive, Connection: close.
package httpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// idleRedial is how long a connection may sit unused before it is
// replaced rather than reused: servers close idle keep-alive connections
// (CometBFT's after 10 s), and a POST written to a connection the server
// already closed cannot safely be sent again.
const idleRedial = 3 * time.Second

// Conn is one keep-alive connection to one URL; not safe for concurrent
// use.
type Conn struct {
	addr, host, path string
	c                net.Conn
	r                *bufio.Reader
	req, body        []byte
	last             time.Time
}

// New makes a connection to rawURL (http only; it dials on first use).
func New(rawURL string) (*Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("httpclient: %s: only http", rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	path := u.RequestURI()
	return &Conn{addr: addr, host: u.Host, path: path, req: make([]byte, 0, 1024), body: make([]byte, 0, 1024)}, nil
}

// Close closes the connection; the next Post dials again.
func (c *Conn) Close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// Post sends body and returns the answer's status and body (valid until
// the next call). Errors are the net package's: a dial error when the
// connection could not be made, a timeout when timeout or ctx's deadline
// passed; ctx's error when it was cancelled.
func (c *Conn) Post(ctx context.Context, contentType string, body []byte, timeout time.Duration) (status int, resp []byte, err error) {
	one := [1][]byte{body}
	_, err = c.PostAll(ctx, contentType, one[:], timeout, func(_ int, st int, b []byte) { status, resp = st, b })
	return status, resp, err
}

// PostAll pipelines one POST per body: all written with one write, the
// answers read in order, answer(k, status, body) called for each (body
// valid during the call). On the hot path one write and a read or two
// carry many payments instead of a write and a wake-up each. n is how many
// were answered; after an error the others' fate is unknown (they may have
// reached the server), unless the error is a dial error (none was sent).
func (c *Conn) PostAll(ctx context.Context, contentType string, bodies [][]byte, timeout time.Duration, answer func(k, status int, body []byte)) (n int, err error) {
	if c.c != nil && time.Since(c.last) > idleRedial {
		c.Close()
	}
	if c.c == nil {
		d := net.Dialer{Timeout: min(timeout, 3*time.Second), KeepAlive: 30 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return 0, err
		}
		c.c = conn
		if c.r == nil {
			c.r = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.r.Reset(conn)
		}
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn := c.c
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	r := c.req[:0]
	for _, body := range bodies {
		r = append(r, "POST "...)
		r = append(r, c.path...)
		r = append(r, " HTTP/1.1\r\nHost: "...)
		r = append(r, c.host...)
		r = append(r, "\r\nContent-Type: "...)
		r = append(r, contentType...)
		r = append(r, "\r\nContent-Length: "...)
		r = strconv.AppendInt(r, int64(len(body)), 10)
		r = append(r, "\r\n\r\n"...)
		r = append(r, body...)
	}
	c.req = r
	if _, err := conn.Write(r); err != nil {
		c.Close()
		return 0, c.cause(ctx, err)
	}
	for n < len(bodies) {
		status, resp, keep, err := c.read()
		if err != nil {
			c.Close()
			return n, c.cause(ctx, err)
		}
		answer(n, status, resp)
		n++
		if !keep {
			c.Close()
			if n < len(bodies) {
				return n, fmt.Errorf("httpclient: the server closed the connection after %d of %d pipelined requests: %w", n, len(bodies), io.ErrUnexpectedEOF)
			}
		}
	}
	c.last = time.Now()
	return n, nil
}

func (c *Conn) cause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

var (
	errMalformed = errors.New("httpclient: malformed answer")
	crlf         = []byte("\r\n")
)

// read reads one answer: its status, body, and whether the connection
// stays open.
func (c *Conn) read() (status int, body []byte, keep bool, err error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, errMalformed
	}
	keep = line[7] == '1'
	length, chunked := -1, false
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		i := bytes.IndexByte(h, ':')
		if i < 0 {
			return 0, nil, false, errMalformed
		}
		name, value := h[:i], bytes.TrimSpace(h[i+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, errMalformed
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		for {
			l, err := c.r.ReadSlice('\n')
			if err != nil {
				return 0, nil, false, err
			}
			l = bytes.TrimRight(l, "\r\n")
			if i := bytes.IndexByte(l, ';'); i >= 0 {
				l = l[:i]
			}
			n, err := strconv.ParseUint(string(bytes.TrimSpace(l)), 16, 31)
			if err != nil {
				return 0, nil, false, errMalformed
			}
			if n == 0 {
				for { // trailers, then the blank line
					t, err := c.r.ReadSlice('\n')
					if err != nil {
						return 0, nil, false, err
					}
					if len(bytes.TrimRight(t, "\r\n")) == 0 {
						return status, c.body, keep, nil
					}
				}
			}
			if err := c.readN(int(n)); err != nil {
				return 0, nil, false, err
			}
			var end [2]byte
			if _, err := io.ReadFull(c.r, end[:]); err != nil || !bytes.Equal(end[:], crlf) {
				return 0, nil, false, errMalformed
			}
		}
	case length >= 0:
		if err := c.readN(length); err != nil {
			return 0, nil, false, err
		}
	default: // until the server closes
		b, err := io.ReadAll(c.r)
		if err != nil {
			return 0, nil, false, err
		}
		c.body, keep = append(c.body, b...), false
	}
	return status, c.body, keep, nil
}

// readN appends the next n bytes of the answer to c.body.
func (c *Conn) readN(n int) error {
	start := len(c.body)
	if cap(c.body)-start < n {
		nb := make([]byte, start, start+n+1024)
		copy(nb, c.body)
		c.body = nb
	}
	c.body = c.body[:start+n]
	_, err := io.ReadFull(c.r, c.body[start:])
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Set is one submitter's connections, one per endpoint URL: a lean
// connection for each http:// endpoint; an endpoint this client does not
// speak (https) is posted to through net/http. The lock lets the target
// close the set at the end of a run while the submitter may still be
// using it.
type Set struct {
	mu    sync.Mutex
	urls  []string
	conns []*Conn // nil for an https endpoint
	all   bool
	http  *http.Client
	rd    bytes.Reader
	resp  bytes.Buffer
}

// NewSet makes a connection for each http:// URL (none is dialled yet);
// fallback carries the others.
func NewSet(urls []string, fallback *http.Client) *Set {
	s := &Set{urls: urls, conns: make([]*Conn, len(urls)), all: true, http: fallback}
	for i, u := range urls {
		s.conns[i], _ = New(u)
		s.all = s.all && s.conns[i] != nil
	}
	return s
}

// All reports whether every endpoint has a lean connection (batches can
// be pipelined to any of them).
func (s *Set) All() bool { return s.all }

// Post sends body to endpoint i and returns the answer's status and body
// (valid until the next call), with Conn.Post's errors on a lean
// connection and net/http's otherwise.
func (s *Set) Post(ctx context.Context, i int, contentType string, body []byte, timeout time.Duration) (status int, resp []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.conns[i]; c != nil {
		return c.Post(ctx, contentType, body, timeout)
	}
	s.rd.Reset(body)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.urls[i], &s.rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	res, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	s.resp.Reset()
	if _, err := s.resp.ReadFrom(res.Body); err != nil {
		return 0, nil, err
	}
	return res.StatusCode, s.resp.Bytes(), nil
}

// PostAll is PostAll on endpoint i's connection.
func (s *Set) PostAll(ctx context.Context, i int, contentType string, bodies [][]byte, timeout time.Duration, answer func(k, status int, body []byte)) (n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[i].PostAll(ctx, contentType, bodies, timeout, answer)
}

// Close closes every connection.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c != nil {
			c.Close()
		}
	}
}
