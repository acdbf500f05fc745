// Package interrupt turns signals into two levels of stopping. The first
// SIGINT, SIGTERM or SIGHUP (a closed terminal) asks a run to stop offering
// load and wait, up to its drain, for what is in flight; a second one stops
// waiting. SIGPIPE is ignored, so a closed pipe on stdout costs the output,
// not the result.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

type hardKey struct{}

// Notify returns a context ended by the first signal and, inside it, a
// second context (see Hard) ended by the second. stop releases the signals.
func Notify(parent context.Context) (ctx context.Context, stop func()) {
	signal.Ignore(syscall.SIGPIPE)
	soft, cancelSoft := context.WithCancel(parent)
	hard, cancelHard := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-ch:
				n++
				if n == 1 {
					cancelSoft()
				} else {
					cancelHard()
				}
			case <-done:
				return
			}
		}
	}()
	ctx = context.WithValue(soft, hardKey{}, hard)
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancelSoft()
		cancelHard()
	}
}

// WithHard attaches hard as the context a second interruption ends (for
// tests and callers that stop runs themselves).
func WithHard(ctx, hard context.Context) context.Context {
	return context.WithValue(ctx, hardKey{}, hard)
}

// Hard is the context the second interruption ends; without one attached,
// it never ends.
func Hard(ctx context.Context) context.Context {
	if h, ok := ctx.Value(hardKey{}).(context.Context); ok {
		return h
	}
	return context.Background()
}
