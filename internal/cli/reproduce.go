package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/buildcache"
	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

func reproduceCmd(reg *kinds.Registry) *cobra.Command {
	var repeat int
	var out string
	var allowDifferent bool
	var binary string
	c := &cobra.Command{
		Use:   "reproduce RUN_DIR [--repeat N]",
		Short: "Run a finished run again, on the same node program, and say whether its figures hold",
		Long: `Reads the run's scenario and seed from its result.json and runs it again
--repeat times, each on a fresh network tpslab starts (with the validators
the original had), on the same node program: the one given with --binary,
or the one its provenance names when that is this tpslab or a build in its
cache (a result file never chooses what runs), refused in one line when
its SHA-256 is not the recorded one (--allow-different runs it anyway). Then it compares the new runs with the
original with compare's statistics and says "reproduced" when no primary
figure (committed TPS, p50/p99 commit, reject and expired rate) moved
beyond the noise by 5% or more, or which moved, and what differs in the
environment.
Exit 0 when reproduced, 1 when not, 2 for a run it cannot read.`,
		Example: `  tpslab reproduce runs/20261128-101500 --repeat 3`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if repeat < 1 {
				return exitcode.BadInputf("--repeat: %d, expected at least 1 (3 or more for an interval)", repeat)
			}
			orig, sc, why, err := completeRun(reg, args[0])
			if err != nil {
				return err
			}
			node, err := nodeProgram(orig, binary, allowDifferent)
			if err != nil {
				return err
			}
			if out == "" {
				out = runner.DefaultOut()
			}
			if why != "" {
				fmt.Fprintln(os.Stderr, "reproduce: "+why)
			}
			fmt.Fprintf(os.Stderr, "reproduce: %d run(s) of %s's scenario (seed %d) into %s\n", repeat, args[0], sc.Seed, out)
			for i := 1; i <= repeat; i++ {
				rc := sc
				rc.Out = filepath.Join(out, fmt.Sprintf("rep-%d", i))
				if err := runQuiet(cmd.Context(), reg, rc, node, "reproduce"); err != nil && exitcode.Of(err) != exitcode.ThresholdsFailed {
					return err
				}
			}
			base, err := compare.Load(args[0])
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, err)
			}
			again, err := compare.LoadWith(out, true)
			if err != nil {
				return exitcode.Wrap(exitcode.TargetFailed, err)
			}
			c := compare.RunWith([]compare.Set{base, again}, compare.Options{})
			line, held := reproduced(c.Against[0])
			fmt.Println(line)
			if env := c.Against[0].Env; env != "" {
				fmt.Println("environment differs: " + env)
			}
			if !held {
				return exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("not reproduced: %s", c.Against[0].Verdict))
			}
			return nil
		},
	}
	c.Flags().IntVar(&repeat, "repeat", 3, "runs of the scenario again")
	c.Flags().StringVar(&out, "out", "", "where the new runs go (OUT/rep-1 ..; default runs/<timestamp>)")
	c.Flags().BoolVar(&allowDifferent, "allow-different", false, "run a node program whose SHA-256 is not the one the run recorded")
	c.Flags().StringVar(&binary, "binary", "", "the node program to run (checked against the run's recorded SHA-256); without it, only this tpslab or a build in its cache runs, never a path the result names")
	return c
}

// scenarioOf is the scenario the run ran, read back from result.json
// (its JSON is YAML too), on a fresh network tpslab starts: why says what
// changed from the original when it ran on a network it did not start.
// completeRun reads the complete run in dir and the scenario it ran,
// with scenarioOf's note (reproduce, why).
func completeRun(reg *kinds.Registry, dir string) (*report.Result, scenario.Scenario, string, error) {
	orig, err := readRun(dir)
	if err != nil {
		return nil, scenario.Scenario{}, "", err
	}
	if err := refuseIncomplete(orig, false); err != nil {
		return nil, scenario.Scenario{}, "", err
	}
	sc, note, err := scenarioOf(reg, orig)
	return orig, sc, note, err
}

