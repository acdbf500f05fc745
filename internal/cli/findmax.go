package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/threshold"
)

func findMaxCmd(reg *kinds.Registry) *cobra.Command {
	var so scenarioOpts
	var slos []string
	var minRatio, maxGrowth float64
	var maxLag time.Duration
	var opt findmax.Options
	var step, warm, confirm time.Duration
	var missAfter float64
	var envelopes []string
	var envelopeOf string
	var why bool
	c := &cobra.Command{
		Use:   "find-max [SCENARIO.yaml]",
		Short: "Search for the highest offered rate that meets an objective, and say what limits it",
		Long: `Runs steps of constant offered load on one network: doubling from --start until
a step misses the objective, then bisecting until the bracket is within
--tolerance. A step meets the objective when every --slo holds, committed/offered
is at least --min-ratio and the mempool grows by at most --max-growth seconds of
load over the step. Each step's warm-up is excluded. The rate the steps name
then runs for --confirm-run; one that misses there steps down to 5% under what
that run committed and is confirmed again (twice at most).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := so.resolve(args)
			if err != nil {
				return err
			}
			// A scenario's thresholds (and --threshold) are conditions a
			// step must meet too: find-max has no other pass/fail to give them.
			slos = append(slos, sc.Thresholds...)
			sc.Thresholds = nil
			ths, err := threshold.ParseAll(slos)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, fmt.Errorf("--slo/--threshold: %w", err))
			}
			if most := maxLoad(); most > 0 && step > most {
				// A quick check of the search (CI's README check): short
				// steps, few of them.
				step, confirm, warm = most, min(confirm, most), min(warm, most/3)
				opt.MaxSteps = min(opt.MaxSteps, 3)
				fmt.Fprintf(os.Stderr, "%s=%s: steps of %s, at most %d, a confirmation of %s\n", scenario.MaxLoadEnv, most, step, opt.MaxSteps, confirm)
			}
			switch {
			case opt.Start <= 0:
				return exitcode.BadInputf("--start: %g, expected a rate > 0", opt.Start)
			case opt.Factor <= 1:
				return exitcode.BadInputf("--factor: %g, expected > 1", opt.Factor)
			case opt.Tolerance <= 0 || opt.Tolerance >= 1:
				return exitcode.BadInputf("--tolerance: %g, expected between 0 and 1", opt.Tolerance)
			case maxLag < 0:
				return exitcode.BadInputf("--max-lag: %s, expected 0 (no bound) or a positive duration", maxLag)
			case missAfter < 0:
				return exitcode.BadInputf("--miss-after: %g, expected 0 (never) or more seconds of load", missAfter)
			case confirm != 0 && confirm <= warm:
				return exitcode.BadInputf("--confirm-run: %s, expected 0 (none) or longer than --step-warmup (%s)", confirm, warm)
			case step <= warm:
				return exitcode.BadInputf("--step: %s, expected longer than --step-warmup (%s)", step, warm)
			case sc.Load.Model != scenario.Open:
				return exitcode.BadInputf("load.model: %q, expected open: find-max offers rates", sc.Load.Model)
			}
			describe := strings.Join(slos, ", ") + fmt.Sprintf(", committed/offered >= %.2f, mempool growth <= %.1f s", minRatio, maxGrowth)
			if maxLag > 0 {
				describe += fmt.Sprintf(", schedule lag p99 <= %s (or a tenth of the block interval, when longer)", maxLag)
			}
			if len(envelopes) > 0 {
				if err := checkSweep(&sc, envelopeOf, envelopes); err != nil {
					return err
				}
			}
			fm := campaign.FindMax{Objective: findmax.Objective{Thresholds: ths, MinRatio: minRatio, MaxGrowth: maxGrowth, MaxLagMs: float64(maxLag) / 1e6},
				Describe: describe,
				Search:   opt, Step: step, Warm: warm, Confirm: confirm, MissAfter: missAfter, Probe: !cmd.Flags().Changed("start"), Log: os.Stderr, Output: os.Stdout,
				Run: runner.Options{Version: Version, Kinds: reg, Command: "find-max"}}
			if len(envelopes) > 0 {
				if why {
					return exitcode.BadInputf("--why: with --envelopes, expected one of them (why explains one search's step)")
				}
				return campaign.Sweep{FindMax: fm, Resource: envelopeOf, Values: envelopes}.Do(cmd.Context(), sc)
			}
			if sc.Out == "" {
				sc.Out = runner.DefaultOut()
			}
			err = fm.Do(cmd.Context(), sc)
			if !why || err != nil && exitcode.Of(err) != exitcode.ThresholdsFailed {
				return err
			}
			if werr := explainSearch(cmd.Context(), reg, sc.Out); werr != nil {
				return werr
			}
			return err
		},
	}
	so.register(c.Flags(), reg)
	f := c.Flags()
	f.StringArrayVar(&slos, "slo", []string{"p99_commit<=2s"}, "objective a step must meet, repeatable (threshold syntax); the scenario's thresholds and --threshold join it")
	f.Float64Var(&minRatio, "min-ratio", report.T.KeptUp, "committed/offered a step must reach (the judgement's share of the offered load; its default is what \"kept up\" means in a run's headline)")
	f.Float64Var(&maxGrowth, "max-growth", 1, "largest mempool growth over a step, in seconds of offered load")
	f.DurationVar(&maxLag, "max-lag", time.Duration(report.T.StepLagMs)*time.Millisecond, "largest schedule lag p99 of a step the generator kept up with: later, payments waited for the system's answers (0: no bound)")
	f.Float64Var(&opt.Start, "start", 500, "first offered rate; not given, a probe ramp (live payments, doubling every 2 s from this rate until the system falls behind) estimates the capacity and the steps start at 110% of it, moving by --tolerance")
	f.Float64Var(&opt.Factor, "factor", 2, "coarse ramp: multiply the rate by this until a step fails")
	f.Float64Var(&opt.Tolerance, "tolerance", 0.1, "stop when the bracket is this narrow (relative)")
	f.Float64Var(&opt.MaxRate, "max-rate", 100000, "never offer more than this")
	f.IntVar(&opt.MaxSteps, "max-steps", 12, "at most this many steps")
	f.DurationVar(&step, "step", 8*time.Second, "length of each step")
	f.DurationVar(&confirm, "confirm-run", 10*time.Second, "run the rate the steps name this long (with the step warm-up) and step down if it misses there (0: no confirmation)")
	f.DurationVar(&warm, "step-warmup", 2*time.Second, "start of each step excluded from its figures")
	f.Float64Var(&missAfter, "miss-after", 3, "end a step early once more than this many seconds of its offered load are accepted and not committed, two seconds running (0: never)")
	f.StringSliceVar(&envelopes, "envelopes", nil, "run the search once per envelope, each on a fresh network whose every node is limited to it (a cgroup of its own; root): CPU per node (0.25,0.5,1), or memory with --envelope-resource memory (256Mi,1Gi); one table of what each sustains")
	f.StringVar(&envelopeOf, "envelope-resource", "cpu", "what --envelopes limits: cpu | memory")
	f.BoolVar(&why, "why", false, "then confirm by experiment what limited it: tpslab why on the step that missed at the bracket's top (3 runs each of the baseline and of 3 relaxed resources, each as long as that step), into OUT/why")
	setGroup(f, "envelopes", "envelopes", "envelope-resource")
	setGroup(f, "search", "slo", "min-ratio", "max-growth", "max-lag", "start", "factor", "tolerance", "max-rate", "max-steps", "step", "confirm-run", "step-warmup", "miss-after", "why")
	c.Example = findMaxExamples
	groupedHelp(c)
	return c
}

// checkSweep refuses, before anything starts, an envelope sweep it
// cannot make: each value a limit for every node, a network of its own for
// each (no --net-home or --endpoint), the envelope not also set by the
// scenario, and a machine that gives cgroups.
func checkSweep(sc *scenario.Scenario, resource string, values []string) error {
	setting := map[string]string{"cpu": sc.Network.NodeCPU, "memory": sc.Network.NodeMemory}
	own, ok := setting[resource]
	switch {
	case !ok:
		return exitcode.BadInputf("--envelope-resource: %q, expected cpu or memory", resource)
	case sc.Target.NetHome != "" || len(sc.Target.Endpoints) > 0:
		return exitcode.BadInputf("--envelopes: with a network given (--net-home or --endpoint), expected none: the sweep starts a fresh network per envelope")
	case own != "":
		return exitcode.BadInputf("--envelopes: network.node_%s is %q too, expected one of them", resource, own)
	}
	for _, v := range values {
		cpu, mem := v, ""
		if resource == "memory" {
			cpu, mem = "", v
		}
		if strings.Contains(v, "=") {
			return exitcode.BadInputf("--envelopes: %q, expected one limit for every node (0.5, 512Mi)", v)
		}
		if _, err := testnet.CheckEnvelopes(cpu, mem, 0, "--envelopes", "--envelopes"); err != nil {
			return exitcode.Wrap(exitcode.BadInput, err)
		}
	}
	if err := testnet.EnvelopesOffered(); err != nil {
		return exitcode.BadInputf("--envelopes: %v", err)
	}
	return nil
}

// missedStep is the step of a find-max search in dir that missed at the
// bracket's top (the lowest rate that missed; the last such step), which
// holds what limited the search.
func missedStep(dir string) (findmax.Step, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "find-max.json"))
	var doc struct {
		Outcome findmax.Outcome `json:"outcome"`
	}
	if err != nil || json.Unmarshal(b, &doc) != nil {
		return findmax.Step{}, false
	}
	var out findmax.Step
	for _, st := range doc.Outcome.Steps {
		if !st.OK && st.Rate == doc.Outcome.Bracket[1] && st.Dir != "" {
			out = st
		}
	}
	return out, out.Dir != ""
}

// explainSearch is find-max --why: why's experiments on the step of the
// search in dir that missed at the bracket's top, into dir/why.
func explainSearch(ctx context.Context, reg *kinds.Registry, dir string) error {
	missed, ok := missedStep(dir)
	if !ok {
		fmt.Fprintln(os.Stderr, "why: no step missed the objective: nothing limited the search to explain")
		return nil
	}
	fmt.Fprintf(os.Stderr, "\nwhy: the step that missed at the bracket's top, %.0f tx/s (%s)\n", missed.Rate, missed.Dir)
	o := whyOptions{repeat: 3, candidates: 3, duration: time.Duration(missed.LengthS * float64(time.Second)), out: filepath.Join(dir, "why")}
	return explain(ctx, reg, missed.Dir, o)
}

// findMaxExamples are find-max's --help examples.
const findMaxExamples = `  # the highest rate a fresh 4-validator built-in network commits with p99 under 2 s
  tpslab find-max --slo 'p99_commit<=2s'
  # from 2,000/s, short steps, on a network tpslab net up started
  tpslab find-max --net-home /tmp/net --start 2000 --step 6s --confirm-run 8s
  # what one built-in validator sustains at a quarter, half and one core (root)
  tpslab find-max --validators 1 --envelopes 0.25,0.5,1
  # then relax what limited it, and measure again (tpslab why)
  tpslab find-max --validators 1 --why
  # the Factom report's ramp, as a scenario
  tpslab find-max examples/ramp-steps.yaml`
