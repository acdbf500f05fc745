// Package profiling takes Go profiles from the nodes' /debug/pprof over a
// window of a run: CPU in chunks (so an early end keeps what was taken),
// and allocations as the difference of two heap profiles (what was
// allocated inside the window only). It writes them beside the result and
// names the functions that used the most CPU and allocated the most bytes.
package profiling

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tpslab/tpslab/internal/report"
)

// Node is a process to profile: its name and the host:port of its
// /debug/pprof; Self (no address) is tpslab itself, profiled in-process.
type Node struct{ Name, Addr string }

// Self is the load generator's own process.
var Self = Node{Name: "tpslab"}

// chunk is the longest single CPU profile asked for: an early end loses at
// most this much.
const chunk = 10 * time.Second

// TopN is how many functions the summary names.
const TopN = 10

// Capture is a profiling session over a window.
type Capture struct {
	nodes  []Node
	cpu    bool
	allocs bool
	dir    string // the run directory
	end    time.Time
	cancel context.CancelFunc
	client *http.Client

	mu      sync.Mutex
	wg      sync.WaitGroup
	cpuProf map[string][]*profile.Profile
	alloc0  map[string]*profile.Profile
	errs    []string
	summary *report.Profiles
}

// Start begins profiling nodes until end (or until ctx ends): kinds are
// cpu and allocs; files go under dir/profiles.
func Start(ctx context.Context, nodes []Node, kinds []string, dir string, end time.Time) *Capture {
	ctx, cancel := context.WithCancel(ctx)
	c := &Capture{nodes: nodes, dir: dir, end: end, cancel: cancel, client: &http.Client{}, cpuProf: map[string][]*profile.Profile{}, alloc0: map[string]*profile.Profile{}}
	for _, k := range kinds {
		c.cpu = c.cpu || k == "cpu"
		c.allocs = c.allocs || k == "allocs"
	}
	for _, n := range nodes {
		if c.allocs {
			if p, err := c.fetch(ctx, n, "allocs"); err != nil {
				c.fail(n, "allocs", err)
			} else {
				c.alloc0[n.Name] = p
			}
		}
		if c.cpu {
			c.wg.Add(1)
			go c.cpuLoop(ctx, n)
		}
	}
	return c
}

// cpuLoop takes CPU profiles of a node back to back until the end, in
// whole seconds (what /debug/pprof/profile takes).
func (c *Capture) cpuLoop(ctx context.Context, n Node) {
	defer c.wg.Done()
	for ctx.Err() == nil {
		secs := min(chunk, time.Until(c.end)).Truncate(time.Second)
		if secs < time.Second {
			return
		}
		p, err := c.fetch(ctx, n, fmt.Sprintf("profile?seconds=%d", int(secs.Seconds())))
		if err != nil {
			if ctx.Err() == nil {
				c.fail(n, "cpu", err)
			}
			return
		}
		c.mu.Lock()
		c.cpuProf[n.Name] = append(c.cpuProf[n.Name], p)
		c.mu.Unlock()
	}
}

func (c *Capture) fail(n Node, kind string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf("%s %s profile: %v", n.Name, kind, err))
}

