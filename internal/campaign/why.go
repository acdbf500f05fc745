package campaign

// Why confirms a named limit by experiment (issue 69): the run's scenario
// again on fresh networks, as it was and with one resource relaxed by a
// known factor, interleaved; a resource whose relaxing raises committed
// TPS beyond noise limited the run, one whose relaxing moves nothing did
// not (causal profiling's virtual speed-up, for a whole network).

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// WhyFile is what why leaves in its folder for the lists.
const WhyFile = "why.json"

// Relaxation is one resource relaxed: the scenario setting that gives it,
// from its value in the run to the relaxed one.
type Relaxation struct {
	Resource string  `json:"resource"` // as the judgement names it: block_bytes, db_connections
	Setting  string  `json:"setting"`  // network.max_block_bytes
	From     string  `json:"from"`
	To       string  `json:"to"`
	Factor   float64 `json:"factor"`
	Named    bool    `json:"named"` // the run's judgement named it as the limit
}

// WhyOptions say how to run the experiments.
type WhyOptions struct {
	Repeat int    // pairs: each variant runs this many times
	Out    string // OUT/baseline/rep-i, OUT/<resource>/rep-i
	Log    io.Writer
	// Run runs sc (its Out set) on a fresh network.
	Run func(ctx context.Context, sc scenario.Scenario) error
}

// WhyRow is one relaxation's outcome against the baseline.
type WhyRow struct {
	Relaxation
	BaseTPS   float64 `json:"baseline_committed_tps"`
	TPS       float64 `json:"relaxed_committed_tps"`
	BaseP99   float64 `json:"baseline_p99_commit_ms"`
	P99       float64 `json:"relaxed_p99_commit_ms"`
	ChangePct float64 `json:"change_pct"` // committed TPS
	CILowPct  float64 `json:"ci_low_pct"`
	CIHighPct float64 `json:"ci_high_pct"`
	// Verdict: confirmed (more committed beyond noise), within noise, or
	// worse (fewer beyond noise).
	Verdict string `json:"verdict"`
}

// WhySummary is WhyFile.
type WhySummary struct {
	SchemaVersion int      `json:"schema_version"`
	Run           string   `json:"run"`   // the run explained
	Limit         string   `json:"limit"` // what its judgement named
	Repeat        int      `json:"repeat"`
	TookS         float64  `json:"took_s"`
	Rows          []WhyRow `json:"experiments"`
	Conclusion    string   `json:"conclusion"`
}

// Verdicts of a relaxation.
const (
	WhyConfirmed = "confirmed"
	WhyNoise     = "within noise"
	WhyWorse     = "worse"
)

