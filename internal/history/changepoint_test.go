package history

import (
	"math"
	"math/rand"
	"testing"
)

// The incremental statistic equals the definition, split by split.
func TestBestSplitMatchesTheDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 20; trial++ {
		xs := make([]float64, 5+rng.Intn(20))
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
		wantTau, wantQ := 0, 0.0
		for tau := MinSegment; tau <= len(xs)-MinSegment; tau++ {
			l, r := xs[:tau], xs[tau:]
			var b, wl, wr float64
			for _, x := range l {
				for _, y := range r {
					b += math.Abs(x - y)
				}
			}
			for i := range l {
				for j := i + 1; j < len(l); j++ {
					wl += math.Abs(l[i] - l[j])
				}
			}
			for i := range r {
				for j := i + 1; j < len(r); j++ {
					wr += math.Abs(r[i] - r[j])
				}
			}
			m, k := float64(len(l)), float64(len(r))
			q := m * k / (m + k) * (2*b/(m*k) - wl/(m*(m-1)/2) - wr/(k*(k-1)/2))
			if q > wantQ {
				wantTau, wantQ = tau, q
			}
		}
		tau, q := bestSplit(xs)
		if tau != wantTau || math.Abs(q-wantQ) > 1e-9 {
			t.Fatalf("%v: split %d (q %.6f), want %d (q %.6f)", xs, tau, q, wantTau, wantQ)
		}
	}
}

// noisy is n values around 1000 with 2% noise, stepped by step (a
// fraction) from index at on.
func noisy(seed int64, n, at int, step float64) []float64 {
	rng := rand.New(rand.NewSource(seed))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 1000 * (1 + 0.02*rng.NormFloat64())
		if at >= 0 && i >= at {
			xs[i] *= 1 + step
		}
	}
	return xs
}

// A planted 20% step is found at its entry, for every seed of the noise;
// noise alone gives none for at least 90% of seeds (5% is the test's size).
func TestChangePoints(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		for _, at := range []int{4, 7, 9} {
			cps := ChangePoints(noisy(seed, 12, at, -0.2), 1)
			if len(cps) != 1 || cps[0] != at {
				t.Errorf("seed %d: a 20%% drop at entry %d found at %v", seed, at, cps)
			}
		}
	}
	false := 0
	for seed := int64(1); seed <= 40; seed++ {
		if cps := ChangePoints(noisy(seed, 12, -1, 0), 1); len(cps) > 0 {
			false++
		}
	}
	if false > 4 {
		t.Errorf("noise alone gave change points in %d of 40 histories", false)
	}
}
