// Package workload builds the transactions a run sends: it owns the accounts,
// the choice of sender and recipient, the per-sender nonce windows and the
// presigned buffers. It knows nothing about transports.
package workload

import (
	"math"
	"math/rand"
)

// Choice picks accounts: uniformly (Dist "uniform"), by Zipf's law with
// exponent S ("zipf"), or from a hot set of Hot accounts that receives
// HotShare of the picks ("hot"). The scenario's choice converts to it.
type Choice struct {
	Dist     string
	S        float64
	Hot      int
	HotShare float64
}

// Amount draws payment amounts uniformly from [Min, Max].
type Amount struct {
	Min, Max uint64
}

// Chooser draws an index in [0, n). It is bound to one goroutine's
// generator and is not safe for concurrent use.
type Chooser interface{ Pick() int }

type uniform struct {
	r *rand.Rand
	n int
}

func (u uniform) Pick() int { return u.r.Intn(u.n) }

// zipf ranks accounts by popularity: index 0 is the most popular, as with
// GNU Taler's Zipf-distributed merchants.
type zipf struct {
	z *rand.Zipf
	s float64
}

func (z zipf) Pick() int { return int(z.z.Uint64()) }

type hot struct {
	r      *rand.Rand
	n, hot int
	share  float64
}

func (h hot) Pick() int {
	if h.hot >= h.n || h.r.Float64() < h.share {
		return h.r.Intn(h.hot)
	}
	return h.hot + h.r.Intn(h.n-h.hot)
}

// NewChooser builds the chooser a scenario asks for over n accounts.
func NewChooser(c Choice, n int, r *rand.Rand) Chooser {
	switch c.Dist {
	case "zipf":
		if n == 1 {
			return uniform{r: r, n: 1}
		}
		return zipf{z: rand.NewZipf(r, c.S, 1, uint64(n-1)), s: c.S}
	case "hot":
		return hot{r: r, n: n, hot: c.Hot, share: c.HotShare}
	}
	return uniform{r: r, n: n}
}

// shares estimates each index's probability, to size presigned buffers.
func shares(c Chooser, n int) []float64 {
	p := make([]float64, n)
	switch ch := c.(type) {
	case zipf:
		var sum float64
		for i := range p {
			p[i] = 1 / math.Pow(float64(i+1), ch.s)
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
	case hot:
		for i := range p {
			if i < ch.hot {
				p[i] = ch.share / float64(ch.hot)
			} else {
				p[i] = (1 - ch.share) / float64(n-ch.hot)
			}
		}
	default:
		for i := range p {
			p[i] = 1 / float64(n)
		}
	}
	return p
}