func (c *Capture) fetch(ctx context.Context, n Node, what string) (*profile.Profile, error) {
	if n.Addr == "" {
		return self(ctx, what)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.Addr+"/debug/pprof/"+what, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return profile.ParseData(b)
}

// Finish ends the window: it gives the CPU profiles under way a moment to
// complete (they end by the window's end; ctx bounds the wait) and cuts
// them after that, takes
// the second heap profile, writes the files and summarises them.
func (c *Capture) Finish(ctx context.Context) *report.Profiles {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(c.end) + 2*time.Second):
	case <-ctx.Done():
	}
	c.cancel()
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sum := &report.Profiles{}
	var cpuAll, allocAll, cpuSelf, allocSelf []*profile.Profile
	for _, n := range c.nodes {
		if ps := c.cpuProf[n.Name]; len(ps) > 0 {
			p, err := profile.Merge(ps)
			if err == nil {
				err = c.write(sum, n.Name+".cpu.pprof", p)
			}
			switch {
			case err != nil:
				c.fail(n, "cpu", err)
			case n.Addr == "":
				cpuSelf = append(cpuSelf, p)
			default:
				cpuAll = append(cpuAll, p)
			}
		}
		if p0 := c.alloc0[n.Name]; p0 != nil {
			p1, err := c.fetch(ctx, n, "allocs")
			var d *profile.Profile
			if err == nil {
				d, err = delta(p0, p1)
			}
			if err == nil {
				err = c.write(sum, n.Name+".allocs.pprof", d)
			}
			switch {
			case err != nil:
				c.fail(n, "allocs", err)
			case n.Addr == "":
				allocSelf = append(allocSelf, d)
			default:
				allocAll = append(allocAll, d)
			}
		}
	}
	var total float64
	sum.CPUTop, total = Top(cpuAll, "cpu", TopN)
	sum.CPUSeconds = total / 1e9
	sum.AllocTop, total = Top(allocAll, "alloc_space", TopN)
	sum.AllocBytes = total
	sum.GeneratorCPUTop, _ = Top(cpuSelf, "cpu", TopN)
	sum.GeneratorAllocTop, _ = Top(allocSelf, "alloc_space", TopN)
	sum.Errors = c.errs
	c.mu.Lock()
	c.summary = sum
	c.mu.Unlock()
	return sum
}

// Summary is Finish's result, nil before it.
func (c *Capture) Summary() *report.Profiles {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.summary
}

func (c *Capture) write(sum *report.Profiles, name string, p *profile.Profile) error {
	dir := filepath.Join(c.dir, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	sum.Files = append(sum.Files, filepath.Join("profiles", name))
	return nil
}

// self profiles this process as /debug/pprof would: "allocs" or
// "profile?seconds=N".
func self(ctx context.Context, what string) (*profile.Profile, error) {
	var buf bytes.Buffer
	if what == "allocs" {
		// The heap profile counts allocations up to the last collection;
		// a generator that allocates little may run a whole window
		// without one, and its profile came out empty (as ?gc=1 does).
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(&buf, 0); err != nil {
			return nil, err
		}
		return profile.Parse(&buf)
	}
	var secs int
	if _, err := fmt.Sscanf(what, "profile?seconds=%d", &secs); err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Duration(secs) * time.Second):
	case <-ctx.Done():
	}
	pprof.StopCPUProfile()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return profile.Parse(&buf)
}

// delta is what was allocated between two cumulative heap profiles.
func delta(before, after *profile.Profile) (*profile.Profile, error) {
	b := before.Copy()
	b.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{after, b})
	if err != nil {
		return nil, err
	}
	d.TimeNanos, d.DurationNanos = after.TimeNanos, after.TimeNanos-before.TimeNanos
	return d, nil
}

// Top sums sample type typ of the profiles by the function each sample was
// taken in (flat, as pprof -top shows it) and returns the n largest with
// their share of the total, and the total.
func Top(ps []*profile.Profile, typ string, n int) ([]report.TopFunction, float64) {
	by := map[string]float64{}
	var total float64
	for _, p := range ps {
		idx := -1
		for i, st := range p.SampleType {
			if st.Type == typ {
				idx = i
			}
		}
		if idx < 0 {
			continue
		}
		for _, s := range p.Sample {
			v := float64(s.Value[idx])
			total += v
			by[leaf(s)] += v
		}
	}
	if total <= 0 {
		return nil, 0
	}
	out := make([]report.TopFunction, 0, len(by))
	for f, v := range by {
		if v > 0 {
			out = append(out, report.TopFunction{Function: f, Percent: float64(int(1000*v/total+0.5)) / 10})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Percent != out[j].Percent {
			return out[i].Percent > out[j].Percent
		}
		return out[i].Function < out[j].Function
	})
	if len(out) > n {
		out = out[:n]
	}
	return out, total
}

// leaf is the function a sample was taken in (the innermost, inlined
// ones included).
func leaf(s *profile.Sample) string {
	if len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
		return "?"
	}
	return s.Location[0].Line[0].Function.Name
}
