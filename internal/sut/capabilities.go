package sut

import (
	"context"
	"time"
)

// Every optional capability of a target, in one place (as k6's
// output/types.go does): the runner finds each by type assertion and uses
// nothing a target does not declare here or in target.go.

// Pooled is a target that spreads submissions over an endpoint Pool: the
// runner watches its health, marks endpoints of exited nodes down and
// reports what each endpoint took.
type Pooled interface {
	Pool() *Pool
}

// EndpointProber can check one endpoint before the load (the runner probes
// every endpoint of the pool and refuses to start when one does not answer).
type EndpointProber interface {
	ProbeEndpoint(ctx context.Context, i int) error
}

// Batcher is a target that can carry many payments in one exchange: its
// submitters 0..BatchLanes()-1 are BatchSubmitters, one in-order lane per
// endpoint. 0 lanes means it cannot (on this configuration).
type Batcher interface {
	BatchLanes() int
}

// BatchSubmitter sends txs in order in as few exchanges as it can; out[k]
// is tx k's answer.
type BatchSubmitter interface {
	SubmitBatch(ctx context.Context, txs []Tx, out []Receipt)
}

// Mempool reports the largest mempool among the endpoints.
type Mempool interface {
	MempoolTxs(ctx context.Context) (int, error)
}

// Endpoints reports the health of each endpoint and what was sent to it.
type Endpoints interface {
	EndpointStats() []EndpointStat
}

// Eventer lets a target report things that happened (an endpoint went down,
// a fallback to polling) as they happen.
type Eventer interface {
	OnEvent(func(Event))
}

// Event is something the target noticed.
type Event struct {
	Time   time.Time
	Kind   string // endpoint_down, endpoint_up, note
	Target string // endpoint URL or node name
	Detail string
}
