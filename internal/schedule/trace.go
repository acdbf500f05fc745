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
// sender, recipient and amount may follow. Replay maps the trace's accounts
// onto the run's senders by first appearance (Trace.Rows). encoding/csv
// does the parsing.

// TraceColumns are the columns a trace may have.
var TraceColumns = []string{"offset_s", "kind", "sender", "recipient", "amount"}

// maxTraceRows bounds what a trace may hold (a day at 100 arrivals/s).
const maxTraceRows = 10_000_000

// Trace is a read trace: its arrival times and, when it names them, each
// arrival's accounts, kind and amount.
type Trace struct {
	Times []time.Duration
	// Rows, one per time, when the trace has a kind, sender, recipient or
	// amount column; nil otherwise.
	Rows []Row
	// Kinds names Row.Kind: kind k is Kinds[k-1].
	Kinds []string
	// Accounts is how many distinct accounts the trace names.
	Accounts int
}

// Row is one arrival's payment as the trace gives it. Accounts are numbered
// by first appearance in the trace (sender before recipient on a row), so
// the mapping onto a run's senders is deterministic.
type Row struct {
	Sender, Recipient int32  // -1: not given
	Kind              uint8  // 0: not given
	Amount            uint64 // 0: not given
}

// ReadTrace reads a trace; errors name the line.
func ReadTrace(r io.Reader) (*Trace, error) { return ReadTraceSized(r, 0) }

// ReadTraceSized reads a trace of about rows rows: its slices are made that
// size at once, so a 10-million-row trace is not copied while it grows
// (which had doubled its memory).
func ReadTraceSized(r io.Reader, rows int) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("line 1: no header (%v), expected columns such as offset_s", err)
	}
	col := map[string]int{}
	for i, h := range head {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a UTF-8 byte order mark (spreadsheets write one)
		}
		h = strings.TrimSpace(h)
		if _, twice := col[h]; twice {
			return nil, fmt.Errorf("line 1: column %q twice, expected each column once", h)
		}
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
	rows = min(max(rows, 0), maxTraceRows)
	tr := &Trace{Times: make([]time.Duration, 0, rows)}
	if len(col) > 1 {
		tr.Rows = make([]Row, 0, rows)
	}
	ids := map[string]int32{}
	account := func(v string) int32 {
		v = strings.TrimSpace(v)
		if v == "" {
			return -1
		}
		id, ok := ids[v]
		if !ok {
			id = int32(len(ids))
			ids[v] = id
		}
		return id
	}
	kinds := map[string]uint8{}
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
		row := Row{Sender: -1, Recipient: -1}
		if i, ok := col["amount"]; ok && strings.TrimSpace(rec[i]) != "" {
			if row.Amount, err = strconv.ParseUint(strings.TrimSpace(rec[i]), 10, 64); err != nil || row.Amount == 0 {
				return nil, fmt.Errorf("line %d: amount %q, expected a whole number above 0", line, rec[i])
			}
		}
		if i, ok := col["kind"]; ok {
			if k := strings.TrimSpace(rec[i]); k != "" {
				id, ok := kinds[k]
				if !ok {
					if len(kinds) == 255 || !validKind(k) {
						return nil, fmt.Errorf("line %d: kind %q, expected a payment kind such as send or multi_send (at most 255 kinds, lower-case letters, digits, _)", line, k)
					}
					id = uint8(len(kinds) + 1)
					kinds[k] = id
					tr.Kinds = append(tr.Kinds, k)
				}
				row.Kind = id
			}
		}
		if i, ok := col["sender"]; ok {
			row.Sender = account(rec[i])
		}
		if i, ok := col["recipient"]; ok {
			row.Recipient = account(rec[i])
		}
		if len(tr.Times) == maxTraceRows {
			return nil, fmt.Errorf("line %d: more than %d arrivals, expected at most that many", line, maxTraceRows)
		}
		tr.Times, prev = append(tr.Times, t), t
		if len(col) > 1 {
			tr.Rows = append(tr.Rows, row)
		}
	}
	if len(tr.Times) == 0 {
		return nil, fmt.Errorf("no arrivals, expected at least one row after the header")
	}
	tr.Accounts = len(ids)
	return tr, nil
}

func validKind(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return len(k) <= 32
}

// Row is arrival k's row (a zero-value row when the trace names nothing).
func (tr *Trace) Row(k uint64) (Row, bool) {
	if tr == nil || tr.Rows == nil || k >= uint64(len(tr.Rows)) {
		return Row{Sender: -1, Recipient: -1}, false
	}
	return tr.Rows[k], true
}

// Kind is the name of a row's kind ("" when not given).
func (tr *Trace) Kind(r Row) string {
	if r.Kind == 0 {
		return ""
	}
	return tr.Kinds[r.Kind-1]
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

// Rescale replays a trace speed times faster (2: in half the time), and,
// with rate > 0, at that mean rate: each arrival is kept a whole number of
// times plus once more with the fractional part's probability (seeded), so
// the trace's shape stays; a kept arrival keeps its row.
func Rescale(tr *Trace, speed, rate float64, seed int64) *Trace {
	if speed == 1 && rate <= 0 {
		return tr // as it is: no copy of 10 million times
	}
	out := &Trace{Times: make([]time.Duration, 0, len(tr.Times)), Kinds: tr.Kinds, Accounts: tr.Accounts}
	for _, t := range tr.Times {
		out.Times = append(out.Times, time.Duration(float64(t)/speed))
	}
	if rate <= 0 || len(out.Times) == 0 {
		out.Rows = tr.Rows
		return out
	}
	span := float64(out.Times[len(out.Times)-1]/time.Second + 1) // the whole seconds the arrivals span
	f := rate * span / float64(len(out.Times))
	rng := rand.New(rand.NewSource(seed))
	times := make([]time.Duration, 0, int(float64(len(out.Times))*f)+1)
	var rows []Row
	for i, t := range out.Times {
		n := int(f)
		if rng.Float64() < f-float64(n) {
			n++
		}
		for ; n > 0; n-- {
			times = append(times, t)
			if tr.Rows != nil {
				rows = append(rows, tr.Rows[i])
			}
		}
	}
	out.Times, out.Rows = times, rows
	return out
}

// TraceTail is how long the dispatcher waits at least after a trace's last
// arrival for a gathered batch holding it to leave (the longest gathering
// interval is 20 ms). It is grace, not load: no second of it is steady.
const TraceTail = 250 * time.Millisecond

// TraceProfile is the rate of times second by second: what judging the
// load (was it all sent?) compares with. The load lasts to the end of the
// second holding the last arrival: an empty tail second would dilute the
// offered rate (a 5,000/s trace read 4,444/s).
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
