package scenario

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpslab/tpslab/internal/schedule"
)

// Profile is the open-model arrival profile the load describes (a trace's
// second by second).
func (l Load) Profile() schedule.Profile {
	switch {
	case l.Trace != "":
		times, _ := l.TraceTimes()
		return schedule.TraceProfile(times)
	case l.Steps != nil:
		return schedule.Steps(l.Steps.From, l.Steps.To, l.Steps.By, l.Steps.Every.D())
	case len(l.Stages) > 0:
		st := make([]schedule.Stage, len(l.Stages))
		for i, s := range l.Stages {
			st[i] = schedule.Stage{Duration: s.Duration.D(), Target: s.Target, Step: s.Ramp == "step"}
		}
		return schedule.FromStages(l.Rate, st)
	}
	return schedule.Constant(l.Rate, l.Duration.D())
}

// Arrivals are the open model's intended send times: the profile's, or the
// trace's.
func (l Load) Arrivals(seed int64) *schedule.Arrivals {
	var a *schedule.Arrivals
	if l.Trace != "" {
		times, _ := l.TraceTimes()
		a = schedule.FromTimes(times)
	} else {
		a = schedule.NewArrivals(l.Profile(), l.Arrival == "poisson", seed)
	}
	if sg := l.Segment; sg != nil && sg.Count > 1 {
		a.Segment(sg.Index, sg.Count)
	}
	return a
}

var traces sync.Map // "path speed rate" -> *schedule.Trace: a trace is read once

// TraceTimes reads load.trace's arrival times, rescaled by trace_speed and
// trace_rate.
func (l Load) TraceTimes() ([]time.Duration, error) {
	tr, err := l.ReadTrace()
	if tr == nil || err != nil {
		return nil, err
	}
	return tr.Times, nil
}

// ReadTrace reads load.trace, rescaled by trace_speed and trace_rate; nil
// without a trace.
func (l Load) ReadTrace() (*schedule.Trace, error) {
	if l.Trace == "" {
		return nil, nil
	}
	speed := l.TraceSpeed
	if speed == 0 {
		speed = 1
	}
	key := fmt.Sprintf("%s %g %g", l.Trace, speed, l.TraceRate)
	if v, ok := traces.Load(key); ok {
		return v.(*schedule.Trace), nil
	}
	f, err := os.Open(l.Trace)
	if err != nil {
		return nil, fmt.Errorf("load.trace: %v", err)
	}
	defer f.Close()
	lines, err := countLines(f)
	if err != nil {
		return nil, fmt.Errorf("load.trace: %v", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("load.trace: %v", err)
	}
	tr, err := schedule.ReadTraceSized(bufio.NewReaderSize(f, 1<<20), lines)
	if err != nil {
		return nil, fmt.Errorf("load.trace: %s: %v", l.Trace, err)
	}
	tr = schedule.Rescale(tr, speed, l.TraceRate, 1)
	traces.Store(key, tr)
	return tr, nil
}

// countLines counts newlines, to size a trace's slices before reading it
// (a fast first pass: the file is in the page cache for the second).
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// MaxOffers is the most payments the load can offer: the profile's total for
// the open model, every user's paced starts for the closed one (unbounded,
// +Inf, for closed users without pacing).
func (l Load) MaxOffers() float64 {
	if l.Model == Open {
		return math.Ceil(l.Profile().Total()*l.Segment.Share()) + 1
	}
	if l.Pacing <= 0 {
		return math.Inf(1)
	}
	return float64(l.Users) * (math.Floor(float64(l.Duration)/float64(l.Pacing)) + 2)
}

// presignedBytes is a generous estimate of one presigned payment in memory:
// the signed bytes (136 + chain id + padding for the ledger) and its slice.
func presignedBytes(padding int) float64 { return float64(136 + MaxChainIDLen + padding + 24) }

// PresignEstimate is the memory a presigned plan needs, in bytes (0 for
// live or raw workloads, which sign as they go).
func (s *Scenario) PresignEstimate() float64 {
	if s.Workload.Mode != Presigned || s.Workload.Kind == "raw" {
		return 0
	}
	return s.Load.MaxOffers() * presignedBytes(s.Workload.Padding)
}

func (s *Scenario) checkMemory() error {
	est, limit := s.PresignEstimate(), float64(MemoryLimit())
	if est > limit {
		return fmt.Errorf("workload.mode: presigned: %.0f payments need about %s, more than the limit of %s (half of this machine's memory); use --mode live, or a lower rate or shorter duration",
			s.Load.MaxOffers(), Bytes(est), Bytes(limit))
	}
	return nil
}

// MemoryLimit is what a plan may use: half of the machine's memory, or of the
// cgroup's limit when that is lower.
func MemoryLimit() uint64 {
	total := uint64(8 << 30) // when /proc is unreadable
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64); err == nil {
					total = kb << 10
				}
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && v < total {
			total = v
		}
	}
	return total / 2
}

// Bytes prints a byte count for people (1.5 GB).
func Bytes(b float64) string {
	for _, u := range []string{"B", "kB", "MB", "GB", "TB"} {
		if b < 1000 || u == "TB" {
			if u == "B" {
				return fmt.Sprintf("%.0f %s", b, u)
			}
			return fmt.Sprintf("%.1f %s", b, u)
		}
		b /= 1000
	}
	return ""
}