// Why runs the baseline and each relaxation Repeat times, interleaved
// (each round in a rotated order, so the machine's drift falls on all),
// and compares each relaxation with the baseline. A run that failed its
// thresholds still counts; any other failure stops it.
func Why(ctx context.Context, sc scenario.Scenario, relax []Relaxation, o WhyOptions) ([]WhyRow, error) {
	variants := append([]string{"baseline"}, names(relax)...)
	apply := map[string]Relaxation{}
	for _, r := range relax {
		apply[r.Resource] = r
	}
	err := Interleave(ctx, o.Log, "why", variants, o.Repeat, func(ctx context.Context, v string, rep int) error {
		rc := sc
		if r, ok := apply[v]; ok {
			if err := scenario.Set(&rc, r.Setting, r.To); err != nil {
				return exitcode.Wrap(exitcode.BadInput, fmt.Errorf("%s: %w", r.Setting, err))
			}
		}
		rc.Out = filepath.Join(o.Out, v, fmt.Sprintf("rep-%d", rep))
		return o.Run(ctx, rc)
	})
	if err != nil {
		return nil, err
	}
	base, err := compare.Load(filepath.Join(o.Out, "baseline"))
	if err != nil {
		return nil, exitcode.Wrap(exitcode.TargetFailed, err)
	}
	tps := report.Defs(nil)[0] // committed TPS
	var rows []WhyRow
	for _, r := range relax {
		set, err := compare.Load(filepath.Join(o.Out, r.Resource))
		if err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
		row := WhyRow{Relaxation: r, Verdict: WhyNoise}
		for _, c := range compare.Compare(base, set) {
			switch c.Metric {
			case "p99 commit":
				row.BaseP99, row.P99 = c.Base, c.Value
			case tps.Title():
				row.ChangePct = c.ChangePct
				noise := c.NoiseFloorPct
				row.BaseTPS, row.TPS = c.Base, c.Value
				// One figure judged per relaxation, the relaxations'
				// chance of a false "confirmed" shared (Bonferroni):
				// Welch's interval over the runs' committed TPS.
				row.CILowPct, row.CIHighPct = compare.RunsInterval(perRun(base, tps), perRun(set, tps), compare.Alpha/float64(len(relax)))
				if compare.Moved(row.ChangePct, noise, row.CILowPct, row.CIHighPct) {
					row.Verdict = WhyWorse
					if row.CILowPct > 0 {
						row.Verdict = WhyConfirmed
					}
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// perRun is each run's value of d.
func perRun(s compare.Set, d report.Def) []float64 {
	var out []float64
	for _, r := range s.Runs {
		if v, ok := d.Run(&r.Summary); ok {
			out = append(out, v)
		}
	}
	return out
}

func names(relax []Relaxation) []string {
	var out []string
	for _, r := range relax {
		out = append(out, r.Resource)
	}
	return out
}

// WhyConclusion says what the experiments showed, each with its change.
func WhyConclusion(rows []WhyRow) string {
	var parts []string
	for _, r := range rows {
		what := strings.ReplaceAll(r.Resource, "_", " ")
		change := fmt.Sprintf("×%g gave %+.1f%% committed TPS (%+.1f%% to %+.1f%%)", r.Factor, r.ChangePct, r.CILowPct, r.CIHighPct)
		switch r.Verdict {
		case WhyConfirmed:
			parts = append(parts, what+" confirmed: "+change)
		case WhyWorse:
			parts = append(parts, what+": "+change+", worse")
		default:
			parts = append(parts, what+": "+change+", within noise: not the limit")
		}
	}
	if len(parts) == 0 {
		return "no experiment was made"
	}
	return strings.Join(parts, "; ")
}

// PrintWhy writes the experiments' table and their conclusion.
func PrintWhy(w io.Writer, s WhySummary) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tSETTING\tCOMMITTED TPS\tP99 COMMIT\tCHANGE (95% INTERVAL)\tVERDICT")
	for _, r := range s.Rows {
		named := ""
		if r.Named {
			named = " (named)"
		}
		fmt.Fprintf(tw, "%s%s\t%s %s → %s\t%s → %s\t%.0f → %.0f ms\t%+.1f%% (%+.1f%% .. %+.1f%%)\t%s\n", r.Resource, named, r.Setting, r.From, r.To,
			report.Count(int64(r.BaseTPS+0.5)), report.Count(int64(r.TPS+0.5)), r.BaseP99, r.P99, r.ChangePct, r.CILowPct, r.CIHighPct, r.Verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", s.Conclusion)
}

// Relaxations are the resources why relaxes for run r: those given, or
// the named limit and the most used others, each one its kind declared
// relaxable (a capacity's setting) or a node's CPU limit.
func Relaxations(r *report.Result, sc *scenario.Scenario, given []string, most int) ([]Relaxation, error) {
	avail := map[string]Relaxation{}
	for _, c := range r.Capacities {
		if c.Relax == "" {
			continue
		}
		from, _, err := scenario.Get(sc, c.Relax)
		if err != nil {
			continue
		}
		by := c.RelaxBy
		if by == 0 {
			by = 2
		}
		v, err := strconv.ParseFloat(from, 64)
		if err != nil || v <= 0 {
			continue // -1: no cap to relax
		}
		avail[c.Name] = Relaxation{Resource: c.Name, Setting: c.Relax, From: from, To: strconv.FormatFloat(math.Round(v*by), 'f', -1, 64), Factor: by}
	}
	// A node's CPU or memory limit (an envelope tpslab applied): every
	// node's, ×2.
	for _, env := range []struct {
		setting, value, resource string
		has                      func(report.Envelope) bool
	}{
		{"network.node_cpu", sc.Network.NodeCPU, ".cpu_limit", func(e report.Envelope) bool { return e.CPU > 0 }},
		{"network.node_memory", sc.Network.NodeMemory, ".memory_limit", func(e report.Envelope) bool { return e.Memory > 0 }},
	} {
		to, ok := doubledEnvelope(env.setting, env.value)
		if env.value == "" || !ok {
			continue
		}
		for node, e := range r.Network.Envelopes {
			if env.has(e) && e.Where == "cgroup" {
				avail[node+env.resource] = Relaxation{Resource: node + env.resource, Setting: env.setting, From: env.value, To: to, Factor: 2}
			}
		}
	}
	known := slices.Sorted(maps.Keys(avail))
	if len(avail) == 0 {
		return nil, exitcode.BadInputf("%s: none of its resources can be relaxed by a setting of a network tpslab starts (its kind declares none, or it ran on endpoints tpslab did not start)", r.Dir)
	}
	var out []Relaxation
	j := r.Judge()
	if len(given) > 0 {
		for _, g := range given {
			x, ok := avail[g]
			if !ok {
				return nil, exitcode.BadInputf("--relax: %q, expected one of %s (the resources of this run its kind can relax)", g, strings.Join(known, ", "))
			}
			x.Named = g == j.Limit.Resource
			out = append(out, x)
		}
		return out, nil
	}
	// The named limit, then the candidates most used first.
	ranked := slices.Clone(j.Considered)
	sort.SliceStable(ranked, func(a, b int) bool {
		ea, eb := ranked[a], ranked[b]
		if (ea.Resource == j.Limit.Resource) != (eb.Resource == j.Limit.Resource) {
			return ea.Resource == j.Limit.Resource && j.Limit.Resource != ""
		}
		return ea.Utilisation > eb.Utilisation
	})
	seen := map[string]bool{}
	for _, e := range ranked {
		x, ok := avail[e.Resource]
		if !ok || seen[e.Resource] || len(out) == most {
			continue
		}
		seen[e.Resource] = true
		x.Named = e.Resource == j.Limit.Resource && j.Limit.Resource != ""
		out = append(out, x)
	}
	for _, k := range known { // resources the judgement did not weigh
		if len(out) < most && !seen[k] {
			out = append(out, avail[k])
		}
	}
	return out, nil
}

// doubledEnvelope doubles every limit of a network.node_cpu or
// node_memory value ("0.1", "node0=100m,node1=0.5", "256Mi"), read as the
// network reads it.
func doubledEnvelope(setting, v string) (string, bool) {
	cpu, mem := v, ""
	if setting == "network.node_memory" {
		cpu, mem = "", v
	}
	envs, err := testnet.ParseEnvelopes(cpu, mem)
	if err != nil {
		return "", false
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(envs)) { // "", the value for all, first
		d := strconv.FormatFloat(2*envs[name].CPU, 'f', -1, 64)
		if mem != "" {
			d = strconv.FormatInt(2*envs[name].Memory, 10)
		}
		if name != "" {
			d = name + "=" + d
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, ","), true
}
