package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The markdown summary is a bold verdict and a two-column table: every
// table line starts and ends with a pipe and has two cells.
func TestMarkdownSummaryIsATable(t *testing.T) {
	r := &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now(), Network: &Network{Kind: "builtin", Validators: 4}}
	r.Summary.Offered, r.Summary.Sent, r.Summary.Committed = 1000, 1000, 990
	r.Summary.CommittedTPS, r.Summary.Steady.DurationS = 99, 10
	var b bytes.Buffer
	Markdown(&b, r)
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "**kept up: committed 99 tx/s") || !strings.HasSuffix(lines[0], "**") {
		t.Errorf("verdict line %q", lines[0])
	}
	rows := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		rows++
		if !strings.HasSuffix(l, "|") || strings.Count(l, "|") != 3 {
			t.Errorf("row %q: want two cells", l)
		}
	}
	if rows < 5 || !strings.Contains(b.String(), "|---|---:|") {
		t.Errorf("no table:\n%s", b.String())
	}
}

// Node CPU per payment is one definition: per second as over the steady
// window, the emulated links' proxies are not the system's (issue 22).
func TestNodeCPUPerPaymentLeavesOutTheLinks(t *testing.T) {
	var def Def
	for _, d := range Defs(nil) {
		if d.Name == "node_cpu_us_per_tx" {
			def = d
		}
	}
	s := &Summary{CommittedTPS: 100}
	v, ok := def.Second(&Second{Telemetry: map[string]float64{"node0.cpu_percent": 50, "links.cpu_percent": 30}}, s)
	if !ok || v != 5000 {
		t.Errorf("per second: %.0f µs, want 5000 (50%% of a core over 100 tx/s, the links' 30%% left out)", v)
	}
}

// A run that offered nothing prints no generator line ("0% of one core (of
// 0)" read as a measurement; issue 23, case 7).
func TestNoGeneratorLineWhenNothingWasOffered(t *testing.T) {
	var b bytes.Buffer
	PrintFullSummary(&b, &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now()})
	if strings.Contains(b.String(), "generator:") {
		t.Errorf("a generator line for a run that offered nothing:\n%s", b.String())
	}
	r := &Result{SchemaVersion: SchemaVersion, Status: "complete", StartedAt: time.Now()}
	r.Summary.Offered, r.Summary.Generator.Cores, r.Summary.Generator.CPUPercent = 100, 2, 12
	b.Reset()
	PrintFullSummary(&b, r)
	if !strings.Contains(b.String(), "generator: 12% of one core (of 2)") {
		t.Errorf("no generator line for a run that offered load:\n%s", b.String())
	}
}