func scenarioOf(reg *kinds.Registry, r *report.Result) (sc scenario.Scenario, why string, err error) {
	sc = scenario.Default()
	if err := reg.Resolve(&sc, true); err != nil {
		return sc, "", err
	}
	b, err := json.Marshal(withoutNulls(r.Scenario))
	if err != nil {
		return sc, "", exitcode.Wrap(exitcode.BadInput, err)
	}
	if err := scenario.Apply(&sc, b); err != nil {
		return sc, "", exitcode.BadInputf("%s: its scenario does not read back: %v", r.Dir, err)
	}
	// A program path in the result's scenario is the result's choice, not
	// the user's: the node program is nodeProgram's.
	sc.Network.Binary = ""
	if sc.Target.NetHome != "" || len(sc.Target.Endpoints) > 0 {
		if r.Network == nil || !r.Network.Started && sc.Target.NetHome == "" {
			return sc, "", exitcode.BadInputf("%s: it ran on endpoints tpslab did not start; reproduce starts the network it runs on", r.Dir)
		}
		if r.Network.Validators > 0 {
			sc.Network.Validators = r.Network.Validators
		}
		// The network that ran, not the scenario's defaults: its kind (a
		// gaiad network's run names the built-in in its scenario), links
		// and settings as net.json gave them.
		if _, err := reg.Lookup(r.Network.Kind); err == nil {
			sc.Target.Kind = r.Network.Kind
		}
		sc.Network.Topology, sc.Network.RPCNodes, sc.Network.State = r.Network.Topology, r.Network.RPCNodes, r.Network.State
		settings := "the scenario's network settings"
		if b, err := json.Marshal(r.Network.Settings); err == nil {
			var st testnet.Settings
			if json.Unmarshal(b, &st) == nil && st.MempoolSize > 0 {
				nw := &sc.Network
				nw.TimeoutCommit, nw.TimeoutPropose = scenario.Duration(st.TimeoutCommit), scenario.Duration(st.TimeoutPropose)
				nw.MempoolSize, nw.MempoolMaxBytes, nw.MempoolCacheSize = st.MempoolSize, st.MempoolMaxBytes, st.MempoolCacheSize
				nw.MaxBlockBytes, nw.MaxBlockGas, nw.CreateEmptyBlocks = st.MaxBlockBytes, st.MaxBlockGas, st.CreateEmptyBlocks
				settings = "the network's settings (" + st.String() + ")"
			}
		}
		// The nodes' envelopes (net up --node-cpu), each node's again.
		var cpus, mems []string
		for _, node := range slices.Sorted(maps.Keys(r.Network.Envelopes)) {
			if e := r.Network.Envelopes[node]; e.Where == "cgroup" {
				if e.CPU > 0 {
					cpus = append(cpus, fmt.Sprintf("%s=%g", node, e.CPU))
				}
				if e.Memory > 0 {
					mems = append(mems, fmt.Sprintf("%s=%d", node, e.Memory))
				}
			}
		}
		sc.Network.NodeCPU, sc.Network.NodeMemory = strings.Join(cpus, ","), strings.Join(mems, ",")
		if len(cpus)+len(mems) > 0 {
			settings += ", each node's envelope (" + strings.TrimPrefix(strings.Join(append(cpus, mems...), ", "), ", ") + ")"
		}
		why = fmt.Sprintf("the original ran on a network started before it (%s); each run here starts its own %s network, with its %d validator(s) and %s", sc.Target.NetHome, sc.Target.Kind, sc.Network.Validators, settings)
		sc.Target.NetHome, sc.Target.Endpoints = "", nil
	}
	if err := reg.Resolve(&sc, true); err != nil {
		return sc, "", exitcode.Wrap(exitcode.BadInput, err)
	}
	if err := reg.Validate(&sc); err != nil {
		return sc, "", exitcode.Wrap(exitcode.BadInput, err)
	}
	return sc, why, nil
}

