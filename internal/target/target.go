// Package target defines what the load engine needs from a system under
// test: submit bytes, and a stream of committed blocks to confirm against.
// Each kind of system lives in a sub-package.
package target

import (
	"context"
	"time"
)

// Ack is a node's answer to one submission.
type Ack struct {
	OK     bool
	Reason string // why not OK: a result-code name or a transport class
	Log    string
}

// Block is a committed block as the engine sees it.
type Block struct {
	Height int64
	Time   time.Time // the header's time
	Seen   time.Time // when tpslab observed the block, on its own clock
	TxIDs  [][32]byte
	Codes  []uint32 // FinalizeBlock result code per transaction
	Spaces []string // codespace per transaction
	Bytes  int
}

// Conn submits transactions; one per worker, not safe for concurrent use.
type Conn interface {
	Submit(ctx context.Context, tx []byte) Ack
}

// Target is a system under test.
type Target interface {
	// Conn returns connection i; connections are spread over the endpoints.
	Conn(i int) Conn
	// Blocks delivers every block from height from on, in order, until ctx
	// ends; it returns an error when the target can no longer be read.
	Blocks(ctx context.Context, from int64, out chan<- Block) error
	// Height is the latest committed height.
	Height(ctx context.Context) (int64, error)
	// MempoolTxs is the largest mempool size among the endpoints.
	MempoolTxs(ctx context.Context) (int, error)
	Close()
}
