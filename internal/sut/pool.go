package sut

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Pool spreads submissions over a system's endpoints and moves them off an
// endpoint that stops answering: a connection that cannot be made, or one
// that breaks, marks the endpoint down; later submissions go to the next
// live one, and a probe brings it back when it answers again. Every kind of
// target that has several endpoints uses one.
type Pool struct {
	URLs  []string
	st    []endpointState
	probe func(ctx context.Context, i int) error
	evMu  sync.Mutex
	ev    func(Event)
}

type endpointState struct {
	down      atomic.Bool
	downSince atomic.Int64 // unix ns
	downTotal atomic.Int64 // ns spent down before downSince
	sent      atomic.Int64
	accepted  atomic.Int64
	rejected  atomic.Int64
	unacked   atomic.Int64
	transport atomic.Int64
	failovers atomic.Int64
	lastErr   atomic.Pointer[string]
}

// EndpointStat is one endpoint's health and traffic, as result.json records it.
type EndpointStat struct {
	URL             string  `json:"url"`
	Up              bool    `json:"up"`
	Sent            int64   `json:"sent"`
	Accepted        int64   `json:"accepted"`
	Rejected        int64   `json:"rejected"`
	Unacked         int64   `json:"unacked"`
	TransportErrors int64   `json:"transport_errors"`
	Failovers       int64   `json:"failovers"` // submissions it could not take, moved to another endpoint
	DownS           float64 `json:"down_s"`    // time it was down during the run
	LastError       string  `json:"last_error,omitempty"`
}

// NewPool watches urls; probe(i) must return nil when endpoint i answers.
func NewPool(urls []string, probe func(ctx context.Context, i int) error) *Pool {
	return &Pool{URLs: urls, st: make([]endpointState, len(urls)), probe: probe}
}

// OnEvent sets the function told when an endpoint goes down or comes back.
func (p *Pool) OnEvent(f func(Event)) {
	p.evMu.Lock()
	p.ev = f
	p.evMu.Unlock()
}

func (p *Pool) emit(kind string, i int, detail string) {
	p.evMu.Lock()
	f := p.ev
	p.evMu.Unlock()
	if f != nil {
		f(Event{Time: time.Now(), Kind: kind, Target: p.URLs[i], Detail: detail})
	}
}

// Pick returns the endpoint to use: pref if it is up, else the next one up.
// ok is false when every endpoint is down; pref is returned then.
func (p *Pool) Pick(pref int) (i int, ok bool) {
	n := len(p.URLs)
	pref %= n
	for k := 0; k < n; k++ {
		i := (pref + k) % n
		if !p.st[i].down.Load() {
			return i, true
		}
	}
	return pref, false
}

// AllDown is true when no endpoint is up.
func (p *Pool) AllDown() bool {
	_, ok := p.Pick(0)
	return !ok
}

// Down marks endpoint i down after err.
func (p *Pool) Down(i int, err error) {
	s := &p.st[i]
	msg := err.Error()
	s.lastErr.Store(&msg)
	if s.down.CompareAndSwap(false, true) {
		s.downSince.Store(time.Now().UnixNano())
		p.emit("endpoint_down", i, msg)
	}
}

func (p *Pool) up(i int) {
	s := &p.st[i]
	if s.down.CompareAndSwap(true, false) {
		s.downTotal.Add(time.Now().UnixNano() - s.downSince.Load())
		p.emit("endpoint_up", i, "answers again")
	}
}

// Count records the outcome of one submission answered by endpoint i.
func (p *Pool) Count(i int, st Status) {
	s := &p.st[i]
	s.sent.Add(1)
	switch st {
	case Rejected:
		s.rejected.Add(1)
	case Unacked:
		s.unacked.Add(1)
	default:
		s.accepted.Add(1)
	}
}

// Failover records a submission endpoint i could not take (it never reached
// the node), retried elsewhere.
func (p *Pool) Failover(i int) {
	p.st[i].failovers.Add(1)
	p.st[i].transport.Add(1)
}

// TransportError records a broken exchange with endpoint i.
func (p *Pool) TransportError(i int) { p.st[i].transport.Add(1) }