// withoutNulls drops the null fields of a decoded JSON value (an unset
// list is null in result.json; the scenario's reader wants it absent).
func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else {
				x[k] = withoutNulls(e)
			}
		}
	case []any:
		for i := range x {
			x[i] = withoutNulls(x[i])
		}
	}
	return v
}

// nodeProgram is the node program the run is made again on. A result is
// data someone sent: it never chooses what runs here. The program is the
// one given with --binary, or the one the provenance names only when it is
// this tpslab itself or a build in tpslab's own cache; either is refused
// when its SHA-256 is not the recorded one, unless allowed.
func nodeProgram(r *report.Result, given string, allowDifferent bool) (string, error) {
	if r.Network == nil || r.Network.Provenance == nil || len(r.Network.Provenance.Programs) != 1 {
		if given != "" {
			return "", exitcode.BadInputf("--binary: %s, but the run records no single node program to compare it with", given)
		}
		return "", nil // the kind's own programs (a database and a service: several), from this tpslab
	}
	p := r.Network.Provenance.Programs[0]
	path := p.Path
	if given != "" {
		path = given
	} else if !ours(p.Path) {
		return "", exitcode.BadInputf("%s: its node program %s is neither this tpslab nor a build in tpslab's cache; a result file does not choose what runs here: give the program yourself with --binary PATH", r.Dir, p.Path)
	}
	sum, err := buildcache.SHA256(path)
	if err != nil {
		return "", exitcode.BadInputf("%s: the node program %s is not there (%v); give the same build with --binary PATH", r.Dir, path, err)
	}
	if sum != p.SHA256 && !allowDifferent {
		return "", exitcode.BadInputf("%s: the node program %s has SHA-256 %.12s, the run's had %.12s: another build (--allow-different runs it anyway)", r.Dir, path, sum, p.SHA256)
	}
	return path, nil
}

// ours says path is this tpslab's own program or a file in its build
// cache: the programs tpslab runs without being told to.
func ours(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if self, err := os.Executable(); err == nil {
		if s, err := filepath.EvalSymlinks(self); err == nil {
			if p, err := filepath.EvalSymlinks(abs); err == nil && p == s {
				return true
			}
		}
	}
	if dir, err := buildcache.Dir(); err == nil {
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			if p, err := filepath.EvalSymlinks(abs); err == nil && strings.HasPrefix(p, d+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}

// reproduceTolerancePct is how far a primary figure may move, beyond the
// noise, and still hold: a run at a rate it kept up with commits that rate
// give or take the payments at the window's edges (2% measured on a
// 3 s window), and ab's default bound on a regression is the same 5%.
const reproduceTolerancePct = 5.0

// reproduced says whether the primary figures held, in one line with each
// of them: "reproduced: committed 1,002 vs 998 tx/s (-0.4%, within noise);
// p99 commit …".
func reproduced(a compare.Against) (string, bool) {
	held := true
	var parts []string
	for _, r := range a.Rows {
		if !r.Primary {
			continue
		}
		word := "within noise"
		switch {
		case r.Significant && math.Abs(r.ChangePct) >= reproduceTolerancePct:
			held, word = false, "moved beyond noise"
		case r.Significant:
			word = fmt.Sprintf("beyond noise, within %g%%", reproduceTolerancePct)
		}
		parts = append(parts, fmt.Sprintf("%s %s vs %s (%+.1f%%, %s)", r.Metric, num(r.Base), num(r.Value), r.ChangePct, word))
	}
	lead := "reproduced: "
	if !held {
		lead = "not reproduced: "
	}
	return lead + strings.Join(parts, "; "), held
}

// num writes a figure as the tables do.
func num(v float64) string {
	if v >= 100 {
		return report.Count(int64(math.RoundToEven(v)))
	}
	return fmt.Sprintf("%.3g", v)
}
