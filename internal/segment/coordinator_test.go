package segment

import (
	"context"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Segments read the controller's clock, agree on one start, and stream
// their files: appended bytes and rewritten files arrive as they are.
func TestCoordinatorStartsTogetherAndTakesFiles(t *testing.T) {
	c, err := NewCoordinator("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Out = t.TempDir()
	ctx := context.Background()
	starts := make([]time.Time, 2)
	rtts := make([]float64, 2)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &Client{URL: c.URL(), Index: i}
			clk, err := cl.Measure(ctx)
			if err != nil || clk.RTTMs <= 0 || math.Abs(clk.OffsetMs) > clk.RTTMs+1 {
				t.Errorf("segment %d: clock %+v, %v", i, clk, err)
			}
			rtts[i] = clk.RTTMs
			if starts[i], err = cl.Ready(ctx, clk); err != nil {
				t.Errorf("segment %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	// Each start is as good as its clock's offset, known within half its
	// round trip: together within half of both (and 5 ms on a quiet one).
	tol := time.Duration((5+(rtts[0]+rtts[1])/2)*1e6) * time.Nanosecond
	if d := starts[0].Sub(starts[1]); d > tol || d < -tol || time.Until(starts[0]) > Lead {
		t.Fatalf("starts %v and %v, %v from now", starts[0], starts[1], time.Until(starts[0]))
	}
	at, err := c.Wait(ctx)
	if err != nil || !at.Equal(c.Start()) {
		t.Fatalf("Wait: %v %v", at, err)
	}

	dir := t.TempDir()
	m := &Mirror{Client: &Client{URL: c.URL(), Index: 1}, Dir: dir}
	write := func(name, s string, appendTo bool) {
		flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if appendTo {
			flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(filepath.Join(dir, name), flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	write("series.jsonl", "{\"t\":1}\n{\"t\":2", true) // a line cut short, for now
	write("result.json", `{"status":"running"}`, false)
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	write("series.jsonl", "}\n{\"t\":3}\n", true)
	time.Sleep(10 * time.Millisecond) // a new modification time
	write("result.json", `{"status":"complete"}`, false)
	write("report.html", "<html>", false) // not sent: the controller writes its own
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	got := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(Dir(c.Out, 1), name))
		return string(b)
	}
	if s := got("series.jsonl"); s != "{\"t\":1}\n{\"t\":2}\n{\"t\":3}\n" {
		t.Errorf("series arrived as %q", s)
	}
	if s := got("result.json"); s != `{"status":"complete"}` {
		t.Errorf("result arrived as %q", s)
	}
	if _, err := os.Stat(filepath.Join(Dir(c.Out, 1), "report.html")); err == nil {
		t.Error("report.html was sent")
	}
	for _, q := range []string{"segment=1&name=../x&offset=0", "segment=7&name=x&offset=0", "segment=0&name=.reserve&offset=0", "segment=0&name=x&offset=-1"} {
		resp, err := http.Post(c.URL()+"/file?"+q, "application/octet-stream", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", q, resp.Status)
		}
	}
}
