package sysmon

import (
	"math"
	"os"
	"runtime"
)

// PerProc is the offered rate one P (GOMAXPROCS) carries with room to
// spare: one core sends 100k+ presigned payments a second and signs 25k+
// live ones (bench/generator-ceiling.sh, bench/live-signing.sh).
const PerProc = 5000

// Procs is the GOMAXPROCS a run at peak offered payments/s needs: one per
// PerProc, at least 1, at most the machine's cores. With more Ps than work
// the scheduler spins idle threads at every wake-up: at 1000 tx/s on a
// kvstore node, one P instead of two cost 12-15% less CPU per payment at the
// same latencies (2 runs each, this project's 2-core VM).
func Procs(peak float64) int {
	if !(peak > 0) {
		return runtime.NumCPU()
	}
	return max(1, min(runtime.NumCPU(), int(math.Ceil(peak/PerProc))))
}

// FitProcs sets GOMAXPROCS to Procs(peak), or least when that is more,
// unless the user set GOMAXPROCS, and returns it (0: left as it was). Only
// for a process whose systems under test run in other processes.
func FitProcs(peak float64, least int) int {
	if os.Getenv("GOMAXPROCS") != "" || !(peak > 0) {
		return 0
	}
	n := min(runtime.NumCPU(), max(Procs(peak), least))
	runtime.GOMAXPROCS(n)
	return n
}
