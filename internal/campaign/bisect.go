package campaign

// Bisect finds the first of an ordered list of builds where a figure moved
// beyond noise (issue 69: regressions between releases bisected by hand,
// which noise makes unreliable). Each step runs the bracket's ends and its
// middle, interleaved, on fresh networks, and moves the bracket only when
// the middle is told apart from one end; a middle within noise of both is
// said, never guessed.

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/tpslab/tpslab/internal/compare"
	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
)

// BisectFile is what bisect leaves in its folder for the lists.
const BisectFile = "bisect.json"

// BisectOptions say what to search and how to run one repetition.
type BisectOptions struct {
	Builds []string // node programs in order: the first good, the last suspect
	Labels []string // each build's name in the output
	// Build makes build i's program when Builds[i] is empty (a commit
	// built on demand: a search builds only the commits it runs).
	Build  func(ctx context.Context, i int) (string, error)
	Figure report.Def
	Repeat int
	Out    string // OUT/step-K/BUILD/rep-N
	Log    io.Writer
	Run    func(ctx context.Context, sc scenario.Scenario, node string) error
}

// BisectChange is one build's figure against another's.
type BisectChange struct {
	From, To  int     // build indexes
	Base      float64 `json:"base"`
	Value     float64 `json:"value"`
	ChangePct float64 `json:"change_pct"`
	CILowPct  float64 `json:"ci_low_pct"`
	CIHighPct float64 `json:"ci_high_pct"`
	NoisePct  float64 `json:"noise_floor_pct"`
	Moved     bool    `json:"moved"` // beyond noise, its interval clear of 0
}

// BisectStep is one step: the bracket, its middle, and what was told.
type BisectStep struct {
	Good, Mid, Bad int
	Changes        []BisectChange `json:"changes"`
	Decided        string         `json:"decided"` // bad | good | undecided | no change
}

// BisectSummary is BisectFile.
type BisectSummary struct {
	SchemaVersion int          `json:"schema_version"`
	Builds        []string     `json:"builds"`
	Figure        string       `json:"figure"`
	Repeat        int          `json:"repeat"`
	TookS         float64      `json:"took_s"`
	Steps         []BisectStep `json:"steps"`
	First         int          `json:"first"` // index of the first build that moved; -1: none found
	Change        BisectChange `json:"change"`
	Conclusion    string       `json:"conclusion"`
}

// Bisect searches o.Builds. The first step runs the first and last builds
// (and the middle): without a change between the ends there is nothing to
// find.
func Bisect(ctx context.Context, sc scenario.Scenario, o BisectOptions) (BisectSummary, error) {
	s := BisectSummary{SchemaVersion: 1, Builds: o.Labels, Figure: o.Figure.Title(), Repeat: o.Repeat, First: -1}
	lo, hi := 0, len(o.Labels)-1
	dir := -1.0 // the direction the figure moved between the ends
	for k := 1; ; k++ {
		mid := (lo + hi) / 2
		idx := []int{lo, hi}
		if mid != lo {
			idx = []int{lo, mid, hi}
		}
		sets, err := o.runStep(ctx, sc, k, idx)
		if err != nil {
			return s, err
		}
		// Three comparisons a step share the chance of a false "moved".
		alpha := compare.Alpha / 3
		ends := o.change(sets, lo, hi, alpha)
		st := BisectStep{Good: lo, Mid: mid, Bad: hi, Changes: []BisectChange{ends}}
		if k == 1 {
			if !ends.Moved {
				st.Decided = "no change"
				s.Steps = append(s.Steps, st)
				s.Change = ends
				s.Conclusion = fmt.Sprintf("no change found: %s's %s is within noise of %s's (%s)", o.Labels[hi], s.Figure, o.Labels[lo], ends.words())
				return s, nil
			}
			dir = math.Copysign(1, ends.ChangePct)
		}
		if mid == lo { // adjacent: hi is the first that moved
			st.Decided = "bad"
			s.Steps = append(s.Steps, st)
			s.First, s.Change = hi, ends
			break
		}
		toMid, midTo := o.change(sets, lo, mid, alpha), o.change(sets, mid, hi, alpha)
		st.Changes = append(st.Changes, toMid, midTo)
		// A middle not told apart from either end is still placed when its
		// interval against one end holds it within half the ends' change
		// of that end: a build at capacity varies more on a busy machine
		// than one that keeps up (CI: the middle -0.1%, -4.4% to +4.1%,
		// from the good end; -38%, -80% to +4% from the slow one).
		half := math.Abs(ends.ChangePct) / 2
		near := func(c BisectChange) bool { return c.CILowPct > -half && c.CIHighPct < half }
		switch {
		case toMid.Moved && math.Copysign(1, toMid.ChangePct) == dir:
			st.Decided, hi = "bad", mid
		case midTo.Moved && math.Copysign(1, midTo.ChangePct) == dir:
			st.Decided, lo = "good", mid
		case near(toMid) && !near(midTo):
			st.Decided, lo = "good (within half the change of the good end)", mid
		case near(midTo) && !near(toMid):
			st.Decided, hi = "bad (within half the change of the bad end)", mid
		default:
			st.Decided = "undecided"
			s.Steps = append(s.Steps, st)
			s.Conclusion = fmt.Sprintf("cannot decide at step %d: %s is within noise of both %s (%s) and %s (%s); the change lies between %s and %s, or is smaller than the noise at %d runs a build (--repeat more)",
				k, o.Labels[mid], o.Labels[lo], toMid.words(), o.Labels[hi], midTo.words(), o.Labels[lo], o.Labels[hi], o.Repeat)
			return s, nil
		}
		s.Steps = append(s.Steps, st)
		if hi-lo == 1 {
			// The last step told the pair apart through the middle: the
			// change is the one measured between them there.
			s.First = hi
			s.Change = toMid
			if strings.HasPrefix(st.Decided, "good") {
				s.Change = midTo
			}
			break
		}
	}
	s.Conclusion = fmt.Sprintf("first moved: %s (build %d of %d): %s %s against %s, in %d step(s)", o.Labels[s.First], s.First+1, len(o.Labels), s.Figure, s.Change.words(), o.Labels[s.First-1], len(s.Steps))
	if last := s.Steps[len(s.Steps)-1]; strings.Contains(last.Decided, "within half") {
		// The pair was placed by the middle's nearness to one end, not by
		// a change told apart between them: say so.
		s.Conclusion += fmt.Sprintf("; the last step placed %s %s", o.Labels[last.Mid], strings.TrimSuffix(strings.SplitN(last.Decided, "(", 2)[1], ")"))
	}
	return s, nil
}

