package factom

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tpslab/tpslab/internal/sut"
)

// ChainID is what a LOCAL network is named by in results (every LOCAL
// network starts from the same genesis).
const ChainID = "factom-local"

// Target is factomd's API on one or more nodes: payments are spread over
// them (a follower passes what it takes to the leader over P2P); the
// confirmer follows the first node's directory blocks.
type Target struct {
	pool *sut.Pool
	cls  []*Client
	conf *confirmer
}

// NewTarget is the nodes' APIs at urls (http://host:port).
func NewTarget(urls []string, conns int) *Target {
	tr := &http.Transport{MaxIdleConnsPerHost: max(conns, 2), IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext}
	t := &Target{}
	for _, u := range urls {
		c := NewClient(strings.TrimSuffix(u, "/"))
		c.HTTP = &http.Client{Transport: tr, Timeout: 30 * time.Second}
		t.cls = append(t.cls, c)
	}
	t.pool = sut.NewPool(urls, t.ProbeEndpoint)
	// One confirmer: the workers' Watch and the follower's Run share its
	// samples.
	t.conf = &confirmer{cl: t.cls[0], poll: 200 * time.Millisecond, acks: acks{pending: map[sut.TxID]time.Time{}, at: map[sut.TxID]time.Time{}}}
	return t
}

// Client is node i's API client.
func (t *Target) Client(i int) *Client { return t.cls[i] }

// Pool spreads payments over the nodes.
func (t *Target) Pool() *sut.Pool { return t.pool }

// ProbeEndpoint asks node i its heights.
func (t *Target) ProbeEndpoint(ctx context.Context, i int) error {
	_, err := t.cls[i].Heights(ctx)
	return err
}

// Probe asks the first node its directory block height.
func (t *Target) Probe(ctx context.Context) (sut.Info, error) {
	h, err := t.cls[0].Heights(ctx)
	if err != nil {
		return sut.Info{}, err
	}
	var p struct {
		Version string `json:"factomdversion"`
	}
	_ = t.cls[0].Call(ctx, "properties", nil, &p)
	return sut.Info{ChainID: ChainID, Height: h.DirectoryBlock, Version: p.Version}, nil
}

// Submitter i sends to node i (mod the nodes) first.
func (t *Target) Submitter(i int) sut.Submitter { return &submitter{t: t, pref: i} }

// Confirmer follows the directory blocks.
func (t *Target) Confirmer() sut.Confirmer { return t.conf }

// Close does nothing: connections are pooled by the transport.
func (t *Target) Close() error { return nil }

type submitter struct {
	t    *Target
	pref int
}

// Submit posts the commit, then the reveal, to one node: the payment is
// acknowledged when both are answered.
func (s *submitter) Submit(ctx context.Context, tx sut.Tx) sut.Receipt {
	_, _, first, second, ok := Split(tx.Bytes)
	if !ok {
		return sut.Receipt{Status: sut.Rejected, Reason: "malformed", Detail: "not a signed Factom payment"}
	}
	return s.t.pool.Send(ctx, s.pref, func(ctx context.Context, i int) (sut.Receipt, error) {
		cl := s.t.cls[i]
		if r, err := send(ctx, cl, first); err != nil || r.Status != sut.Pending || len(second) == 0 {
			return r, err
		}
		r, err := send(ctx, cl, second)
		if err != nil && sut.NeverDelivered(err) {
			// The commit reached the node: the reveal's loss is not a
			// reason to commit again elsewhere.
			return sut.UnackedBy(err), nil
		}
		return r, err
	})
}

// send posts one body: a refusal is read from the node's error.
func send(ctx context.Context, cl *Client, body []byte) (sut.Receipt, error) {
	err := cl.post(ctx, body, nil)
	var re *RPCError
	switch {
	case err == nil:
		return sut.Receipt{Status: sut.Pending}, nil
	case errors.As(err, &re):
		return sut.Receipt{Status: sut.Rejected, Reason: reasonOf(re), Detail: re.Error()}, nil
	case strings.Contains(err.Error(), "not a JSON-RPC answer"):
		return sut.Unreadable(http.StatusOK, err.Error()), nil
	}
	return sut.Receipt{}, err
}

// reasonOf names a refusal: factomd's message in snake case.
func reasonOf(e *RPCError) string {
	var b strings.Builder
	for _, r := range strings.ToLower(e.Message) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}

type confirmer struct {
	cl   *Client
	poll time.Duration
	n    atomic.Uint64
	acks acks
}

// NoProbes switches off the sampled acks here and the nodes' P2P counters
// in the kind: for bench/factom-probes-cost.sh only, which measures them.
var NoProbes = os.Getenv("TPSLAB_BENCH_NO_FACTOM_PROBES") == "1"

// Watch samples one acknowledged payment in ackSample for the stage the
// leader reports (its TransactionACK); blocks are read whole.
func (c *confirmer) Watch(id sut.TxID) {
	if c.n.Add(1)%ackSample == 0 && !NoProbes {
		c.acks.watch(id)
	}
}

// Run reports each directory block from height from on, with the entries
// of its entry blocks and the transactions of its factoid block: a
// directory block is final (Factom's leaders sign it; no reorganisation).
func (c *confirmer) Run(ctx context.Context, from int64, ev sut.Events) error {
	go c.acks.follow(ctx, c.cl)
	next, fails := from, 0
	for ctx.Err() == nil {
		h, err := c.cl.Heights(ctx)
		if err == nil {
			for ; next <= h.DirectoryBlock && err == nil; next++ {
				var b *sut.Block
				if b, err = ReadBlock(ctx, c.cl, next); err == nil {
					c.acks.stamp(b)
					ev.Block(b)
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			if fails++; fails > 50 {
				return fmt.Errorf("factomd %s: %w", c.cl.URL, err)
			}
		} else {
			fails = 0
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.poll):
		}
	}
	return nil
}

// ReadBlock reads directory block h and what it holds: every entry of its
// entry blocks and every transaction of its factoid block.
func ReadBlock(ctx context.Context, cl *Client, h int64) (*sut.Block, error) {
	d, err := cl.DBlockByHeight(ctx, h)
	if err != nil {
		return nil, err
	}
	// The header's time is in whole minutes: the block's time is when it
	// was read (within the confirmer's poll of its saving).
	now := time.Now()
	b := &sut.Block{Height: h, Hash: d.KeyMR, Time: now, Seen: now, Final: true}
	for _, e := range d.Entries {
		switch {
		case IsEntryChain(e.ChainID):
			eb, err := cl.EntryBlock(ctx, e.KeyMR)
			if err != nil {
				return nil, err
			}
			for _, x := range eb.Entries {
				b.Txs = append(b.Txs, result(x.Hash))
			}
		case e.ChainID == FactoidChain:
			fb, err := cl.FactoidBlock(ctx, e.KeyMR)
			if err != nil {
				return nil, err
			}
			for _, x := range fb.Txs {
				b.Txs = append(b.Txs, result(x.ID))
			}
		}
	}
	return b, nil
}

func result(h string) sut.TxResult {
	var r sut.TxResult
	if b, err := hex.DecodeString(h); err == nil && len(b) == 32 {
		copy(r.ID[:], b)
	}
	r.OK = true
	return r
}
