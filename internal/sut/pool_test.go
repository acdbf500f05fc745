package sut

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolMovesOffDownEndpointsAndBringsThemBack(t *testing.T) {
	var answers atomic.Bool
	p := NewPool([]string{"a", "b", "c"}, func(ctx context.Context, i int) error {
		if i == 1 && answers.Load() {
			return nil
		}
		return errors.New("refused")
	})
	var mu sync.Mutex
	var events []string
	p.OnEvent(func(e Event) { mu.Lock(); events = append(events, e.Kind+" "+e.Target); mu.Unlock() })
	if i, ok := p.Pick(1); i != 1 || !ok {
		t.Fatalf("pick %d %v", i, ok)
	}
	p.Down(1, errors.New("connection refused"))
	if i, ok := p.Pick(1); i != 2 || !ok {
		t.Fatalf("pick after down: %d %v", i, ok)
	}
	p.Down(0, errors.New("x"))
	p.Down(2, errors.New("x"))
	if _, ok := p.Pick(0); ok || !p.AllDown() {
		t.Fatal("all down, yet a pick succeeded")
	}
	answers.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go p.Watch(ctx, 20*time.Millisecond)
	for p.AllDown() && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if i, ok := p.Pick(0); i != 1 || !ok {
		t.Fatalf("endpoint b did not come back: %d %v", i, ok)
	}
	st := p.EndpointStats()
	if !st[1].Up || st[0].Up || st[1].DownS <= 0 || st[1].LastError != "connection refused" {
		t.Errorf("stats %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) < 4 || events[0] != "endpoint_down b" || events[len(events)-1] != "endpoint_up b" {
		t.Errorf("events %v", events)
	}
}
