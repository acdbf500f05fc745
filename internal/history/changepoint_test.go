package history

import (
	"context"
	"math"
	"math/rand"
	"testing"
)

// The incremental statistic equals the definition, split by split.
func TestBestSplitMatchesTheDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 20; trial++ {
		xs := make([]float64, 5+rng.Intn(40))
		for i := range xs {
			xs[i] = rng.NormFloat64() - 0.5
			if trial%3 == 0 {
				xs[i] = math.Round(xs[i] * 2) // ties and negative values
			}
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
			cps := ChangePoints(context.Background(), noisy(seed, 12, at, -0.2), 1)
			if len(cps) != 1 || cps[0] != at {
				t.Errorf("seed %d: a 20%% drop at entry %d found at %v", seed, at, cps)
			}
		}
	}
	false := 0
	for seed := int64(1); seed <= 40; seed++ {
		if cps := ChangePoints(context.Background(), noisy(seed, 12, -1, 0), 1); len(cps) > 0 {
			false++
		}
	}
	if false > 4 {
		t.Errorf("noise alone gave change points in %d of 40 histories", false)
	}
}

// A long history is analysed in well under a second (benchmark below), and
// an ended context stops the analysis at once.
func TestChangePointsStopWhenCancelled(t *testing.T) {
	xs := noisy(5, 20000, 10000, -0.2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if cps := ChangePoints(ctx, xs, 1); len(cps) != 0 {
		t.Fatalf("a cancelled analysis found %v", cps)
	}
	if cps := ChangePoints(context.Background(), noisy(5, 2000, 1000, -0.2), 1); len(cps) != 1 || cps[0] < 995 || cps[0] > 1005 {
		t.Errorf("2,000 entries, step at 1,000: change points %v", cps)
	}
}

// BenchmarkChangePoints10k is history check's work on 10,001 entries.
func BenchmarkChangePoints10k(b *testing.B) {
	xs := noisy(6, 10001, 7000, -0.1)
	for i := 0; i < b.N; i++ {
		ChangePoints(context.Background(), xs, 1)
	}
}
