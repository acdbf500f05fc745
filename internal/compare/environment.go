package compare

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tpslab/tpslab/internal/report"
)

// Environment names what differed between the two sets' environments
// (issue 55): tpslab's build, the network's programs by hash, the
// machine. Unlike Differ it says nothing of the settings given, and ab's
// two builds differ by design: it is shown, not voted. Empty when the
// first runs of both ran alike.
func Environment(base, other Set) string {
	a, b := base.Runs[0], other.Runs[0]
	ea, eb := a.Environment, b.Environment
	var out []string
	if ea.BinarySHA256 != "" && eb.BinarySHA256 != "" && ea.BinarySHA256 != eb.BinarySHA256 {
		ba, bb := build(ea), build(eb)
		if ba == bb { // one commit, two builds (build tags): their hashes
			ba, bb = fmt.Sprintf("%.12s", ea.BinarySHA256), fmt.Sprintf("%.12s", eb.BinarySHA256)
		}
		out = append(out, fmt.Sprintf("tpslab build %s vs %s", ba, bb))
	}
	if ea.CPU != eb.CPU || ea.Cores != eb.Cores {
		out = append(out, fmt.Sprintf("machine %s (%d cores) vs %s (%d cores)", ea.CPU, ea.Cores, eb.CPU, eb.Cores))
	}
	if ma, mb := ea.Machine, eb.Machine; ma != nil && mb != nil {
		if ma.Kernel != mb.Kernel {
			out = append(out, fmt.Sprintf("kernel %s vs %s", ma.Kernel, mb.Kernel))
		}
		if ma.MemoryBytes != mb.MemoryBytes {
			out = append(out, fmt.Sprintf("memory %.1f vs %.1f GiB", float64(ma.MemoryBytes)/(1<<30), float64(mb.MemoryBytes)/(1<<30)))
		}
		if ma.Governor != mb.Governor {
			out = append(out, fmt.Sprintf("CPU governor %s vs %s", ma.Governor, mb.Governor))
		}
		// A machine already loaded when the run began (others' work).
		lo, hi := min(ma.LoadAverage, mb.LoadAverage), max(ma.LoadAverage, mb.LoadAverage)
		if hi > 0.5*float64(max(ea.Cores, 1)) && hi > 2*lo {
			out = append(out, fmt.Sprintf("load average at the start %.1f vs %.1f", ma.LoadAverage, mb.LoadAverage))
		}
	}
	out = append(out, programsDiffer(a.Network, b.Network)...)
	return strings.Join(out, "; ")
}

// build names a tpslab build: its commit when known, else its hash.
func build(e report.Environment) string {
	if e.GitCommit != "" {
		return fmt.Sprintf("%.12s", e.GitCommit)
	}
	return e.BinarySHA256
}

// programsDiffer names each network program (by file name) whose hash
// differs, or that one side lacks.
func programsDiffer(na, nb *report.Network) []string {
	progs := func(n *report.Network) map[string]report.Program {
		m := map[string]report.Program{}
		if n != nil && n.Provenance != nil {
			for _, p := range n.Provenance.Programs {
				m[filepath.Base(p.Path)] = p
			}
		}
		return m
	}
	pa, pb := progs(na), progs(nb)
	if len(pa) == 0 || len(pb) == 0 {
		return nil // a side without provenance (an older result, an endpoint)
	}
	both := maps.Clone(pa)
	maps.Copy(both, pb)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(both)) {
		x, okA := pa[k]
		y, okB := pb[k]
		switch {
		case !okA || !okB:
			out = append(out, fmt.Sprintf("%s on one side only", k))
		case x.SHA256 != y.SHA256:
			out = append(out, fmt.Sprintf("%s %.12s vs %.12s", k, x.SHA256, y.SHA256))
		}
	}
	return out
}
