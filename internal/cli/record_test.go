package cli_test

import (
	"math"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

// A finished run's arrivals, recorded and replayed at speed 1, offer the
// same payments second by second and in total; at speed 2 in half the time.
func TestRecordAndReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("three runs against a sink")
	}
	bin := testbin.Path(t)
	srv := httptest.NewServer(sink.NewSink("tpslab", testnet.DefaultGenesis()))
	defer srv.Close()
	dir := t.TempDir()
	runTo := func(name string, args ...string) *report.Result {
		t.Helper()
		out := filepath.Join(dir, name)
		args = append([]string{"run", "--target", "cometbft", "--endpoint", srv.URL, "--set", "workload.kind=raw",
			"--warmup", "1s", "--drain", "1s", "--out", out}, args...)
		if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil && exitCode(err) != 3 { // 3: nothing committed (a sink commits nothing)
			t.Fatalf("%v: %v\n%s", args, err, b)
		}
		r, err := report.ReadResult(out)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	orig := runTo("orig", "--rate", "400", "--arrival", "poisson", "--duration", "6s")
	trace := filepath.Join(dir, "trace.csv")
	if b, err := exec.Command(bin, "record", filepath.Join(dir, "orig"), "--out", trace).CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, b)
	}
	offered := func(r *report.Result) (per []int64, loadSeconds int) {
		for _, s := range r.Series {
			per = append(per, s.Offered)
			if s.Offered > 0 {
				loadSeconds++
			}
		}
		return per, loadSeconds
	}
	want, wantSecs := offered(orig)
	same := runTo("speed1", "--trace", trace)
	got, gotSecs := offered(same)
	if same.Summary.Offered != orig.Summary.Offered || gotSecs != wantSecs {
		t.Fatalf("replay offered %d over %d s, the run %d over %d s", same.Summary.Offered, gotSecs, orig.Summary.Offered, wantSecs)
	}
	for i := range want {
		if i < len(got) && math.Abs(float64(got[i]-want[i])) > 0.01*float64(want[i])+1 {
			t.Errorf("second %d: replay offered %d, the run %d (all: %v against %v)", i+1, got[i], want[i], got, want)
		}
	}
	fast := runTo("speed2", "--trace", trace, "--trace-speed", "2")
	_, fastSecs := offered(fast)
	if fast.Summary.Offered != orig.Summary.Offered || fastSecs != wantSecs/2 {
		t.Errorf("at speed 2: offered %d over %d s, want %d over %d s", fast.Summary.Offered, fastSecs, orig.Summary.Offered, wantSecs/2)
	}
}
