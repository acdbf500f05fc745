package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/runner"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// SweepFile is what an envelope sweep leaves in its folder for the lists.
const SweepFile = "envelopes.json"

// Sweep is a find-max search on a fresh network per envelope: each node
// limited to one of Values of Resource (issue 68: what is the smallest
// machine a validator can run on at our rate?).
type Sweep struct {
	FindMax
	Resource string   // cpu | memory
	Values   []string // per node: 0.25, 500m, 512Mi
}

// SweepRow is one envelope's search.
type SweepRow struct {
	Envelope    string  `json:"envelope"`
	Dir         string  `json:"dir"`
	Sustainable float64 `json:"sustainable_rate"`
	Confirmed   bool    `json:"confirmed"`
	ConfirmRan  bool    `json:"confirm_ran"` // a confirmation run was made (held or not)
	P99Ms       float64 `json:"p99_commit_ms,omitempty"`
	// BusiestNodeCPU is the busiest node's mean CPU at that rate, percent
	// of one core: at or under the envelope's.
	BusiestNodeCPU float64 `json:"busiest_node_cpu_percent,omitempty"`
	Limit          string  `json:"limit,omitempty"` // what held the lowest rate that missed
	Stopped        string  `json:"stopped"`
}

// SweepSummary is SweepFile.
type SweepSummary struct {
	SchemaVersion int        `json:"schema_version"`
	Resource      string     `json:"resource"`
	Objective     string     `json:"objective"`
	TookS         float64    `json:"took_s"`
	Rows          []SweepRow `json:"envelopes"`
	Conclusion    string     `json:"conclusion"`
}

// Do runs the searches in order, each on a network of its own, and writes
// the table and SweepFile under sc.Out; an interrupted sweep keeps what
// it measured.
func (s Sweep) Do(ctx context.Context, sc scenario.Scenario) error {
	base := sc.Out
	if base == "" {
		base = runner.DefaultOut()
	}
	start := time.Now()
	sum := SweepSummary{SchemaVersion: 1, Resource: s.Resource, Objective: s.Describe}
	var failed error
	for _, v := range s.Values {
		rc := sc
		if s.Resource == "memory" {
			rc.Network.NodeMemory = v
		} else {
			rc.Network.NodeCPU = v
		}
		dir := s.Resource + "-" + strings.NewReplacer("/", "_", " ", "").Replace(v)
		rc.Out = filepath.Join(base, dir)
		fmt.Fprintf(s.Log, "\nenvelope %s %s per node: a fresh network, find-max into %s\n", v, s.Resource, rc.Out)
		out, err := s.search(ctx, rc)
		if len(out.Steps) > 0 {
			sum.Rows = append(sum.Rows, sweepRow(v, dir, out))
		}
		if err != nil {
			failed = fmt.Errorf("envelope %s: %w", v, err)
			break
		}
	}
	sum.TookS = time.Since(start).Seconds()
	sum.Conclusion = sweepConclusion(s.Resource, sum.Rows)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(base, SweepFile), sum); err != nil {
		return err
	}
	PrintSweep(s.Output, sum)
	fmt.Fprintf(s.Output, "results: %s (%s, one find-max folder per envelope)\n", base, SweepFile)
	return failed
}

func sweepRow(v, dir string, out findmax.Outcome) SweepRow {
	row := SweepRow{Envelope: v, Dir: dir, Sustainable: out.Sustainable, Confirmed: out.Confirmed, ConfirmRan: out.ConfirmRan(), Stopped: out.Stopped}
	var at *findmax.Step
	for i := range out.Steps {
		st := &out.Steps[i]
		if st.OK && st.Rate == out.Sustainable && (at == nil || st.Confirm) {
			at = st
		}
		if !st.OK && st.Rate == out.Bracket[1] && st.Result != nil && row.Limit == "" {
			if j := st.Result.Judge(); j.Limit.Cause != "" {
				row.Limit = j.Limit.Phrase()
			}
		}
	}
	if at != nil {
		row.P99Ms = at.P99
		if at.Result != nil {
			for name, t := range at.Result.Summary.Telemetry {
				if node, metric, _ := strings.Cut(name, "."); node != "links" && metric == "cpu_percent" {
					row.BusiestNodeCPU = max(row.BusiestNodeCPU, t.Mean)
				}
			}
		}
	}
	if row.Limit == "" && len(out.Hints) > 0 {
		row.Limit = out.Hints[0]
	}
	return row
}

// sweepConclusion says what the rows show: the rate each envelope held,
// and where a larger envelope did not raise it.
func sweepConclusion(resource string, rows []SweepRow) string {
	if len(rows) == 0 {
		return "no envelope was measured"
	}
	var held []string
	for _, r := range rows {
		held = append(held, fmt.Sprintf("%s: %s tx/s", envelopeWords(resource, r.Envelope), report.Count(int64(r.Sustainable+0.5))))
	}
	c := "per node, " + strings.Join(held, "; ")
	for i := 1; i < len(rows); i++ {
		if rows[i].Sustainable <= rows[i-1].Sustainable {
			a, b := envelopeWords(resource, rows[i-1].Envelope), envelopeWords(resource, rows[i].Envelope)
			c += fmt.Sprintf(". From %s to %s the rate did not rise: past %s the node's %s is not what limits it", a, b, a, resource)
			if rows[i].Limit != "" {
				c += " (at " + rows[i].Envelope + ": " + rows[i].Limit + ")"
			}
			break
		}
	}
	return c
}

// PrintSweep writes the sweep's table and its conclusion.
func PrintSweep(w io.Writer, sum SweepSummary) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s PER NODE\tSUSTAINABLE/s\tP99 COMMIT\tBUSIEST NODE CPU\tLIMIT AT THE FIRST MISS\n", strings.ToUpper(sum.Resource))
	for _, r := range sum.Rows {
		rate := report.Count(int64(r.Sustainable + 0.5))
		if r.ConfirmRan && !r.Confirmed && r.Sustainable > 0 {
			rate += " (not confirmed)"
		}
		cpu := "-"
		if r.BusiestNodeCPU > 0 {
			cpu = fmt.Sprintf("%.0f%% of a core", r.BusiestNodeCPU)
		}
		p99 := "-"
		if r.P99Ms > 0 {
			p99 = fmt.Sprintf("%.0f ms", r.P99Ms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Envelope, rate, p99, cpu, r.Limit)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s under %s\n", sum.Conclusion, sum.Objective)
}

// envelopeWords is an envelope as a person reads it: CPU in cores (50m is
// 0.05 cores), memory as given.
func envelopeWords(resource, v string) string {
	if resource != "cpu" {
		return v
	}
	envs, err := testnet.ParseEnvelopes(v, "")
	if err != nil {
		return v
	}
	return fmt.Sprintf("%g cores", envs[""].CPU)
}
