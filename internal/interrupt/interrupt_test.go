package interrupt

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// The first signal (here SIGHUP, a closed terminal) ends the soft context
// only; the second ends the hard one.
func TestTwoLevels(t *testing.T) {
	ctx, stop := Notify(context.Background())
	defer stop()
	hard := Hard(ctx)
	syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not end the run's context")
	}
	if hard.Err() != nil {
		t.Fatal("one signal ended the hard context")
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	select {
	case <-hard.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not end the hard context")
	}
	if Hard(context.Background()).Err() != nil {
		t.Fatal("without signals, Hard never ends")
	}
}
