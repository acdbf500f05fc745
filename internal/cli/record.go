package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
)

// recordCmd writes a finished open-model run's arrivals as a trace. The
// schedule is arithmetic on the scenario and its seed (Poisson gaps
// included), so the run's own scenario gives back exactly the intended send
// times it offered, without the run having logged each one.
func recordCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "record RUN_DIR",
		Short: "Write a finished open-model run's arrivals as a trace to replay (load.trace)",
		Long: `Writes the intended send time of every payment a finished open-model run
offered as a trace (CSV, docs/scenario.md "Traces"), which load.trace replays,
faster with load.trace_speed or at another mean rate with load.trace_rate.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := readRun(args[0])
			if err != nil {
				return err
			}
			b, _ := json.Marshal(r.Scenario)
			sc := scenario.Default()
			if err := json.Unmarshal(b, &sc); err != nil {
				return exitcode.BadInputf("%s: result.json's scenario: %v", args[0], err)
			}
			if sc.Load.Model != scenario.Open {
				return exitcode.BadInputf("%s: load.model %s, expected an open-model run (a closed model's users have no arrival schedule)", args[0], sc.Load.Model)
			}
			if sc.Load.Trace != "" {
				if _, err := sc.Load.TraceTimes(); err != nil {
					return exitcode.BadInputf("%s replayed a trace that cannot be read now: %v", args[0], err)
				}
			}
			var times []time.Duration
			for a := sc.Load.Arrivals(sc.Seed); ; {
				t, ok := a.Next()
				if !ok {
					break
				}
				times = append(times, t)
			}
			if out == "" {
				out = filepath.Join(args[0], "trace.csv")
			}
			f, err := os.Create(out)
			if err != nil {
				return exitcode.BadInputf("--out: %v", err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			err = schedule.WriteTrace(w, times)
			if err == nil {
				err = w.Flush()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", out, err)
			}
			last := time.Duration(0)
			if len(times) > 0 {
				last = times[len(times)-1]
			}
			fmt.Printf("wrote %d arrivals over %.1f s to %s; replay with load.trace: %s\n", len(times), last.Seconds(), out, out)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the trace file (default RUN_DIR/trace.csv)")
	return c
}
