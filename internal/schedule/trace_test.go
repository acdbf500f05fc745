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
	if err != nil || len(got) != len(times) || got[3] != times[3] {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if got, err := ReadTrace(strings.NewReader("sender,offset_s,amount\nalice,0.5,10\nbob,0.75,\n")); err != nil || len(got) != 2 || got[1] != 750*time.Millisecond {
		t.Errorf("optional columns: %v %v", got, err)
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
	fast := Rescale(times, 2, 0, 1)
	if len(fast) != 1000 || fast[999] != times[999]/2 {
		t.Fatalf("speed 2: %d arrivals, last at %s", len(fast), fast[len(fast)-1])
	}
	more := Rescale(times, 1, 250, 1)
	if n := len(more); n < 2400 || n > 2600 {
		t.Errorf("rate 250 over 10 s: %d arrivals, want about 2500", n)
	}
	p := TraceProfile(times)
	if p.Duration() != 10*time.Second || p.Total() != 1000 {
		t.Errorf("profile: %s, %g arrivals", p.Duration(), p.Total())
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add([]byte("offset_s,sender\n0.1,a\n0.2,b\n"))
	f.Add([]byte("offset_s\n1e3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		times, err := ReadTrace(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 1; i < len(times); i++ {
			if times[i] < times[i-1] || times[i] < 0 {
				t.Fatalf("times out of order: %v", times)
			}
		}
	})
}
