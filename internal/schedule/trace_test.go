package schedule

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTraceRoundTripAndErrors(t *testing.T) {
	times := []time.Duration{0, 1500 * time.Millisecond, 1500 * time.Millisecond, 2*time.Second + 1}
	var b bytes.Buffer
	if err := WriteTrace(&b, times); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTrace(&b)
	if err != nil || len(got.Times) != len(times) || got.Times[3] != times[3] || got.Rows != nil {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Accounts are numbered by first appearance, sender before recipient.
	tr, err := ReadTrace(strings.NewReader("sender,offset_s,amount,recipient,kind\nalice,0.5,10,carol,send\nbob,0.75,,alice,multi_send\ncarol,1,3,,\n"))
	if err != nil || len(tr.Times) != 3 || tr.Times[1] != 750*time.Millisecond || tr.Accounts != 3 ||
		tr.Rows[0] != (Row{Sender: 0, Recipient: 1, Kind: 1, Amount: 10}) || tr.Rows[1] != (Row{Sender: 2, Recipient: 0, Kind: 2}) ||
		tr.Rows[2] != (Row{Sender: 1, Recipient: -1, Amount: 3}) || tr.Kind(tr.Rows[1]) != "multi_send" || tr.Kind(tr.Rows[2]) != "" {
		t.Errorf("optional columns: %+v %v", tr, err)
	}
	// A spreadsheet's UTF-8 byte order mark before the header is no part
	// of the first column's name (issue 52: refused as "\ufeffoffset_s").
	if tr, err := ReadTrace(strings.NewReader("\ufeffoffset_s,kind\n1,send\n")); err != nil || len(tr.Times) != 1 {
		t.Errorf("a header after a byte order mark: %v", err)
	}
	for in, want := range map[string]string{
		"":                         "line 1: no header",
		"when\n1\n":                `line 1: column "when"`,
		"sender\nalice\n":          "line 1: no offset_s column",
		"offset_s\n1\n0.5\n":       "line 3: offset_s 0.5 is before",
		"offset_s\n-1\n":           `line 2: offset_s "-1"`,
		"offset_s\nNaN\n":          `line 2: offset_s "NaN"`,
		"offset_s,amount\n1,ten\n": `line 2: amount "ten"`,
		"offset_s\n":               "no arrivals",
		"offset_s,amount\n1,2,3\n": "line 2:",
		"offset_s,amount\n1,0\n":   `line 2: amount "0"`,
		"offset_s,kind\n1,Send!\n": `line 2: kind "Send!"`,
		// Issue 52: a column named twice.
		"offset_s,offset_s\n1,2\n": `line 1: column "offset_s" twice`,
	} {
		if _, err := ReadTrace(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestRescale(t *testing.T) {
	var times []time.Duration
	for i := 0; i < 1000; i++ {
		times = append(times, time.Duration(i)*10*time.Millisecond) // 100/s for 10 s
	}
	rows := make([]Row, len(times))
	for i := range rows {
		rows[i] = Row{Sender: int32(i % 7), Recipient: -1, Amount: uint64(i + 1)}
	}
	fast := Rescale(&Trace{Times: times}, 2, 0, 1).Times
	if len(fast) != 1000 || fast[999] != times[999]/2 {
		t.Fatalf("speed 2: %d arrivals, last at %s", len(fast), fast[len(fast)-1])
	}
	more := Rescale(&Trace{Times: times, Rows: rows}, 1, 250, 1)
	if n := len(more.Times); n < 2400 || n > 2600 || len(more.Rows) != n {
		t.Errorf("rate 250 over 10 s: %d arrivals (%d rows), want about 2500", n, len(more.Rows))
	}
	for i, r := range more.Rows { // each kept arrival keeps its own row
		if src := int(r.Amount - 1); times[src] != more.Times[i] || r.Sender != int32(src%7) {
			t.Fatalf("arrival %d at %s carries row %+v", i, more.Times[i], r)
		}
	}
	p := TraceProfile(times)
	if p.Duration() != 10*time.Second || p.Total() != 1000 { // the last arrival is 10 ms before 10 s: no empty tail second
		t.Errorf("profile: %s, %g arrivals", p.Duration(), p.Total())
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add([]byte("offset_s,sender\n0.1,a\n0.2,b\n"))
	f.Add([]byte("offset_s\n1e3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadTrace(bytes.NewReader(b))
		if err != nil {
			return
		}
		times := tr.Times
		if tr.Rows != nil && len(tr.Rows) != len(times) {
			t.Fatalf("%d rows for %d times", len(tr.Rows), len(times))
		}
		for _, r := range tr.Rows {
			if r.Sender >= int32(tr.Accounts) || r.Recipient >= int32(tr.Accounts) || int(r.Kind) > len(tr.Kinds) {
				t.Fatalf("row %+v out of range (%d accounts, kinds %v)", r, tr.Accounts, tr.Kinds)
			}
		}
		for i := 1; i < len(times); i++ {
			if times[i] < times[i-1] || times[i] < 0 {
				t.Fatalf("times out of order: %v", times)
			}
		}
	})
}
