package measure

import (
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

func ms(us int64) float64 { return math.Round(float64(us)) / 1000 }

// Summarize reads percentiles from a microsecond histogram.
func Summarize(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	// One walk for all quantiles (each ValueAtQuantile walks the buckets;
	// this runs for three histograms every second).
	q := h.ValueAtPercentiles([]float64{50, 90, 99, 99.9, 100})
	return Percentiles{
		Count: h.TotalCount(),
		Mean:  math.Round(h.Mean()) / 1000,
		P50:   ms(q[50]),
		P90:   ms(q[90]),
		P99:   ms(q[99]),
		P999:  ms(q[99.9]),
		Max:   ms(q[100]),
	}
}
