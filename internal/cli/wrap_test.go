package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
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
