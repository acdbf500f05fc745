// Package schedule says when each payment of an open-model load is due. It is
// pure arithmetic on elapsed time: no clocks, no goroutines, so it is tested
// in virtual time.
package schedule

import (
	"math"
	"math/rand"
	"time"
)

// segment is a stretch where the rate moves linearly from r0 to r1.
type segment struct {
	start, end float64 // seconds since the load began
	r0, r1     float64 // arrivals per second at start and end
	cum0       float64 // expected arrivals before start
}

// Profile is a piecewise-linear arrival rate over the load phase.
type Profile struct{ segs []segment }

// Stage is one segment: the rate reaches Target over Duration, linearly or,
// with Step, at once.
type Stage struct {
	Duration time.Duration
	Target   float64
	Step     bool
}

// Constant is a fixed rate for d.
func Constant(rate float64, d time.Duration) Profile {
	return FromStages(rate, []Stage{{Duration: d, Target: rate, Step: true}})
}

// FromStages builds a profile starting at rate initial.
func FromStages(initial float64, stages []Stage) Profile {
	var p Profile
	t, r, cum := 0.0, initial, 0.0
	for _, st := range stages {
		d := st.Duration.Seconds()
		s := segment{start: t, end: t + d, r0: r, r1: st.Target, cum0: cum}
		if st.Step {
			s.r0 = st.Target
		}
		cum += (s.r0 + s.r1) / 2 * d
		p.segs = append(p.segs, s)
		t, r = s.end, st.Target
	}
	return p
}

// Steps holds from, from+by, ... up to to, each for every.
func Steps(from, to, by float64, every time.Duration) Profile {
	var st []Stage
	for r := from; r <= to+1e-9; r += by {
		st = append(st, Stage{Duration: every, Target: r, Step: true})
	}
	return FromStages(from, st)
}

// Scale is p with every rate times f: a segment's share of a load spread
// over several generators (its expected arrivals, for target rates and
// shortfalls).
func (p Profile) Scale(f float64) Profile {
	q := Profile{segs: make([]segment, len(p.segs))}
	for i, s := range p.segs {
		s.r0, s.r1, s.cum0 = s.r0*f, s.r1*f, s.cum0*f
		q.segs[i] = s
	}
	return q
}

// Duration is the length of the load phase.
func (p Profile) Duration() time.Duration {
	if len(p.segs) == 0 {
		return 0
	}
	return seconds(p.segs[len(p.segs)-1].end)
}

// Peak is the highest rate the profile reaches.
func (p Profile) Peak() float64 {
	peak := 0.0
	for _, s := range p.segs {
		peak = max(peak, s.r0, s.r1)
	}
	return peak
}

// Total is the expected number of arrivals over the whole profile.
func (p Profile) Total() float64 { return p.Cumulative(p.Duration()) }

// RateAt is the rate at t.
func (p Profile) RateAt(t time.Duration) float64 {
	x := t.Seconds()
	for _, s := range p.segs {
		if x < s.end {
			return s.r0 + (s.r1-s.r0)*(x-s.start)/(s.end-s.start)
		}
	}
	return 0
}

// Cumulative is the expected number of arrivals in [0, t).
func (p Profile) Cumulative(t time.Duration) float64 {
	x := t.Seconds()
	for _, s := range p.segs {
		if x < s.end {
			dt := x - s.start
			k := (s.r1 - s.r0) / (s.end - s.start)
			return s.cum0 + s.r0*dt + k*dt*dt/2
		}
	}
	if len(p.segs) == 0 {
		return 0
	}
	s := p.segs[len(p.segs)-1]
	return s.cum0 + (s.r0+s.r1)/2*(s.end-s.start)
}

// At is the time when the cumulative count reaches n; ok is false when that
// is at or past the end of the profile.
func (p Profile) At(n float64) (time.Duration, bool) {
	for _, s := range p.segs {
		d := s.end - s.start
		segCount := (s.r0 + s.r1) / 2 * d
		if n >= s.cum0+segCount {
			continue
		}
		m := n - s.cum0
		if m <= 0 {
			return seconds(s.start), true
		}
		k := (s.r1 - s.r0) / d
		// Solve r0*dt + k*dt^2/2 = m in the cancellation-free form.
		disc := s.r0*s.r0 + 2*k*m
		if disc < 0 {
			disc = 0
		}
		den := s.r0 + math.Sqrt(disc)
		if den <= 0 {
			continue
		}
		return seconds(s.start + 2*m/den), true
	}
	return 0, false
}

func seconds(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

// Index is the number of the arrival Next returned last, counted over the
// whole schedule (every segment's): a trace's row.
func (a *Arrivals) Index() uint64 { return a.i - 1 }

// Arrivals yields the intended send time of each payment in order. Uniform
// arrivals are evenly spaced in the cumulative count; Poisson arrivals add
// exponential gaps to it (time-rescaling), so both follow ramps exactly.
type Arrivals struct {
	p       Profile
	poisson bool
	rng     *rand.Rand
	n       float64
	i       uint64
	times   []time.Duration // a trace's, when replaying one
	// seg, of segs, is the share this generator sends: arrivals k with
	// k mod segs == seg, so segments that each take theirs send the whole
	// schedule exactly once between them (k6's execution segments).
	seg, segs uint64
}

// Segment makes a yield only its share, segment i of n, of the arrivals.
func (a *Arrivals) Segment(i, n int) *Arrivals {
	a.seg, a.segs = uint64(i), uint64(n)
	return a
}

// NewArrivals iterates over p; seed makes Poisson arrivals reproducible.
func NewArrivals(p Profile, poisson bool, seed int64) *Arrivals {
	a := &Arrivals{p: p, poisson: poisson, rng: rand.New(rand.NewSource(seed))}
	if poisson {
		a.n = a.rng.ExpFloat64()
	}
	return a
}

// Next returns the next intended time, or false after the last.
func (a *Arrivals) Next() (time.Duration, bool) {
	if a.segs <= 1 {
		return a.next()
	}
	for {
		k := a.i
		t, ok := a.next()
		if !ok || k%a.segs == a.seg {
			return t, ok
		}
	}
}

func (a *Arrivals) next() (time.Duration, bool) {
	if a.times != nil {
		if a.i >= uint64(len(a.times)) {
			return 0, false
		}
		a.i++
		return a.times[a.i-1], true
	}
	t, ok := a.p.At(a.n)
	if !ok {
		return 0, false
	}
	a.i++
	if a.poisson {
		a.n += a.rng.ExpFloat64()
	} else {
		a.n = float64(a.i)
	}
	return t, true
}