// Watch probes down endpoints every interval until ctx ends, and marks up
// those that answer.
func (p *Pool) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range p.st {
			if !p.st[i].down.Load() {
				continue
			}
			c, cancel := context.WithTimeout(ctx, interval)
			err := p.probe(c, i)
			cancel()
			if err == nil {
				p.up(i)
			}
		}
	}
}

// EndpointStats reads every endpoint's health and counters.
func (p *Pool) EndpointStats() []EndpointStat {
	out := make([]EndpointStat, len(p.URLs))
	now := time.Now().UnixNano()
	for i := range p.st {
		s := &p.st[i]
		down := s.downTotal.Load()
		if s.down.Load() {
			down += now - s.downSince.Load()
		}
		out[i] = EndpointStat{URL: p.URLs[i], Up: !s.down.Load(), Sent: s.sent.Load(), Accepted: s.accepted.Load(),
			Rejected: s.rejected.Load(), Unacked: s.unacked.Load(), TransportErrors: s.transport.Load(),
			Failovers: s.failovers.Load(), DownS: float64(down) / 1e9}
		if e := s.lastErr.Load(); e != nil {
			out[i].LastError = *e
		}
	}
	return out
}

// Send submits through the pool with post(ctx, i), which sends to endpoint
// i. It uses endpoint pref when it is up, else the next live one. A
// connection that cannot be made marks the endpoint down and moves the
// same request to the next live endpoint (it never reached a node, so
// nothing is duplicated); an error after the request may have left makes
// the answer Unacked and, when the endpoint looks gone, marks it down.
func (p *Pool) Send(ctx context.Context, pref int, post func(ctx context.Context, i int) (Receipt, error)) Receipt {
	var one [1]Receipt
	p.SendMany(ctx, pref, one[:], func(ctx context.Context, i int) (int, error) {
		r, err := post(ctx, i)
		if err != nil {
			return 0, err
		}
		one[0] = r
		return 1, nil
	})
	return one[0]
}

// SendMany is Send for a batch: post sends all of out's payments to
// endpoint i in order and fills out[:answered]. After an error the
// unanswered ones are Unacked (they may have reached the node), unless it
// was never delivered: then the whole batch moves to the next endpoint.
func (p *Pool) SendMany(ctx context.Context, pref int, out []Receipt, post func(ctx context.Context, i int) (answered int, err error)) {
	var last error
	for try := 0; try < len(p.URLs); try++ {
		i, _ := p.Pick(pref + try)
		n, err := post(ctx, i)
		if err == nil || !NeverDelivered(err) || ctx.Err() != nil {
			if err != nil {
				r := UnackedBy(err)
				for k := n; k < len(out); k++ {
					out[k] = r
				}
				if Broken(err) {
					p.Down(i, err)
					p.TransportError(i)
				}
			}
			for k := range out {
				out[k].Endpoint = i
				p.Count(i, out[k].Status)
			}
			return
		}
		last = err
		for range out {
			p.Failover(i)
		}
		p.Down(i, err)
	}
	// No endpoint took it: it never reached a node.
	for k := range out {
		out[k] = Receipt{Status: Rejected, Reason: "transport_error", Detail: last.Error(), Endpoint: -1}
	}
}

// UnackedBy is the receipt of a request whose answer err lost.
func UnackedBy(err error) Receipt {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return Receipt{Status: Unacked, Reason: "timeout", Detail: err.Error()}
	case errors.Is(err, context.Canceled):
		return Receipt{Status: Unacked, Reason: "canceled", Detail: err.Error()}
	}
	return Receipt{Status: Unacked, Reason: "transport_error", Detail: err.Error()}
}

// ErrBroken marks a transport error that means the endpoint is gone or
// going (a gRPC connection that became unavailable, say).
var ErrBroken = errors.New("connection broke")

// NeverDelivered says err happened before a request could reach the other
// side (the connection could not be made), so sending it elsewhere cannot
// duplicate it.
func NeverDelivered(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// Broken says err means the endpoint is gone or going (as opposed to slow):
// the connection was refused, reset or closed under us.
func Broken(err error) bool {
	if NeverDelivered(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, ErrBroken) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
