package health

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A chain other than CometBFT (factomd) says its nodes' heights through
// Height: the watch reports how far behind each fell and the catch-up, and
// says nothing of signatures it never read.
func TestHeightNodes(t *testing.T) {
	var lead, follow atomic.Int64
	lead.Store(10)
	follow.Store(10)
	at := func(h *atomic.Int64) func(context.Context) (int64, error) {
		return func(context.Context) (int64, error) { return h.Load(), nil }
	}
	m := New([]Node{{Name: "node0", Height: at(&lead)}, {Name: "node1", Height: at(&follow)}})
	metrics := m.Metrics()
	var names []string
	for _, x := range metrics {
		names = append(names, x.Name)
	}
	if got := strings.Join(names, " "); got != "node0.behind_blocks node0.restarts node0.exits node0.log_errors node1.behind_blocks node1.restarts node1.exits node1.log_errors chain.no_progress_s" {
		t.Fatalf("metrics %s", got)
	}
	dst := make([]float64, len(metrics))
	m.Sample(context.Background(), dst)
	lead.Store(13) // node1 three blocks behind
	m.Sample(context.Background(), dst)
	if dst[4] != 3 || dst[0] != 0 {
		t.Errorf("behind_blocks node0 %v node1 %v, want 0 and 3", dst[0], dst[4])
	}
	m.LoadEnded(time.Now())
	follow.Store(13)
	m.WaitCaughtUp(context.Background(), 5*time.Second)
	h := m.Report()
	if !h.Chain || !h.Unsigned || h.BehindMax != 3 || h.CaughtUpS < 0 {
		t.Errorf("report %+v: want a chain, unsigned, 3 blocks behind at most, caught up", h)
	}
	if l := h.Line(); strings.Contains(l, "signature") || !strings.Contains(l, "max 3 blocks behind (node1") || !strings.Contains(l, "caught up in") {
		t.Errorf("line %q", l)
	}
}
