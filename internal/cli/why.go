package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
)

func whyCmd(reg *kinds.Registry) *cobra.Command {
	var repeat, candidates int
	var out, binary string
	var duration time.Duration
	var relax []string
	c := &cobra.Command{
		Use:   "why RUN_DIR",
		Short: "Confirm by experiment what limited a run: relax each candidate resource and measure again",
		Long: `Reads the run's scenario and its judgement (the limit it named and the
other resources it weighed, most used first), and for the named limit and
the next candidates its kind can relax (a setting that gives the resource
to a network tpslab starts: block bytes and gas, mempool size, database
connections, a node's CPU limit, the block interval) runs short paired
experiments on fresh networks: the scenario as it ran, and with that one
resource relaxed (×2; a block interval ÷2), --repeat times each,
interleaved so the machine's drift falls on all. Each relaxation is
compared with the baseline by compare's statistics and noise floor: a
resource is confirmed when relaxing it raised committed TPS beyond noise,
and set aside when the change is within noise.

The node program is the run's, as reproduce finds it (a result never
chooses what runs). Exit 0 when the experiments ran, 2 for a run or a
resource it cannot relax.`,
		Example: `  tpslab why runs/20261203-101500
  tpslab why runs/x --relax block_bytes,mempool_txs --repeat 3 --duration 15s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return explain(cmd.Context(), reg, args[0], whyOptions{repeat: repeat, candidates: candidates, out: out, binary: binary, duration: duration, relax: relax})
		},
	}
	c.Flags().IntVar(&repeat, "repeat", 3, "runs of the baseline and of each relaxation, interleaved")
	c.Flags().IntVar(&candidates, "candidates", 3, "how many resources to relax: the named limit first, then the most used")
	c.Flags().StringSliceVar(&relax, "relax", nil, "relax these resources (as the judgement names them: block_bytes, db_connections, node0.cpu_limit) instead of choosing")
	c.Flags().DurationVar(&duration, "duration", 0, "each experiment's load (default the run's own)")
	c.Flags().StringVar(&out, "out", "", "where the experiments go (OUT/baseline/rep-1 .., OUT/RESOURCE/rep-1 ..; default runs/<timestamp>)")
	c.Flags().StringVar(&binary, "binary", "", "the node program to run (checked against the run's recorded SHA-256), as reproduce")
	return c
}

func relaxedNames(rel []campaign.Relaxation) []string {
	var out []string
	for _, r := range rel {
		out = append(out, fmt.Sprintf("%s (%s %s → %s)", r.Resource, r.Setting, r.From, r.To))
	}
	return out
}

// whyOptions are why's flags.
type whyOptions struct {
	repeat, candidates int
	out, binary        string
	duration           time.Duration
	relax              []string
}

// explain runs why's experiments on the run in dir: tpslab why, and
// find-max --why on the step that missed.
func explain(ctx context.Context, reg *kinds.Registry, dir string, o whyOptions) error {
	if o.repeat < 1 {
		return exitcode.BadInputf("--repeat: %d, expected at least 1 (3 or more for an interval)", o.repeat)
	}
	if o.candidates < 1 {
		return exitcode.BadInputf("--candidates: %d, expected at least 1", o.candidates)
	}
	if o.duration < 0 {
		return exitcode.BadInputf("--duration: %s, expected a positive duration", o.duration)
	}
	orig, sc, note, err := completeRun(reg, dir)
	if err != nil {
		return err
	}
	// Each experiment runs its whole length: a threshold that would end
	// it early (a find-max step's objective) only judges it.
	sc.AbortOnFail = false
	if d := o.duration; d > 0 {
		sc.Load.Duration, sc.Load.Stages, sc.Load.Steps = scenario.Duration(d), nil, nil
		sc.Load.Warmup = scenario.Duration(min(time.Duration(sc.Load.Warmup), d/3))
	}
	rel, err := campaign.Relaxations(orig, &sc, o.relax, o.candidates)
	if err != nil {
		return err
	}
	node, err := nodeProgram(orig, o.binary, false)
	if err != nil {
		return err
	}
	out := o.out
	if out == "" {
		out = runner.DefaultOut()
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "why: "+note)
	}
	limit := "none (it kept up)"
	if j := orig.Judge(); j.Limit.Cause != "" {
		limit = j.Limit.Phrase()
	}
	fmt.Fprintf(os.Stderr, "why: %s named %s; relaxing %s, %d run(s) each and the baseline's, into %s\n", dir, limit, strings.Join(relaxedNames(rel), ", "), o.repeat, out)
	started := time.Now()
	rows, err := campaign.Why(ctx, sc, rel, campaign.WhyOptions{Repeat: o.repeat, Out: out, Log: os.Stderr,
		Run: func(ctx context.Context, rc scenario.Scenario) error { return runQuiet(ctx, reg, rc, node, "why") }})
	if err != nil {
		return err
	}
	sum := campaign.WhySummary{SchemaVersion: 1, Run: dir, Limit: limit, Repeat: o.repeat, TookS: time.Since(started).Round(time.Second).Seconds(),
		Rows: rows, Conclusion: campaign.WhyConclusion(rows)}
	if err := report.WriteJSON(filepath.Join(out, campaign.WhyFile), sum); err != nil {
		return err
	}
	campaign.PrintWhy(os.Stdout, sum)
	if o.repeat < 3 {
		fmt.Printf("(%d run(s) each: with fewer than 3 the intervals are too wide for most changes to clear the noise)\n", o.repeat)
	}
	fmt.Fprintf(os.Stderr, "results: %s (%s, a folder of runs per variant)\n", out, campaign.WhyFile)
	return nil
}
