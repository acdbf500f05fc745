package history

import (
	"context"
	"math"
	"math/rand"
	"sort"
)

// Change detection is e-divisive (Matteson and James, "A Nonparametric
// Approach for Multiple Change Point Analysis of Multivariate Data", JASA
// 2014), the method MongoDB's performance CI (Daly et al., ICPE 2020),
// Hunter / Apache Otava and Nyrkiö run over benchmark histories. It
// makes no assumption on the noise's distribution: the statistic is the
// energy distance between the points before and after a split, and a split
// is kept only when a permutation test says the series' order matters.
// Written here because no maintained Go library implements it.

// Detect options.
const (
	Alpha        = 0.05 // significance of each change point
	Permutations = 499
	MinSegment   = 2 // points on each side of a change
)

// ChangePoints returns the indexes at which a new segment begins (sorted),
// found by bisecting: the most significant split of any segment first,
// until no split is significant. seed fixes the permutations. It stops
// early, returning what it found, when ctx ends (a long history and Ctrl-C).
func ChangePoints(ctx context.Context, xs []float64, seed int64) []int {
	rng := rand.New(rand.NewSource(seed))
	var cps []int
	var sp splitter
	for ctx.Err() == nil {
		bounds := append([]int{0}, cps...)
		bounds = append(bounds, len(xs))
		best, bestQ, bestSeg := -1, 0.0, [2]int{}
		for i := 0; i+1 < len(bounds); i++ {
			lo, hi := bounds[i], bounds[i+1]
			if tau, q := sp.best(xs[lo:hi]); tau > 0 && q > bestQ {
				best, bestQ, bestSeg = lo+tau, q, [2]int{lo, hi}
			}
		}
		// Each round searches every segment for its best split, so the
		// level is shared among them (Bonferroni): a long history does not
		// collect false changes in its noise.
		if best < 0 || !sp.significant(ctx, xs[bestSeg[0]:bestSeg[1]], bestQ, Alpha/float64(len(bounds)-1), rng) {
			return cps
		}
		cps = append(cps, best)
		sort.Ints(cps)
	}
	return cps
}

// bestSplit is the split τ of seg (seg[:τ], seg[τ:]) with the largest
// statistic q = (m·k/(m+k))·E, where E is the energy distance of the two
// sides (α = 1): 2·mean|x−y| − mean|x−x'| − mean|y−y'|. 0 when seg is too
// short to split.
func bestSplit(seg []float64) (tau int, q float64) {
	var sp splitter
	return sp.best(seg)
}

// splitter finds best splits, reusing its buffers across calls (the
// permutation test makes hundreds).
type splitter struct {
	order       []int
	rank        []int
	left, right fenwick
	sorted      []float64
}

func (sp *splitter) best(seg []float64) (tau int, q float64) {
	n := len(seg)
	if n < 2*MinSegment {
		return 0, 0
	}
	// Start with everything on the right, then move one point at a time
	// to the left. The sums of distances from the moving point to each side
	// come from two Fenwick trees over the values' ranks (count and sum of
	// the values below and above it), so all splits cost O(n log n), not
	// O(n²): 10,001 entries take well under a second, not minutes.
	sp.order = grow(sp.order, n)
	for i := range sp.order {
		sp.order[i] = i
	}
	sort.Slice(sp.order, func(a, b int) bool { return seg[sp.order[a]] < seg[sp.order[b]] })
	sp.rank = grow(sp.rank, n)
	sp.sorted = grow(sp.sorted, n)
	for r, i := range sp.order {
		sp.rank[i] = r
		sp.sorted[r] = seg[i]
	}
	sp.left.reset(n)
	sp.right.reset(n)
	var withinR float64
	var below float64 // sum of the smaller values, in sorted order
	for r, v := range sp.sorted {
		withinR += v*float64(r) - below
		below += v
		sp.right.add(r, v, 1)
	}
	var between, withinL float64
	for t := 1; t <= n-MinSegment; t++ {
		x := seg[t-1] // moves from the right side to the left
		r := sp.rank[t-1]
		sp.right.add(r, x, -1)
		toRight := sp.right.distances(r, x)
		toLeft := sp.left.distances(r, x)
		sp.left.add(r, x, 1)
		withinL += toLeft
		withinR -= toRight
		between += toRight - toLeft
		if t < MinSegment {
			continue
		}
		m, k := float64(t), float64(n-t)
		e := 2*between/(m*k) - withinL/(m*(m-1)/2) - withinR/(k*(k-1)/2)
		if v := m * k / (m + k) * e; v > q {
			tau, q = t, v
		}
	}
	return tau, q
}

// significant runs the permutation test: shuffled, how often does seg split
// at least as well? The split is kept when that share is at most alpha. It
// stops as soon as the answer cannot change (too many shuffles already split
// as well), which is most of the time on a history without a change.
func (sp *splitter) significant(ctx context.Context, seg []float64, q, alpha float64, rng *rand.Rand) bool {
	p := append([]float64(nil), seg...)
	allowed := int(alpha*float64(Permutations+1)) - 1 // most shuffles that may split as well
	atLeast := 0
	for r := 0; r < Permutations; r++ {
		if r%16 == 0 && ctx.Err() != nil {
			return false
		}
		rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		// A shuffle that puts the same points on each side has the same
		// statistic, summed in another order: equal within rounding.
		if _, qq := sp.best(p); qq >= q-1e-9*math.Abs(q) {
			if atLeast++; atLeast > allowed {
				return false
			}
		}
	}
	return float64(atLeast+1)/float64(Permutations+1) <= alpha
}

// fenwick holds a count and a sum of values by rank.
type fenwick struct {
	cnt []int
	sum []float64
	all struct {
		cnt int
		sum float64
	}
}

func (f *fenwick) reset(n int) {
	f.cnt = grow(f.cnt, n+1)
	f.sum = grow(f.sum, n+1)
	clear(f.cnt)
	clear(f.sum)
	f.all.cnt, f.all.sum = 0, 0
}

// add puts value v at rank r (d 1), or takes it out (d -1).
func (f *fenwick) add(r int, v float64, d int) {
	v *= float64(d)
	f.all.cnt += d
	f.all.sum += v
	for i := r + 1; i < len(f.cnt); i += i & -i {
		f.cnt[i] += d
		f.sum[i] += v
	}
}

// distances is the sum of |x − y| over the values y held, x being at rank r.
func (f *fenwick) distances(r int, x float64) float64 {
	var c int
	var s float64
	for i := r; i > 0; i -= i & -i { // ranks below r
		c += f.cnt[i]
		s += f.sum[i]
	}
	return (float64(c)*x - s) + (f.all.sum - s) - float64(f.all.cnt-c)*x
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// meanSD is a segment's mean and sample standard deviation.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
