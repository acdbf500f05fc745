package sysmon

import (
	"runtime"
	"testing"
)

func TestProcs(t *testing.T) {
	n := runtime.NumCPU()
	for _, c := range []struct {
		peak float64
		want int
	}{{0, n}, {-1, n}, {1, 1}, {PerProc, 1}, {PerProc + 1, min(2, n)}, {1e9, n}} {
		if got := Procs(c.peak); got != c.want {
			t.Errorf("Procs(%g) = %d, want %d", c.peak, got, c.want)
		}
	}
	t.Setenv("GOMAXPROCS", "3")
	if FitProcs(1000, 1) != 0 {
		t.Error("FitProcs changed GOMAXPROCS the user set")
	}
}
