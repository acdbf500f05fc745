package runner

import (
	"context"
	"errors"
	"fmt"
)

// EndKind is why a run's offering ended.
type EndKind uint8

const (
	Completed        EndKind = iota // the load ran its course
	Interrupted                     // the user stopped it (SIGINT, SIGTERM)
	ChainHalted                     // no block for too long
	TargetFailed                    // every node down, or no endpoint answers
	DiskFull                        // the result could not be streamed to disk
	FailedEarly                     // the run failed before its load
	InterruptedEarly                // the user stopped it before its load
	Aborted                         // a threshold failed past its grace (abort_on_fail)
)

var endNames = [...]string{"completed", "interrupted", "chain_halted", "target_failed", "disk_full",
	"failed before the load", "interrupted before the load", "aborted"}

func (k EndKind) String() string { return endNames[k] }

// End is a typed end reason; it is the cause the offering context is
// cancelled with. Its text (kind, then detail) is result.json's
// ended_because.
type End struct {
	Kind   EndKind
	Detail string
	// tracking: the system stopped, but what it acknowledged may still be
	// read (its confirmer retries), so the drain waits for it.
	tracking bool
}

func (e End) Error() string {
	switch {
	case e.Detail == "":
		return e.Kind.String()
	case e.Kind == Interrupted:
		return e.Kind.String() + " (" + e.Detail + ")" // docs/results.md
	}
	return e.Kind.String() + ": " + e.Detail
}

func (e End) String() string { return e.Error() }

// endf is an End of kind k with a formatted detail.
func endf(k EndKind, format string, a ...any) End {
	return End{Kind: k, Detail: fmt.Sprintf(format, a...)}
}

// endOf reads why ctx was cancelled; a cause that is no End (the parent
// context ended: an interruption) is Interrupted.
func endOf(ctx context.Context) (End, bool) {
	c := context.Cause(ctx)
	if c == nil {
		return End{}, false
	}
	var e End
	if errors.As(c, &e) {
		return e, true
	}
	return End{Kind: Interrupted}, true
}

// hopeless says nothing can commit any more: waiting for in-flight
// payments is pointless.
func (e End) hopeless() bool {
	return e.Kind == ChainHalted || e.Kind == TargetFailed && !e.tracking
}