// runStep runs builds idx interleaved, Repeat times each, and loads each
// build's runs.
func (o BisectOptions) runStep(ctx context.Context, sc scenario.Scenario, k int, idx []int) (map[int]compare.Set, error) {
	var variants []string
	node := map[string]string{}
	at := map[string]int{}
	for _, i := range idx {
		v := fmt.Sprintf("%d-%s", i+1, safeName(o.Labels[i]))
		variants = append(variants, v)
		at[v] = i
		src := o.Builds[i]
		if src == "" {
			var err error
			if src, err = o.Build(ctx, i); err != nil {
				return nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("build %s: %w", o.Labels[i], err))
			}
			o.Builds[i] = src
		}
		p, err := copyProgram(src, filepath.Join(o.Out, "bin", v))
		if err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
		node[v] = p
	}
	step := filepath.Join(o.Out, fmt.Sprintf("step-%d", k))
	fmt.Fprintf(o.Log, "bisect: step %d: builds %s\n", k, strings.Join(variants, ", "))
	err := Interleave(ctx, o.Log, "bisect", variants, o.Repeat, func(ctx context.Context, v string, rep int) error {
		rc := sc
		rc.Out = filepath.Join(step, v, fmt.Sprintf("rep-%d", rep))
		return o.Run(ctx, rc, node[v])
	})
	if err != nil {
		return nil, err
	}
	sets := map[int]compare.Set{}
	for _, v := range variants {
		set, err := compare.Load(filepath.Join(step, v))
		if err != nil {
			return nil, exitcode.Wrap(exitcode.TargetFailed, err)
		}
		sets[at[v]] = set
	}
	return sets, nil
}

// change is build b's figure against build a's: Welch's interval over
// their runs and compare's noise floor (the largest change between two
// runs of one build).
func (o BisectOptions) change(sets map[int]compare.Set, a, b int, alpha float64) BisectChange {
	c := BisectChange{From: a, To: b}
	for _, r := range compare.Compare(sets[a], sets[b]) {
		if r.Metric == o.Figure.Title() {
			c.Base, c.Value, c.ChangePct, c.NoisePct = r.Base, r.Value, r.ChangePct, r.NoiseFloorPct
		}
	}
	c.CILowPct, c.CIHighPct = compare.RunsInterval(perRun(sets[a], o.Figure), perRun(sets[b], o.Figure), alpha)
	c.Moved = compare.Moved(c.ChangePct, c.NoisePct, c.CILowPct, c.CIHighPct)
	return c
}

func (c BisectChange) words() string {
	return fmt.Sprintf("%.4g → %.4g, %+.1f%%, interval %+.1f%% to %+.1f%%, noise floor %.1f%%", c.Base, c.Value, c.ChangePct, c.CILowPct, c.CIHighPct, c.NoisePct)
}

// safeName is a label as a folder's name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\\' {
			return '_'
		}
		return r
	}, s)
}

// PrintBisect writes the steps and the conclusion.
func PrintBisect(w io.Writer, s BisectSummary) {
	fmt.Fprintln(w)
	for k, st := range s.Steps {
		fmt.Fprintf(w, "step %d: %s .. %s .. %s: %s", k+1, s.Builds[st.Good], s.Builds[st.Mid], s.Builds[st.Bad], st.Decided)
		for _, c := range st.Changes {
			fmt.Fprintf(w, "; %s→%s %+.1f%% (%+.1f%% .. %+.1f%%)", s.Builds[c.From], s.Builds[c.To], c.ChangePct, c.CILowPct, c.CIHighPct)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n%s\n", s.Conclusion)
}
