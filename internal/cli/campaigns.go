package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/campaign"
	"github.com/tpslab/tpslab/internal/findmax"
	"github.com/tpslab/tpslab/internal/report"
)

// entry is one line of `tpslab runs` and of `tpslab serve`'s list: a run,
// a repetition set, a find-max search or an ab comparison, with its result
// and its pages (paths under the run's folder, as serve serves them).
type entry struct {
	Name    string // the folder, relative to the runs folder
	What    string // run | repetitions | find-max | ab | envelopes | why | bisect
	Started time.Time
	Result  string
	Status  string // ok | warn | fail: how it went, for its colour
	Page    string // the campaign's own page ("" for a set: compare it)
	Report  string
}

// abFile is what ab leaves beside its runs for the lists to read.
const abFile = "ab.json"

// abSummary is ab.json.
type abSummary struct {
	A, B        string
	Repeat      int
	Verdict     string
	Regressions []string `json:",omitempty"`
	Started     time.Time
}

// campaigns lists what root holds: each folder is the first of these it
// is (a find-max search, an ab comparison, a repetition set, a run), and
// the runs a campaign made are its, not listed apart. Linked folders are
// not followed. run reads one run's line (serve caches them).
func campaigns(root string, run func(dir string) (entry, bool)) []entry {
	var out []entry
	var visit func(dir string)
	visit = func(dir string) {
		name, _ := filepath.Rel(root, dir)
		if e, ok := bisectEntry(dir, name); ok {
			out = append(out, e)
			return
		}
		if e, ok := whyEntry(dir, name); ok {
			out = append(out, e)
			return
		}
		if e, ok := sweepEntry(dir, name); ok {
			out = append(out, e)
			return
		}
		if e, ok := findMaxEntry(dir, name); ok {
			out = append(out, e)
			return
		}
		if e, ok := abEntry(dir, name); ok {
			out = append(out, e)
			return
		}
		if set, ok := readSet(dir); ok {
			out = append(out, entry{Name: name, What: "repetitions", Started: set.Started, Result: set.About, Status: set.Status})
			return
		}
		if st, err := os.Lstat(filepath.Join(dir, "result.json")); err == nil && st.Mode().IsRegular() {
			if e, ok := run(dir); ok {
				e.Name = name
				out = append(out, e)
			}
			return
		}
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() && s.Type()&os.ModeSymlink == 0 {
				visit(filepath.Join(dir, s.Name()))
			}
		}
	}
	visit(root)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// runEntry is a finished run's line.
func runEntry(r *report.Result) entry {
	e := entry{What: "run", Started: r.StartedAt, Result: r.Verdict(), Status: outcomeStatus(r.Outcome()), Page: "", Report: "report.html"}
	// A threshold the run failed fails it, whatever the system did (its
	// exit code was 1): the list says so, with the thresholds that failed.
	var missed []string
	for _, o := range r.Thresholds {
		if !o.OK {
			missed = append(missed, fmt.Sprintf("%s (%s)", o.Expr, o.Actually()))
		}
	}
	if len(missed) > 0 {
		e.Status = "fail"
		e.Result = "thresholds failed: " + strings.Join(missed, "; ") + ". " + e.Result
	}
	return e
}

// outcomeStatus is an outcome's colour: kept up green; the system limited
// or the generator amber; nothing committed, a halt, a death red.
func outcomeStatus(o report.Outcome) string {
	switch o {
	case report.OutcomeKeptUp:
		return "ok"
	case report.OutcomeNothing, report.OutcomeHalted, report.OutcomeDied, report.OutcomeNoLoad, report.OutcomeNoSteady:
		return "fail"
	}
	return "warn"
}

// findMaxEntry reads a find-max search's folder (find-max.json).
func findMaxEntry(dir, name string) (entry, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "find-max.json"))
	if err != nil {
		return entry{}, false
	}
	var f struct {
		Objective string          `json:"objective"`
		TookS     float64         `json:"took_s"`
		Outcome   findmax.Outcome `json:"outcome"`
	}
	e := entry{Name: name, What: "find-max", Page: "find-max.html"}
	if err := json.Unmarshal(b, &f); err != nil {
		e.Result, e.Status = "find-max.json unreadable: "+err.Error(), "fail"
		return e, true
	}
	if st, err := os.Stat(filepath.Join(dir, "find-max.json")); err == nil {
		e.Started = st.ModTime().Add(-time.Duration(f.TookS * float64(time.Second)))
	}
	o := f.Outcome
	switch {
	case o.Sustainable <= 0:
		e.Result, e.Status = fmt.Sprintf("no rate met %s (%d steps; %s)", f.Objective, len(o.Steps), o.Stopped), "fail"
	case o.Confirmed:
		e.Result, e.Status = fmt.Sprintf("sustainable %s tx/s, confirmed, under %s (%d steps)", report.Count(int64(math.RoundToEven(o.Sustainable))), f.Objective, len(o.Steps)), "ok"
	default:
		e.Result, e.Status = fmt.Sprintf("sustainable %s tx/s, not confirmed, under %s (%d steps; %s)", report.Count(int64(math.RoundToEven(o.Sustainable))), f.Objective, len(o.Steps), o.Stopped), "warn"
	}
	return e, true
}

