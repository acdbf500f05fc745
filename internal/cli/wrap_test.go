package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tpslab/tpslab/internal/report"
)

func TestTermLinesWrapAtTheWidth(t *testing.T) {
	var b strings.Builder
	w := &termLines{w: &b, width: 40}
	w.Write([]byte("load: 1000 tx/s of presigned payments (poisson arrivals) for 30s; results in runs/20261128-044512\nshort line\n"))
	w.Write([]byte("\rpresigning 10 payments:  50%"))
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\rpresigning 10 payments:  50%"), "\n") {
		if utf8.RuneCountInString(l) > 40 {
			t.Errorf("line wider than 40: %q", l)
		}
	}
	if !strings.Contains(b.String(), "\n  ") || !strings.Contains(b.String(), "short line\n") || !strings.HasSuffix(b.String(), "\rpresigning 10 payments:  50%") {
		t.Errorf("wrapped:\n%s", b.String())
	}
}

// A run's page under serve says what it ran on (issue 55).
func TestProvenanceLine(t *testing.T) {
	r := &report.Result{Network: &report.Network{Provenance: &report.Provenance{
		Programs:      []report.Program{{Path: "/c/tpsd-1/tpsd", SHA256: "0123456789abcdef0123", Version: "tpsd v1"}},
		GenesisSHA256: "fedcba9876543210fedcba98"}}}
	if got := provenanceLine(r); !strings.Contains(got, "tpsd (tpsd v1; sha256 0123456789ab…)") || !strings.Contains(got, "genesis fedcba9876543210fedc…") {
		t.Errorf("%q", got)
	}
}
