// Package history keeps the headline figures of runs over time, one named
// series per scenario, kind and machine, and finds where they changed.
//
// The store is a JSON-lines file, one entry per line, appended: it needs no
// driver or cgo, a CI job can cache it or commit it, it diffs and merges
// like text, and a history of thousands of runs is a few hundred
// kilobytes, so SQLite's indexes would buy nothing.
package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/report"
)

// Entry is one run in a series.
type Entry struct {
	Series   string             `json:"series"`
	Label    string             `json:"label"` // a commit, or any name
	Time     time.Time          `json:"time"`  // when the run started
	Added    time.Time          `json:"added"`
	Run      string             `json:"run"` // its directory when added
	Kind     string             `json:"kind"`
	Scenario string             `json:"scenario"`
	Machine  string             `json:"machine"`
	Metrics  map[string]float64 `json:"metrics"` // by report.Def name
}

// FromResult is the entry of a finished run: every fixed metric it has.
func FromResult(r *report.Result, series, label string) (Entry, error) {
	if why := r.Incomplete(); why != "" {
		return Entry{}, fmt.Errorf("%s: the run did not finish (%s)", r.Dir, why)
	}
	if r.Summary.Steady.DurationS == 0 {
		return Entry{}, fmt.Errorf("%s: no steady window, so no figures to keep", r.Dir)
	}
	e := Entry{Label: label, Time: r.StartedAt, Added: time.Now().UTC(), Run: r.Dir, Metrics: map[string]float64{}}
	if r.Network != nil {
		e.Kind = r.Network.Kind
	}
	if m, ok := r.Scenario.(map[string]any); ok {
		e.Scenario, _ = m["name"].(string)
	}
	if e.Scenario == "" {
		e.Scenario = "default"
	}
	e.Machine = fmt.Sprintf("%s x%d", strings.TrimSpace(r.Environment.CPU), r.Environment.Cores)
	for _, d := range report.Defs(nil) {
		if v, ok := d.Run(&r.Summary); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			e.Metrics[d.Name] = v
		}
	}
	e.Series = series
	if e.Series == "" {
		e.Series = DefaultSeries(e)
	}
	return e, nil
}

// DefaultSeries names the series a run belongs to: its scenario, its kind
// and the machine (figures from different machines do not compare).
// Each part is a shell word: lower case, spaces and slashes as dashes
// ("AMD EPYC x2" reads amd-epyc-x2), so the name needs no quotes.
func DefaultSeries(e Entry) string {
	return word(e.Scenario) + "/" + word(e.Kind) + "/" + word(e.Machine)
}

func word(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s), "-")
}

// Store is the history file.
type Store struct{ Path string }

// Add appends e. A store whose last line was cut (a crash mid-append)
// would be unreadable with e after it: the cut line is removed first and
// returned, so the caller can say what was dropped.
func (s Store) Add(e Entry) (cut string, err error) {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return "", err
	}
	f, err := os.OpenFile(s.Path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if cut, err = dropCutLine(f); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return "", err
	}
	b, _ := json.Marshal(e)
	if _, err := f.Write(append(b, '\n')); err != nil {
		return "", err
	}
	return cut, f.Close()
}

// dropCutLine truncates f after its last newline when it does not end
// with one, and returns what it removed.
func dropCutLine(f *os.File) (string, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return "", err
	}
	const tailMax = 16 << 20 // an entry is far shorter
	off := max(0, st.Size()-tailMax)
	tail := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil {
		return "", err
	}
	if tail[len(tail)-1] == '\n' {
		return "", nil
	}
	keep := off + int64(bytes.LastIndexByte(tail, '\n')+1)
	cut := string(tail[keep-off:])
	return cut, f.Truncate(keep)
}

// All reads every entry, in the order added. A missing store is empty.
func (s Store) All() ([]Entry, error) {
	f, err := os.Open(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v, expected one history entry (JSON) per line", s.Path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", s.Path, err)
	}
	return out, nil
}

// Series are the entries of one series, in the order added.
func (s Store) Series(name string) ([]Entry, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range all {
		if e.Series == name {
			out = append(out, e)
		}
	}
	return out, nil
}

// Names lists the series in the store with their entry counts.
func (s Store) Names() (map[string]int, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range all {
		out[e.Series]++
	}
	return out, nil
}
