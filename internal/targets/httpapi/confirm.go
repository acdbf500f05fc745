package httpapi

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/buger/jsonparser"

	"github.com/tpslab/tpslab/internal/sut"
)

// pollers bounds the status requests in flight at once.
const pollers = 16

// confirmer follows accepted payments by polling their status URL or by
// receiving callbacks.
type confirmer struct {
	t  *Target
	mu sync.Mutex
	// watched are the payments to poll, by our id.
	watched map[sut.TxID]*watch
	// byRemote maps the system's id to ours, for callbacks.
	byRemote map[string]sut.TxID
	// early holds callbacks that came before the answer that named their id.
	early   map[string]settled
	results chan settled
	srv     *http.Server
	l       net.Listener
}

type watch struct {
	remote   string
	endpoint int
	since    time.Time
	next     time.Time
	busy     bool
}

type settled struct {
	id     sut.TxID
	remote string
	st     sut.Status
	reason string
	seen   time.Time
}

func newConfirmer(t *Target) *confirmer {
	return &confirmer{t: t, watched: map[sut.TxID]*watch{}, byRemote: map[string]sut.TxID{},
		early: map[string]settled{}, results: make(chan settled, 4096)}
}

// register follows a payment the system accepted; remote is its id in the
// system's terms ("" when the idempotency key is the id).
func (c *confirmer) register(id sut.TxID, remote string, endpoint int) {
	if remote == "" {
		remote = keyHex(id)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.o.Confirm == "callback" {
		if len(c.t.field.id) == 0 {
			return // the callback names the idempotency key itself
		}
		if s, ok := c.early[remote]; ok {
			delete(c.early, remote)
			s.id = id
			c.deliver(s)
			return
		}
		c.byRemote[remote] = id
		return
	}
	c.watched[id] = &watch{remote: remote, endpoint: endpoint, since: now, next: now.Add(c.t.o.PollInterval)}
}

// Watch follows a payment whose answer was lost by its idempotency key (it
// has no other id): polled when there is a status URL, matched by key when
// a callback names it.
func (c *confirmer) Watch(id sut.TxID) {
	if c.t.o.PollPath == "" {
		return
	}
	now := time.Now()
	c.mu.Lock()
	if _, ok := c.watched[id]; !ok {
		c.watched[id] = &watch{remote: keyHex(id), since: now, next: now.Add(c.t.o.PollInterval)}
	}
	c.mu.Unlock()
}

// deliver queues a settled payment for Run; it never blocks a poller or a
// callback for long (Run drains the queue continuously).
func (c *confirmer) deliver(s settled) {
	select {
	case c.results <- s:
	default:
		go func() { c.results <- s }()
	}
}

// Run reports settled payments to ev until ctx ends.
func (c *confirmer) Run(ctx context.Context, _ int64, ev sut.Events) error {
	if c.srv != nil {
		go c.srv.Serve(c.l)
	}
	tick := time.NewTicker(max(c.t.o.PollInterval/4, 10*time.Millisecond))
	defer tick.Stop()
	sem := make(chan struct{}, pollers)
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-c.results:
			ev.Resolved(s.id, s.st == sut.Committed, s.reason, s.seen)
		case <-tick.C:
			c.pollDue(ctx, sem)
		}
	}
}

// pollDue starts a status request for each watched payment that is due.
func (c *confirmer) pollDue(ctx context.Context, sem chan struct{}) {
	if c.t.o.PollPath == "" {
		return
	}
	now := time.Now()
	var due []sut.TxID
	c.mu.Lock()
	for id, w := range c.watched {
		if now.Sub(w.since) > c.t.o.GiveUp {
			delete(c.watched, id)
			continue
		}
		if !w.busy && !now.Before(w.next) {
			w.busy = true
			due = append(due, id)
		}
	}
	c.mu.Unlock()
	for _, id := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func(id sut.TxID) {
			defer func() { <-sem }()
			c.poll(ctx, id)
		}(id)
	}
}

// poll asks one payment's status; pending (or 404: not known yet) polls
// again after the interval.
func (c *confirmer) poll(ctx context.Context, id sut.TxID) {
	c.mu.Lock()
	w := c.watched[id]
	c.mu.Unlock()
	if w == nil {
		return
	}
	ep, _ := c.t.pool.Pick(w.endpoint)
	u := string(c.t.poll.Append([]byte(c.t.o.Endpoints[ep]), &values{f: &Fields{}, key: id[:], id: w.remote}))
	body, code, err := c.t.get(ctx, u)
	st, reason := sut.Pending, ""
	if err == nil && code == http.StatusOK {
		st, _ = c.t.state(body)
		if st == sut.Failed {
			reason, _ = c.t.why(code, body)
			if reason == "http_200" {
				reason = "failed"
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st == sut.Pending {
		w.busy, w.next = false, time.Now().Add(c.t.o.PollInterval)
		return
	}
	delete(c.watched, id)
	c.deliver(settled{id: id, st: st, reason: reason, seen: time.Now()})
}

// listen opens the callback listener and returns its URL.
func (c *confirmer) listen(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("http.callback_listen: %q: %v", addr, err)
	}
	c.l = l
	mux := http.NewServeMux()
	mux.HandleFunc("POST /callback", c.callback)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return "http://" + l.Addr().String() + "/callback", nil
}

// callback receives one payment's outcome: the id field (or "id") names it,
// the status field says what became of it.
func (c *confirmer) callback(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	idPath := c.t.field.id
	if len(idPath) == 0 {
		idPath = []string{"id"}
	}
	var remote string
	if err == nil {
		remote, err = jsonparser.GetString(body, idPath...)
	}
	st, known := c.t.state(body)
	if err != nil || !known || st == sut.Pending {
		if err == nil && known {
			w.WriteHeader(http.StatusNoContent) // a pending notice: wait for the final one
			return
		}
		http.Error(w, "expected a JSON body with the payment's id and final status", http.StatusBadRequest)
		return
	}
	s := settled{remote: remote, st: st, seen: time.Now()}
	if st == sut.Failed {
		s.reason, _ = c.t.why(http.StatusOK, body)
		if s.reason == "http_200" {
			s.reason = "failed"
		}
	}
	c.mu.Lock()
	if id, ok := c.byRemote[remote]; ok {
		delete(c.byRemote, remote)
		s.id = id
		c.deliver(s)
	} else if b, err := hex.DecodeString(remote); err == nil && len(b) == len(s.id) && len(c.t.field.id) == 0 {
		// The idempotency key is the id: settle it even if its answer was
		// lost (a second settlement of the same payment is ignored).
		copy(s.id[:], b)
		c.deliver(s)
	} else {
		c.early[remote] = s
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *confirmer) close() {
	if c.srv != nil {
		_ = c.srv.Close()
	} else if c.l != nil {
		_ = c.l.Close()
	}
}
