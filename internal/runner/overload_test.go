package runner_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Offered three times what the target can answer, the run must not be
// called sustained: the headline says what was not sent and who could not
// keep up, here the target, from the lanes' own clocks (issue 23, case 5).
func TestOverloadNamesWhoCouldNotKeepUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	sk := sink.NewSink("tpslab", testnet.DefaultGenesis())
	sk.CheckTx = time.Millisecond // answers at most 1,000 payments a second
	srv := httptest.NewServer(sk)
	defer srv.Close()
	sc := scenario.Default()
	sc.Target.Kind = "cometbft"
	sc.Target.Endpoints = []string{srv.URL}
	sc.Workload.Kind = "raw"
	sc.Load.Rate = 3000
	sc.Load.Duration = scenario.Duration(5 * time.Second)
	sc.Load.Warmup = scenario.Duration(time.Second)
	sc.Load.Drain = scenario.Duration(2 * time.Second)
	sc.Out = filepath.Join(t.TempDir(), "run")
	res, _ := run(t, context.Background(), sc)
	if res == nil {
		t.Fatal("no result")
	}
	s := res.Summary
	t.Logf("verdict: %s", res.Verdict())
	t.Logf("generator: %+v", s.Generator)
	if s.Offered != s.Sent+s.Unsent {
		t.Errorf("offered %d, sent %d + unsent %d", s.Offered, s.Sent, s.Unsent)
	}
	f := s.Shortfall
	if f == nil {
		t.Fatalf("no shortfall reported for %.0f sent of %.0f offered tx/s", s.SentTPS, s.OfferedTPS)
	}
	if f.By != "target" || s.Generator.Limited {
		t.Errorf("blamed %q (limited %v), want the target: %s", f.By, s.Generator.Limited, f.Why)
	}
	if s.Generator.BusyPercent < 90 || s.Generator.WaitingPercent < 50 {
		t.Errorf("the lane was busy %.0f%%, waiting %.0f%%: it did nothing but wait for the target", s.Generator.BusyPercent, s.Generator.WaitingPercent)
	}
	v := res.Verdict()
	if !strings.HasPrefix(v, "fell behind: sent ") || !strings.Contains(v, "never sent") || res.Outcome() != report.OutcomeTargetShort {
		t.Errorf("verdict %q", v)
	}
	if f.Unsent == 0 || f.Unsent != s.Unsent {
		t.Errorf("shortfall unsent %d, run unsent %d", f.Unsent, s.Unsent)
	}
}
