package report

// Limits is every threshold the judgement weighs: one table that the
// judgement, find-max's objective, health and the summary all read, so
// "kept up" means the same in a find-max step and in its headline. A
// result's judgement records the table's Version (docs/metrics.md, "What
// limited it").
type Limits struct {
	Version int `json:"version"`
	// KeptUp is the share of the valid offered load that must commit.
	KeptUp float64 `json:"kept_up"`
	// ExpiredShare is the share of sent payments that may expire in a run
	// that kept up.
	ExpiredShare float64 `json:"expired_share"`
	// LagLateMs: a schedule lag p99 this long means tpslab sent late;
	// LagStoppedMs: longer than CPU contention makes: it was stopped.
	LagLateMs    float64 `json:"lag_late_ms"`
	LagStoppedMs float64 `json:"lag_stopped_ms"`
	// PauseMs: tpslab's own 100 ms clock stopping this long says the
	// process did not run at all (stopped, a paused machine, swapped out):
	// contention delays a runnable process by milliseconds.
	PauseMs float64 `json:"pause_ms"`
	// StepLagMs is find-max's default bound on a step's schedule lag p99:
	// payments that left late while the generator kept up waited for the
	// system's answers to earlier ones.
	StepLagMs float64 `json:"step_lag_ms"`
	// Refused is the share of valid payments refused that makes refusals
	// the limit.
	Refused float64 `json:"refused"`
	// The database: connections waiting for locks (a share of them),
	// deadlocks a second, serialization retries a committed payment.
	LockWaits float64 `json:"lock_waits"`
	Deadlocks float64 `json:"deadlocks_per_s"`
	Retries   float64 `json:"retries_per_payment"`
	// Full is the utilisation at which a resource with a capacity (block
	// bytes, block gas, a pool of connections, a CPU limit) is saturated.
	Full float64 `json:"full"`
	// Queue is the mean of a resource's waiting queue (payments waiting for
	// a database connection) at which it is saturated.
	Queue float64 `json:"queue"`
	// Throttled is the share of wall time a CPU limit held a process
	// back (cgroup throttled time) at which the limit is saturated.
	Throttled float64 `json:"throttled"`
	// SystemCPU: the system's processes took this share of the machine.
	SystemCPU float64 `json:"system_cpu"`
	// The machine: busy %, a hypervisor's steal %, other processes' share
	// of the cores.
	MachineBusyPct float64 `json:"machine_busy_pct"`
	StealPct       float64 `json:"steal_pct"`
	Others         float64 `json:"others"`
	// GeneratorCore: under this share of one core, a late generator was
	// not short of CPU.
	GeneratorCore float64 `json:"generator_core"`
	// ShareCap: a committed share above it is a backlog, not a rate.
	ShareCap float64 `json:"share_cap"`
	// HaltShare is the share of the steady window a stretch without blocks
	// must cover to be a halt; HaltIntervals how many of the chain's own
	// block intervals it must last, and HaltFloorS its least length.
	HaltShare     float64 `json:"halt_share"`
	HaltIntervals float64 `json:"halt_intervals"`
	HaltFloorS    float64 `json:"halt_floor_s"`
	// Links: a link's busiest second against its rate, the CPU of the
	// process emulating them, a round trip against the block interval.
	LinkBusy     float64 `json:"link_busy"`
	LinksCPUPct  float64 `json:"links_cpu_pct"`
	LinkRTTShare float64 `json:"link_rtt_share"`
	// MissedInARow is how many blocks in a row a validator's signature
	// may miss before health's default bound counts it, and MissedShare
	// the share of blocks it may miss in all (a single late vote is not a
	// fault).
	MissedInARow int     `json:"missed_in_a_row"`
	MissedShare  float64 `json:"missed_share"`
}

// T is the table this version of tpslab judges with.
var T = Limits{
	Version:        3,
	KeptUp:         0.97,
	ExpiredShare:   0.01,
	LagLateMs:      1000,
	LagStoppedMs:   5000,
	PauseMs:        1000,
	StepLagMs:      100,
	Refused:        0.05,
	LockWaits:      0.25,
	Deadlocks:      0.1,
	Retries:        0.1,
	Full:           0.9,
	Queue:          1,
	Throttled:      0.1,
	SystemCPU:      0.80,
	MachineBusyPct: 90,
	StealPct:       10,
	Others:         0.25,
	GeneratorCore:  0.5,
	ShareCap:       1.03,
	HaltShare:      0.25,
	HaltIntervals:  3,
	HaltFloorS:     5,
	LinkBusy:       0.70,
	LinksCPUPct:    90,
	LinkRTTShare:   1.0 / 6,
	MissedInARow:   2,
	MissedShare:    0.05,
}
