package campaign

// AB runs one scenario on two builds of a system, interleaved, each
// repetition on a fresh network from the same genesis, and compares them:
// "did this change make it better, and by how much, with what confidence".

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/scenario"
)

// ABOptions say what to compare and how to run one repetition.
type ABOptions struct {
	A, B   string // the two node programs
	Repeat int    // repetitions of each
	Out    string // OUT/a/rep-i and OUT/b/rep-i
	Log    io.Writer
	// Run runs sc (its Out set) on a fresh network of the node program.
	Run func(ctx context.Context, sc scenario.Scenario, node string) error
}

// Validate refuses what cannot be compared, before anything starts.
func (o ABOptions) Validate(sc scenario.Scenario) error {
	for _, b := range []struct{ flag, path string }{{"--binary-a", o.A}, {"--binary-b", o.B}} {
		if b.path == "" {
			return exitcode.BadInputf("%s: empty, expected the path of a node program", b.flag)
		}
		st, err := os.Stat(b.path)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return exitcode.BadInputf("%s: %q is not an executable file, expected the path of a node program", b.flag, b.path)
		}
	}
	if o.Repeat < 1 {
		return exitcode.BadInputf("--repeat: %d, expected at least 1 (3 or more for a confidence interval)", o.Repeat)
	}
	if len(sc.Target.Endpoints) > 0 || sc.Target.NetHome != "" {
		return exitcode.BadInputf("target: ab starts a fresh network of each build, expected no target.endpoints (--endpoint) or target.net_home (--net-home)")
	}
	return nil
}

// AB runs every repetition and compares B with A. A repetition that
// failed its thresholds still counts; any other failure stops it.
func AB(ctx context.Context, sc scenario.Scenario, o ABOptions) (compare.Comparison, error) {
	node := map[string]string{}
	for side, src := range map[string]string{"a": o.A, "b": o.B} {
		dst, err := copyProgram(src, filepath.Join(o.Out, "bin", side))
		if err != nil {
			return compare.Comparison{}, exitcode.Wrap(exitcode.TargetFailed, err)
		}
		node[side] = dst
	}
	// A B, then B A…: a drift of the machine over the session (a
	// neighbour's load, a warming cache) falls on both builds alike.
	var thresholdErr error
	err := Interleave(ctx, o.Log, "ab", []string{"a", "b"}, o.Repeat, func(ctx context.Context, side string, rep int) error {
		rc := sc
		rc.Out = filepath.Join(o.Out, side, fmt.Sprintf("rep-%d", rep))
		err := o.Run(ctx, rc, node[side])
		if exitcode.Of(err) == exitcode.ThresholdsFailed {
			thresholdErr = err
		}
		return err
	})
	if err != nil {
		return compare.Comparison{}, err
	}
	var sets []compare.Set
	for _, side := range []string{"a", "b"} {
		s, err := compare.Load(filepath.Join(o.Out, side))
		if err != nil {
			return compare.Comparison{}, exitcode.Wrap(exitcode.TargetFailed, err)
		}
		s.Name = map[string]string{"a": "A", "b": "B"}[side]
		sets = append(sets, s)
	}
	c := compare.Run(sets)
	c.Paired = true
	// The verdict of two builds is their headline: committed TPS, commit
	// latency and rejections; every other row is shown, not judged.
	for i := range c.Against {
		a := &c.Against[i]
		a.Rows = compare.Paired(sets[0], a.Set, a.Rows)
		a.Verdict = compare.Verdict(sets[0], a.Set, compare.Headline(a.Rows))
	}
	return c, thresholdErr
}

// Regressions are B's headline rows that are significantly worse than A's
// by more than maxPct percent.
func Regressions(c compare.Comparison, maxPct float64) []compare.Row {
	var out []compare.Row
	for _, a := range c.Against {
		for _, r := range compare.Headline(a.Rows) {
			if r.Significant && !r.Better && math.Abs(r.ChangePct) > maxPct {
				out = append(out, r)
			}
		}
	}
	return out
}

// copyProgram copies a build to dst, so that both builds' nodes run from
// files of their own. A node started from the very file tpslab itself runs
// from shares its code pages (and so the caches' lines) with the load
// generator: measured here, that build's commit latency was 4-8% lower than
// an identical copy's, enough to call two identical builds different.
func copyProgram(src, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, b, 0o755)
}
