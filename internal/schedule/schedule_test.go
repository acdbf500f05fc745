package schedule

import (
	"math"
	"testing"
	"time"
)

func count(p Profile, poisson bool) (n int, last time.Duration) {
	a := NewArrivals(p, poisson, 7)
	prev := time.Duration(-1)
	for {
		t, ok := a.Next()
		if !ok {
			return n, last
		}
		if t < prev {
			panic("arrivals out of order")
		}
		prev, last = t, t
		n++
	}
}

func TestConstantRateIsExact(t *testing.T) {
	p := Constant(1000, 10*time.Second)
	n, last := count(p, false)
	if n != 10000 {
		t.Fatalf("arrivals %d, want 10000", n)
	}
	if last >= 10*time.Second || last < 9998*time.Millisecond {
		t.Fatalf("last arrival at %s", last)
	}
	// spacing is 1 ms
	a := NewArrivals(p, false, 1)
	t0, _ := a.Next()
	t1, _ := a.Next()
	if t0 != 0 || t1 != time.Millisecond {
		t.Fatalf("first arrivals at %s, %s", t0, t1)
	}
}

func TestLinearRampCount(t *testing.T) {
	// 0 -> 1000/s over 10 s: 5000 arrivals, and 1/4 of them in the first half.
	p := FromStages(0, []Stage{{Duration: 10 * time.Second, Target: 1000}})
	n, _ := count(p, false)
	if n != 5000 {
		t.Fatalf("arrivals %d, want 5000", n)
	}
	if c := p.Cumulative(5 * time.Second); math.Abs(c-1250) > 1e-6 {
		t.Fatalf("cumulative at 5s = %g, want 1250", c)
	}
	if r := p.RateAt(2500 * time.Millisecond); math.Abs(r-250) > 1e-9 {
		t.Fatalf("rate at 2.5s = %g", r)
	}
}

func TestDownRampAndInverse(t *testing.T) {
	p := FromStages(1000, []Stage{{Duration: 10 * time.Second, Target: 0}})
	for _, n := range []float64{0, 1, 100, 2500, 4999} {
		at, ok := p.At(n)
		if !ok {
			t.Fatalf("At(%g) not found", n)
		}
		if got := p.Cumulative(at); math.Abs(got-n) > 1e-6 {
			t.Fatalf("Cumulative(At(%g)) = %g", n, got)
		}
	}
	if _, ok := p.At(5000); ok {
		t.Fatal("At(total) should be past the end")
	}
}

func TestFactomSteps(t *testing.T) {
	// 1 -> 7000 by 500 every 30 s: rates 1, 501, ..., 6501 (14 steps).
	p := Steps(1, 7000, 500, 30*time.Second)
	if p.Duration() != 14*30*time.Second {
		t.Fatalf("duration %s", p.Duration())
	}
	if r := p.RateAt(31 * time.Second); r != 501 {
		t.Fatalf("rate in step 2 = %g", r)
	}
	want := 0.0
	for r := 1.0; r <= 7000; r += 500 {
		want += r * 30
	}
	if math.Abs(p.Total()-want) > 1e-6 {
		t.Fatalf("total %g, want %g", p.Total(), want)
	}
}

func TestPoissonMeanRate(t *testing.T) {
	p := Constant(2000, 20*time.Second)
	n, _ := count(p, true)
	// 40000 expected, sd 200: 5 sd is a generous bound for a fixed seed.
	if math.Abs(float64(n)-40000) > 1000 {
		t.Fatalf("poisson arrivals %d, want about 40000", n)
	}
}

// Segments of a schedule, each taking its share, send every arrival of the
// whole schedule exactly once between them, at its own time.
func TestSegmentsPartitionTheSchedule(t *testing.T) {
	p := FromStages(10, []Stage{{Duration: 3 * time.Second, Target: 500}, {Duration: 2 * time.Second, Target: 200, Step: true}})
	for _, poisson := range []bool{false, true} {
		var whole []time.Duration
		for a := NewArrivals(p, poisson, 7); ; {
			at, ok := a.Next()
			if !ok {
				break
			}
			whole = append(whole, at)
		}
		const n = 3
		seen := map[int]int{}
		for i := 0; i < n; i++ {
			k := i
			a := NewArrivals(p, poisson, 7).Segment(i, n)
			for {
				at, ok := a.Next()
				if !ok {
					break
				}
				if k >= len(whole) || whole[k] != at {
					t.Fatalf("poisson=%v segment %d: arrival %d at %v, expected the whole schedule's", poisson, i, k, at)
				}
				seen[k]++
				k += n
			}
		}
		if len(seen) != len(whole) {
			t.Fatalf("poisson=%v: segments sent %d distinct arrivals, the schedule has %d", poisson, len(seen), len(whole))
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("arrival %d sent %d times", k, c)
			}
		}
		if got, want := p.Scale(1.0/n).Total()*n, p.Total(); math.Abs(got-want) > 1e-6 {
			t.Fatalf("scaled totals %v, expected %v", got, want)
		}
	}
}
