package schedule

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A trace is a recorded arrival schedule (docs/scenario.md, "Traces"): a CSV
// file whose header names its columns, one arrival per row. offset_s, the
// seconds since the trace began, is required and must not decrease; kind,
// sender, recipient and amount may follow, and are checked but not yet used
// in replay (every payment is the workload's own, from its own senders).
// encoding/csv does the parsing.

// TraceColumns are the columns a trace may have.
var TraceColumns = []string{"offset_s", "kind", "sender", "recipient", "amount"}

// maxTraceRows bounds what a trace may hold (a day at 100 arrivals/s).
const maxTraceRows = 10_000_000

// ReadTrace reads a trace's arrival times; errors name the line.
func ReadTrace(r io.Reader) ([]time.Duration, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("line 1: no header (%v), expected columns such as offset_s", err)
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(h)
		known := false
		for _, c := range TraceColumns {
			known = known || h == c
		}
		if !known {
			return nil, fmt.Errorf("line 1: column %q, expected some of %s", h, strings.Join(TraceColumns, ", "))
		}
		col[h] = i
	}
	off, ok := col["offset_s"]
	if !ok {
		return nil, fmt.Errorf("line 1: no offset_s column, expected the arrival's seconds since the trace began")
	}
	var times []time.Duration
	prev := time.Duration(-1)
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[off]), 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e7 {
			return nil, fmt.Errorf("line %d: offset_s %q, expected seconds since the trace began (0 or more)", line, rec[off])
		}
		t := time.Duration(math.Round(v * float64(time.Second)))
		if t < prev {
			return nil, fmt.Errorf("line %d: offset_s %s is before the previous row's, expected arrivals in order", line, rec[off])
		}
		if i, ok := col["amount"]; ok && rec[i] != "" {
			if _, err := strconv.ParseUint(strings.TrimSpace(rec[i]), 10, 64); err != nil {
				return nil, fmt.Errorf("line %d: amount %q, expected a whole number", line, rec[i])
			}
		}
		if len(times) == maxTraceRows {
			return nil, fmt.Errorf("line %d: more than %d arrivals, expected at most that many", line, maxTraceRows)
		}
		times, prev = append(times, t), t
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("no arrivals, expected at least one row after the header")
	}
	return times, nil
}

// WriteTrace writes arrival times as a trace, to the nanosecond.
func WriteTrace(w io.Writer, times []time.Duration) error {
	if _, err := io.WriteString(w, "offset_s\n"); err != nil {
		return err
	}
	b := make([]byte, 0, 32)
	for _, t := range times {
		b = strconv.AppendFloat(b[:0], t.Seconds(), 'f', 9, 64)
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Rescale replays times speed times faster (2: in half the time), and, with
// rate > 0, at that mean rate: each arrival is kept a whole number of times
// plus once more with the fractional part's probability (seeded), so the
// trace's shape stays.
func Rescale(times []time.Duration, speed, rate float64, seed int64) []time.Duration {
	out := make([]time.Duration, 0, len(times))
	for _, t := range times {
		out = append(out, time.Duration(float64(t)/speed))
	}
	if rate <= 0 || len(out) == 0 {
		return out
	}
	span := float64(out[len(out)-1]/time.Second + 1) // whole seconds, as TraceProfile lasts
	f := rate * span / float64(len(out))
	rng := rand.New(rand.NewSource(seed))
	scaled := make([]time.Duration, 0, int(float64(len(out))*f)+1)
	for _, t := range out {
		n := int(f)
		if rng.Float64() < f-float64(n) {
			n++
		}
		for ; n > 0; n-- {
			scaled = append(scaled, t)
		}
	}
	return scaled
}

// TraceProfile is the rate of times second by second: what judging the
// load (was it all sent?) compares with. The load lasts to the second after
// the last arrival.
func TraceProfile(times []time.Duration) Profile {
	if len(times) == 0 {
		return Profile{}
	}
	secs := int(times[len(times)-1]/time.Second) + 1
	counts := make([]float64, secs)
	for _, t := range times {
		counts[int(t/time.Second)]++
	}
	st := make([]Stage, secs)
	for i, c := range counts {
		st[i] = Stage{Duration: time.Second, Target: c, Step: true}
	}
	return FromStages(counts[0], st)
}

// FromTimes yields the given arrival times, in order.
func FromTimes(times []time.Duration) *Arrivals {
	if !sort.SliceIsSorted(times, func(i, j int) bool { return times[i] < times[j] }) {
		times = append([]time.Duration(nil), times...)
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	}
	return &Arrivals{times: times}
}
