package netem

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPlanPresets(t *testing.T) {
	nodes := []string{"node0", "node1", "node2", "node3"}
	var pairs []Pair
	for i := range nodes {
		for j := i + 1; j < len(nodes); j++ {
			pairs = append(pairs, Pair{nodes[i], nodes[j]})
		}
	}
	c, _, err := Plan("continent", nodes, pairs)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := time.Hour, time.Duration(0)
	for _, x := range c {
		lo, hi = min(lo, x.RTT), max(hi, x.RTT)
	}
	if lo != 30*time.Millisecond || hi != 80*time.Millisecond {
		t.Errorf("continent round trips %s..%s, want 30ms..80ms", lo, hi)
	}
	g, regions, err := Plan("global", nodes, pairs)
	if err != nil {
		t.Fatal(err)
	}
	if regions["node0"] != "us-east" || regions["node2"] != "ap-northeast" {
		t.Errorf("regions %v", regions)
	}
	if got := g[Pair{"node1", "node2"}].RTT; got != 237*time.Millisecond {
		t.Errorf("Frankfurt-Tokyo %s, want 237ms", got)
	}
	for a := range globalRTT {
		if RegionRTT(a[0], a[1]) != RegionRTT(a[1], a[0]) || RegionRTT(a[0], a[1]) < 50*time.Millisecond {
			t.Errorf("%v: %s / %s", a, RegionRTT(a[0], a[1]), RegionRTT(a[1], a[0]))
		}
	}
	if _, _, err := Plan("moon", nodes, pairs); err == nil {
		t.Error("an unknown topology was taken")
	}
}

func TestRates(t *testing.T) {
	for in, want := range map[string]int64{"1mbit": 1000, "500kbit": 500, "10gbit": 10_000_000, "2mbps": 16000, "1.5mbit": 1500} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1", "fast", "0mbit", "-1mbit", "1tbit"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) took it", bad)
		}
	}
	if FormatRate(1000) != "1mbit" || FormatRate(10_000_000) != "10gbit" || FormatRate(1500) != "1500kbit" {
		t.Error(FormatRate(1000), FormatRate(10_000_000), FormatRate(1500))
	}
}

// handshaker answers like a CometBFT P2P port: 35 bytes on accept, then a
// frame once 35 bytes arrive; or, with bulk, it reads everything.
func handshaker(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write(make([]byte, 35))
				buf := make([]byte, 35)
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				c.Write(make([]byte, 1044))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return l.Addr().String()
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startLinks serves one link to upstream with cond through Toxiproxy.
func startLinks(t *testing.T, upstream string, cond Conditions) *Emulation {
	e := &Emulation{Topology: "test", API: freeAddr(t)}
	e.Links = []Link{{Name: "a-b", From: "a", To: "b", Listen: freeAddr(t), Upstream: upstream, Conditions: cond}}
	e.Metrics = "http://" + e.API + "/metrics"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, e, io.Discard) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := NewControl(e).Ready(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	return e
}

// A 50 ms link measures at least 50 ms and less than the delay applied
// twice (the only upper bound that holds on a busy machine: CI measured
// 56.9 ms), and a delay added at run time shows, and goes when removed.
func TestProbeThroughALink(t *testing.T) {
	e := startLinks(t, handshaker(t), Conditions{RTT: 50 * time.Millisecond})
	rtt, err := ProbeRTT(e.Links[0].Listen, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rtt < 50*time.Millisecond || rtt >= 100*time.Millisecond {
		t.Errorf("round trip through a 50 ms link measured %s", rtt)
	}
	ctl := NewControl(e)
	if err := ctl.Set("a-b", Conditions{RTT: 250 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// Not before 250 ms, nor the delay applied twice.
	if rtt, _ := ProbeRTT(e.Links[0].Listen, 5); rtt < 250*time.Millisecond || rtt >= 500*time.Millisecond {
		t.Errorf("after a 200 ms spike: %s", rtt)
	}
	if err := ctl.Cut("a-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := ProbeRTT(e.Links[0].Listen, 1); err == nil {
		t.Error("a cut link still answers")
	}
	if err := ctl.Heal("a-b"); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Set("a-b", e.Links[0].Conditions); err != nil {
		t.Fatal(err)
	}
	if rtt, err := ProbeRTT(e.Links[0].Listen, 3); err != nil || rtt >= 100*time.Millisecond {
		t.Errorf("healed and restored: %s, %v", rtt, err)
	}
}

// A 1 Mbit/s link carries about 125 KB/s, and its counter says so.
func TestBandwidthCapsALink(t *testing.T) {
	if testing.Short() {
		t.Skip("4 s of bulk transfer")
	}
	e := startLinks(t, handshaker(t), Conditions{RateKbit: 1000})
	c, err := net.Dial("tcp", e.Links[0].Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.ReadFull(c, make([]byte, 35))
	c.Write(make([]byte, 35))
	start := time.Now()
	buf := make([]byte, 16<<10)
	sent := 0
	c.SetWriteDeadline(start.Add(4 * time.Second))
	for time.Since(start) < 4*time.Second {
		n, err := c.Write(buf)
		sent += n
		if err != nil {
			break
		}
	}
	// What the proxy took beyond what it delivered sits in its buffers and
	// the kernel's: read the delivered bytes from the link's counter. The
	// ceiling holds on any machine (a slower one delivers less in the time
	// that passed, never more), so it is the bound, and no floor is.
	got := linkCounter(t, e, "upstream")
	rate := got / time.Since(start).Seconds()
	if got == 0 || rate > 140_000 {
		t.Errorf("a 1mbit link delivered %.0f bytes/s (%d offered in 4 s), want some and at most its 125000", rate, sent)
	}
}

func linkCounter(t *testing.T, e *Emulation, dir string) float64 {
	res, err := http.Get(e.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	want := LinkBytesFamily + `{direction="` + dir + `",link="a-b"} `
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) > len(want) && line[:len(want)] == want {
			v, err := strconv.ParseFloat(line[len(want):], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in %s", want, b)
	return 0
}

// Faults act on a node's P2P links; a node without peers (geth's dev
// mode) has one link, the generator's to it, and that is the one touched.
func TestTouchingLeavesClientLinksToPeerlessNodes(t *testing.T) {
	e := Emulation{Links: []Link{
		{Name: "node0-node1", From: "node0", To: "node1"},
		{Name: Client + "-node0", From: Client, To: "node0"},
		{Name: Client + "-geth", From: Client, To: "geth"},
	}}
	names := func(ls []Link) (out []string) {
		for _, l := range ls {
			out = append(out, l.Name)
		}
		return out
	}
	if got := names(e.Touching("node0")); len(got) != 1 || got[0] != "node0-node1" {
		t.Errorf("node0 (a peer): %v, want its P2P link only", got)
	}
	if got := names(e.Touching("geth")); len(got) != 1 || got[0] != Client+"-geth" {
		t.Errorf("geth (no peers): %v, want the generator's link to it", got)
	}
}
