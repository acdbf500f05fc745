package runner

import (
	"context"
	"fmt"

	"github.com/tpslab/tpslab/internal/telemetry"
)

// Telemetered is a kind that reads its system from the inside (a
// service's metrics, its database's statistics).
type Telemetered interface {
	Telemetry(ctx context.Context, sys *System) ([]telemetry.Source, error)
}

// startTelemetry builds the run's sampler: every local node's process (and
// children) from /proc, and what the kind reads.
func (r *run) startTelemetry(ctx context.Context, k Kind) {
	var srcs []telemetry.Source
	if n := r.sys.Net; n != nil {
		for _, nd := range n.Nodes {
			role := nd.Role
			if role == "" {
				role = "validator"
			}
			srcs = append(srcs, telemetry.NewProcess(nd.Name, role, nd.PID, true))
		}
	}
	if t, ok := k.(Telemetered); ok {
		s, err := t.Telemetry(ctx, r.sys)
		if err != nil {
			r.note("telemetry: %v", err)
		}
		srcs = append(srcs, s...)
	}
	if len(srcs) > 0 {
		r.tel = telemetry.NewSampler(srcs)
	}
}

// runTelemetry samples until ctx ends; a source's error is noted once.
func (r *run) runTelemetry(ctx context.Context) {
	if r.tel == nil {
		return
	}
	r.tel.Run(ctx, func(_ int, err error) { r.note("telemetry: %v", fmt.Sprint(err)) })
}
