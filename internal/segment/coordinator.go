// Package segment spreads one load over several generators and merges what
// they measured into one result: segment i of N sends every N-th arrival
// from its own senders (scenario.ForSegment), all segments begin at one
// instant agreed through the coordinator, each writes an ordinary run
// directory plus its histograms, and Merge sums counts and merges the HDR
// histograms, second by second and in total, so percentiles are exact (never
// averaged). The segments run as local processes or as the pods of a
// Kubernetes Indexed Job.
package segment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Lead is how long after the last segment is ready the load begins: long
// enough for the answer to reach every segment.
const Lead = 2 * time.Second

// Coordinator is the controller's side: it tells segments its clock and, once
// all N are ready, the instant the load begins.
type Coordinator struct {
	n     int
	srv   *http.Server
	ln    net.Listener
	mu    sync.Mutex
	ready map[int]bool
	start time.Time
	go_   chan struct{} // closed when every segment is ready
	abort chan struct{} // closed when the run is given up
	once  sync.Once
	// Out, when set, takes the files segments stream (segments that run
	// where the controller cannot read their disk): Out/segments/I/...
	Out string
}

// NewCoordinator listens on addr (host:port; 127.0.0.1:0 for local
// segments) for n segments.
func NewCoordinator(addr string, n int) (*Coordinator, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %v", err)
	}
	c := &Coordinator{n: n, ln: ln, ready: map[int]bool{}, go_: make(chan struct{}), abort: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/clock", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]int64{"now": time.Now().UnixNano()})
	})
	mux.HandleFunc("/ready", c.serveReady)
	mux.HandleFunc("/file", c.serveFile)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go c.srv.Serve(ln)
	return c, nil
}

// URL is where segments reach the coordinator.
func (c *Coordinator) URL() string { return "http://" + c.ln.Addr().String() }

// Start is the agreed start (zero before every segment was ready).
func (c *Coordinator) Start() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start
}

// Abort answers every waiting segment that the run is off.
func (c *Coordinator) Abort() { c.once.Do(func() { close(c.abort) }) }

// Close stops serving.
func (c *Coordinator) Close() error {
	c.Abort()
	return c.srv.Close()
}

func (c *Coordinator) serveReady(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(r.URL.Query().Get("segment"))
	if err != nil || i < 0 || i >= c.n {
		http.Error(w, fmt.Sprintf("segment: %q, expected 0..%d", r.URL.Query().Get("segment"), c.n-1), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.ready[i] = true
	if len(c.ready) == c.n && c.start.IsZero() {
		c.start = time.Now().Add(Lead)
		close(c.go_)
	}
	c.mu.Unlock()
	select {
	case <-c.go_:
		writeJSON(w, map[string]int64{"start": c.Start().UnixNano()})
	case <-c.abort:
		http.Error(w, "the run was given up before every segment was ready", http.StatusGone)
	case <-r.Context().Done():
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Clock is a segment's clock against the controller's.
type Clock struct {
	// OffsetMs is the controller's clock minus this one, in ms, from the
	// round trip with the shortest time; RTTMs is that round trip.
	OffsetMs float64 `json:"offset_ms"`
	RTTMs    float64 `json:"rtt_ms"`
}

// Client is a segment's side.
type Client struct {
	URL   string
	Index int
	http  http.Client
}

// Measure reads the coordinator's clock 8 times and keeps the reading with
// the shortest round trip (its offset is the most certain: within RTT/2).
func (cl *Client) Measure(ctx context.Context) (Clock, error) {
	best := Clock{RTTMs: -1}
	for k := 0; k < 8; k++ {
		t0 := time.Now()
		var v struct{ Now int64 }
		if err := cl.get(ctx, "/clock", &v); err != nil {
			return best, err
		}
		t1 := time.Now()
		rtt := t1.Sub(t0)
		mid := t0.Add(rtt / 2)
		off := time.Unix(0, v.Now).Sub(mid)
		if best.RTTMs < 0 || ms(rtt) < best.RTTMs {
			best = Clock{OffsetMs: ms(off), RTTMs: ms(rtt)}
		}
	}
	return best, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Ready says this segment is ready and waits for the agreed start, returned
// on this machine's clock (offset applied).
func (cl *Client) Ready(ctx context.Context, clk Clock) (time.Time, error) {
	var v struct{ Start int64 }
	if err := cl.get(ctx, "/ready?segment="+strconv.Itoa(cl.Index), &v); err != nil {
		return time.Time{}, err
	}
	if v.Start == 0 {
		return time.Time{}, errors.New("coordinator: no start instant in its answer")
	}
	off := time.Duration(clk.OffsetMs * float64(time.Millisecond))
	return time.Unix(0, v.Start).Add(-off), nil
}

// Watch reads the coordinator's clock every second until ctx ends; when
// the coordinator has not answered for lost (its controller was killed),
// it calls gone once with the last error and returns. A segment whose
// controller died must not go on loading the network unseen.
func (cl *Client) Watch(ctx context.Context, lost time.Duration, gone func(error)) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		var v struct{ Now int64 }
		err := cl.get(c, "/clock", &v)
		cancel()
		switch {
		case err == nil:
			last = time.Now()
		case ctx.Err() != nil:
			return
		case time.Since(last) >= lost:
			gone(err)
			return
		}
	}
}

func (cl *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cl.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		return fmt.Errorf("coordinator: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b [200]byte
		n, _ := resp.Body.Read(b[:])
		return fmt.Errorf("coordinator: %s: %s", resp.Status, string(b[:n]))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Wait returns the agreed start once every segment is ready.
func (c *Coordinator) Wait(ctx context.Context) (time.Time, error) {
	select {
	case <-c.go_:
		return c.Start(), nil
	case <-c.abort:
		return time.Time{}, errors.New("given up")
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}
