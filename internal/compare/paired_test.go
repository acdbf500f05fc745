package compare

import (
	"math"
	"testing"

	"github.com/tpslab/tpslab/internal/report"
)

func tpsSet(name string, tps ...float64) Set {
	s := Set{Name: name}
	for _, v := range tps {
		r := &report.Result{}
		r.Summary.CommittedTPS = v
		s.Runs = append(s.Runs, r)
	}
	return s
}

// Pairs cancel what the pairs share: B 20% below A in each pair is
// significant however the pairs drift; noise alone within a t interval of
// three pairs is not, where the bootstrap of three means called it so.
func TestPairedIntervals(t *testing.T) {
	a := tpsSet("A", 1000, 900, 1100)
	b := tpsSet("B", 800, 720, 880)
	rows := Paired(a, b, Compare(a, b))
	if r := rows[0]; !r.Significant || r.Better || math.Abs(r.ChangePct+20) > 1e-9 || r.CIHighPct > -19.9 {
		t.Errorf("a 20%% drop in every pair: %+v", r)
	}
	a, b = tpsSet("A", 550, 552, 553), tpsSet("B", 575, 560, 590)
	boot := Compare(a, b)[0]
	paired := Paired(a, b, Compare(a, b))[0]
	if !boot.Significant || paired.Significant {
		t.Errorf("three noisy pairs: paired %+v, bootstrap %+v; want only the bootstrap fooled", paired, boot)
	}
	if q := tQuantile975(2); q != 4.303 {
		t.Errorf("t(0.975, 2) = %g", q)
	}
}
