package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/telemetry"
)

// The machine is blamed only for CPU that neither tpslab nor the system's
// measured processes used, or that a hypervisor took (issue 34: at load
// average 25-55 a run blamed the target's answers).
func TestJudgeMachine(t *testing.T) {
	tel := func(nodes ...float64) map[string]telemetry.Stat {
		m := map[string]telemetry.Stat{}
		for i, v := range nodes {
			m["node"+string(rune('0'+i))+".cpu_percent"] = telemetry.Stat{Mean: v}
		}
		return m
	}
	cases := []struct {
		name       string
		g          report.Generator
		tel        map[string]telemetry.Stat
		shortBy    string
		busy       bool
		wantBy     string
		wantOthers float64
	}{
		{"nodes use the machine", report.Generator{Cores: 2, MachineCPUPercent: 98, CPUPercent: 20}, tel(90, 80), "target", false, "target", 6},
		{"other processes use it", report.Generator{Cores: 2, MachineCPUPercent: 100, CPUPercent: 3, LoadAverage: 31}, tel(40, 30), "target", true, "target", 127}, // the verdict weighs the machine beside the target (report.Judge)
		{"steal", report.Generator{Cores: 2, MachineCPUPercent: 60, CPUPercent: 10, StealPercent: 25}, tel(50), "", true, "", 60},
		{"no node measured: never blamed on others", report.Generator{Cores: 2, MachineCPUPercent: 100, CPUPercent: 5}, nil, "target", false, "target", 195},
		{"a quiet machine", report.Generator{Cores: 2, MachineCPUPercent: 30, CPUPercent: 10}, tel(40), "", false, "", 10},
	}
	for _, c := range cases {
		s := &report.Summary{Generator: c.g, Telemetry: c.tel}
		if c.shortBy != "" {
			s.Shortfall = &report.Shortfall{By: c.shortBy}
		}
		judgeMachine(s)
		g := s.Generator
		if (g.MachineBusy != "") != c.busy || g.OthersCPUPercent != c.wantOthers {
			t.Errorf("%s: machine busy %q, others %.1f%% (want busy %v, others %.0f%%)", c.name, g.MachineBusy, g.OthersCPUPercent, c.busy, c.wantOthers)
		}
		if c.shortBy != "" && s.Shortfall.By != c.wantBy {
			t.Errorf("%s: shortfall by %s, want %s", c.name, s.Shortfall.By, c.wantBy)
		}
		if c.busy && (len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "measure on a quiet machine")) {
			t.Errorf("%s: warnings %q", c.name, s.Warnings)
		}
	}
}

// Workers busy without CPU and without waiting for answers were held up by
// the system, not short of capacity: the generator is not "limited" (issue
// 34: find-max stopped, blaming the generator at 1% of one core).
func TestIdleGeneratorIsNotLimited(t *testing.T) {
	sc, rec := shortOfItsSchedule()
	for _, c := range []struct {
		cpu     float64
		limited bool
		by      string
	}{{1, false, "target"}, {80, true, "generator_workers"}} {
		r := &summarizer{sc: &sc, rec: rec, profile: sc.Load.Profile()}
		s := &report.Summary{Generator: report.Generator{Cores: 2, CPUPercent: c.cpu, Workers: 1, BusyPercent: 99, WaitingPercent: 10}}
		r.judgeGenerator(s, 10)
		if s.Generator.Limited != c.limited || s.Shortfall == nil || s.Shortfall.By != c.by {
			t.Errorf("generator at %.0f%% of one core: limited %v, shortfall %+v", c.cpu, s.Generator.Limited, s.Shortfall)
		}
	}
	// Lanes on every core it may use: the verdict says more lanes cannot help.
	for _, c := range []struct {
		lanes, procs int
		every        bool
	}{{2, 2, true}, {1, 2, false}, {0, 2, false}} {
		r := &summarizer{sc: &sc, rec: rec, profile: sc.Load.Profile()}
		s := &report.Summary{Generator: report.Generator{Cores: 2, Procs: c.procs, CPUPercent: 150, Lanes: c.lanes, Workers: max(1, c.lanes), BusyPercent: 99, WaitingPercent: 10}}
		r.judgeGenerator(s, 10)
		if got := strings.Contains(s.Generator.Warning, "every core it may use"); got != c.every || !s.Generator.Limited {
			t.Errorf("%d lanes on GOMAXPROCS %d: limited %v, warning %q", c.lanes, c.procs, s.Generator.Limited, s.Generator.Warning)
		}
	}
}

// Lanes that waited for the target's answers: the verdict names the
// target, says how far the lanes grew, and what shows whether it answers
// faster in parallel (lanes do not grow on waits alone, nor up to
// load.max_connections).
func TestLanesWaitingForTheTargetSayHowFarTheyGrew(t *testing.T) {
	sc, rec := shortOfItsSchedule()
	for _, c := range []struct {
		lanes, start int
		want         string
	}{
		{3, 1, "; the lanes grew from 1 to 3; more endpoints, or send_interval 0"},
		{1, 0, "more endpoints, or send_interval 0"},
	} {
		r := &summarizer{sc: &sc, rec: rec, profile: sc.Load.Profile()}
		s := &report.Summary{Generator: report.Generator{Cores: 2, Procs: 2, CPUPercent: 40, Lanes: c.lanes, LanesStart: c.start, Workers: c.lanes, BusyPercent: 99, WaitingPercent: 80}}
		r.judgeGenerator(s, 10)
		if g := s.Generator; g.Limited || s.Shortfall == nil || s.Shortfall.By != "target" || !strings.Contains(g.Warning, c.want) {
			t.Errorf("%d lanes from %d: limited %v, shortfall %+v, warning %q, want %q", c.lanes, c.start, g.Limited, s.Shortfall, g.Warning, c.want)
		}
	}
}

// shortOfItsSchedule is a 10 s load at 400/s whose steady window sent
// 1000 of 4000: a shortfall whose cause the verdict must name.
func shortOfItsSchedule() (scenario.Scenario, *measure.Recorder) {
	sc := scenario.Default()
	sc.Load.Duration = scenario.Duration(10 * time.Second)
	sc.Load.Warmup = 0
	sc.Load.Rate = 400
	rec := measure.NewRecorder()
	rec.Steady.Offered, rec.Steady.Sent = 4000, 1000
	return sc, rec
}
