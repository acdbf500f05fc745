package history

import (
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
// until no split is significant. seed fixes the permutations.
func ChangePoints(xs []float64, seed int64) []int {
	rng := rand.New(rand.NewSource(seed))
	var cps []int
	for {
		bounds := append([]int{0}, cps...)
		bounds = append(bounds, len(xs))
		best, bestQ, bestSeg := -1, 0.0, [2]int{}
		for i := 0; i+1 < len(bounds); i++ {
			lo, hi := bounds[i], bounds[i+1]
			if tau, q := bestSplit(xs[lo:hi]); tau > 0 && q > bestQ {
				best, bestQ, bestSeg = lo+tau, q, [2]int{lo, hi}
			}
		}
		// Each round searches every segment for its best split, so the
		// level is shared among them (Bonferroni): a long history does not
		// collect false changes in its noise.
		if best < 0 || !significant(xs[bestSeg[0]:bestSeg[1]], bestQ, Alpha/float64(len(bounds)-1), rng) {
			return cps
		}
		cps = append(cps, best)
		sort.Ints(cps)
	}
}

// bestSplit is the split τ of seg (seg[:τ], seg[τ:]) with the largest
// statistic q = (m·k/(m+k))·E, where E is the energy distance of the two
// sides (α = 1): 2·mean|x−y| − mean|x−x'| − mean|y−y'|. 0 when seg is too
// short to split.
func bestSplit(seg []float64) (tau int, q float64) {
	n := len(seg)
	if n < 2*MinSegment {
		return 0, 0
	}
	// Start with everything on the right, then move one point at a time:
	// each move changes the three sums by that point's distances, so all
	// splits cost O(n²), not O(n³).
	var between, withinL, withinR float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			withinR += math.Abs(seg[i] - seg[j])
		}
	}
	for t := 1; t <= n-MinSegment; t++ {
		x := seg[t-1] // moves from the right side to the left
		var toLeft, toRight float64
		for i := 0; i < t-1; i++ {
			toLeft += math.Abs(seg[i] - x)
		}
		for j := t; j < n; j++ {
			toRight += math.Abs(x - seg[j])
		}
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
// at least as well? The split is kept when that share is at most Alpha.
func significant(seg []float64, q, alpha float64, rng *rand.Rand) bool {
	p := append([]float64(nil), seg...)
	atLeast := 0
	for r := 0; r < Permutations; r++ {
		rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		if _, qq := bestSplit(p); qq >= q {
			atLeast++
		}
	}
	return float64(atLeast+1)/float64(Permutations+1) <= alpha
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