// abEntry reads an ab comparison's folder: the ab.json ab wrote, beside
// its a/ and b/ repetition sets. A folder that merely holds runs named a
// and b (the README's tour: --out runs/a, runs/b) is no comparison: its
// runs are listed each on its own (issue 70).
func abEntry(dir, name string) (entry, bool) {
	var s abSummary
	raw, err := os.ReadFile(filepath.Join(dir, abFile))
	if err != nil || json.Unmarshal(raw, &s) != nil {
		return entry{}, false
	}
	a, aok := readSet(filepath.Join(dir, "a"))
	_, bok := readSet(filepath.Join(dir, "b"))
	if !aok || !bok {
		return entry{}, false
	}
	e := entry{Name: name, What: "ab", Started: a.Started, Status: "ok",
		Result: fmt.Sprintf("B (%s) against A (%s), %d pairs: %s", filepath.Base(s.B), filepath.Base(s.A), s.Repeat, s.Verdict)}
	if len(s.Regressions) > 0 {
		e.Status = "fail"
	}
	if _, err := os.Stat(filepath.Join(dir, "compare.html")); err == nil {
		e.Page = "compare.html"
	}
	return e, true
}

// sweepEntry reads an envelope sweep's folder (campaign.SweepFile): its
// find-max searches are its own, not listed apart.
func sweepEntry(dir, name string) (entry, bool) {
	p := filepath.Join(dir, campaign.SweepFile)
	b, err := readBounded(p, serveMaxResult)
	if err != nil {
		return entry{}, false
	}
	e := entry{Name: name, What: "envelopes", Page: "envelopes.html", Status: "ok"}
	var s campaign.SweepSummary
	if err := json.Unmarshal(b, &s); err != nil {
		e.Result, e.Status = campaign.SweepFile+" unreadable: "+err.Error(), "fail"
		return e, true
	}
	if st, err := os.Stat(p); err == nil {
		e.Started = st.ModTime().Add(-time.Duration(s.TookS * float64(time.Second)))
	}
	e.Result = s.Conclusion
	for _, r := range s.Rows {
		if r.Sustainable <= 0 {
			e.Status = "warn"
		}
	}
	if len(s.Rows) == 0 {
		e.Status = "fail"
	}
	return e, true
}

// whyEntry reads a why folder (campaign.WhyFile): its experiments' runs
// are its own.
func whyEntry(dir, name string) (entry, bool) {
	p := filepath.Join(dir, campaign.WhyFile)
	b, err := readBounded(p, serveMaxResult)
	if err != nil {
		return entry{}, false
	}
	e := entry{Name: name, What: "why", Page: "why.html", Status: "ok"}
	var s campaign.WhySummary
	if err := json.Unmarshal(b, &s); err != nil {
		e.Result, e.Status = campaign.WhyFile+" unreadable: "+err.Error(), "fail"
		return e, true
	}
	if st, err := os.Stat(p); err == nil {
		e.Started = st.ModTime().Add(-time.Duration(s.TookS * float64(time.Second)))
	}
	e.Result = fmt.Sprintf("%s named %s: %s", filepath.Base(s.Run), s.Limit, s.Conclusion)
	for _, r := range s.Rows {
		if r.Named && r.Verdict != campaign.WhyConfirmed {
			e.Status = "warn" // the named limit was not confirmed
		}
	}
	return e, true
}

// bisectEntry reads a bisect folder (campaign.BisectFile).
func bisectEntry(dir, name string) (entry, bool) {
	p := filepath.Join(dir, campaign.BisectFile)
	b, err := readBounded(p, serveMaxResult)
	if err != nil {
		return entry{}, false
	}
	e := entry{Name: name, What: "bisect", Page: "bisect.html", Status: "ok"}
	var s campaign.BisectSummary
	if err := json.Unmarshal(b, &s); err != nil {
		e.Result, e.Status = campaign.BisectFile+" unreadable: "+err.Error(), "fail"
		return e, true
	}
	if st, err := os.Stat(p); err == nil {
		e.Started = st.ModTime().Add(-time.Duration(s.TookS * float64(time.Second)))
	}
	e.Result = s.Conclusion
	if strings.HasPrefix(s.Conclusion, "cannot decide") {
		e.Status = "warn"
	}
	return e, true
}
