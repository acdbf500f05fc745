package scenario

import (
	"strings"
	"testing"
	"time"
)

func TestParseFault(t *testing.T) {
	for in, want := range map[string]Fault{
		"10s:crash:node1:8s":            {At: Duration(10 * time.Second), Action: "crash", Target: "node1", For: Duration(8 * time.Second)},
		"10s:pause:node2":               {At: Duration(10 * time.Second), Action: "pause", Target: "node2"},
		"15s:partition:node0+node1:10s": {At: Duration(15 * time.Second), Action: "partition", Target: "node0+node1", For: Duration(10 * time.Second)},
		"5s:delay:node3:200ms":          {At: Duration(5 * time.Second), Action: "delay", Target: "node3", Value: "200ms"},
		"5s:bandwidth:node3:1mbit:20s":  {At: Duration(5 * time.Second), Action: "bandwidth", Target: "node3", Value: "1mbit", For: Duration(20 * time.Second)},
	} {
		got, err := ParseFault(in)
		if err != nil || got != want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%q prints as %q", in, got.String())
		}
	}
	for _, bad := range []string{"crash:node1", "10s:crash", "x:crash:node1", "10s:crash:node1:y", "5s:delay:node3", "1s:crash:n:1s:2s"} {
		if _, err := ParseFault(bad); err == nil || !strings.Contains(err.Error(), "--fault") {
			t.Errorf("ParseFault(%q): %v", bad, err)
		}
	}
}

// A schedule that cannot be done is refused before the run, naming the
// fault and what was expected.
func TestBadFaultSchedules(t *testing.T) {
	for want, faults := range map[string][]string{
		"faults[0].action":                  {"1s:explode:node1"},
		"expected before the load ends":     {"40s:crash:node1:1s"},
		"expected to end by the load's end": {"20s:crash:node1:15s"},
		"overlap on node node1":             {"5s:crash:node1:10s", "10s:pause:node1:2s"},
		"one partition at a time":           {"5s:partition:node0:10s", "8s:partition:node2:2s"},
		"faults[0].value":                   {"5s:delay:node3:forever"},
		"expected one node":                 {"5s:crash:node1+node2:1s"},
	} {
		sc := Default()
		for _, f := range faults {
			ft, err := ParseFault(f)
			if err != nil {
				t.Fatal(err)
			}
			sc.Faults = append(sc.Faults, ft)
		}
		err := sc.Validate()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", faults, err, want)
		}
	}
	sc := Default()
	for _, f := range []string{"5s:crash:node1:5s", "10s:crash:node1:5s", "12s:partition:node0+node2:5s"} {
		ft, _ := ParseFault(f)
		sc.Faults = append(sc.Faults, ft)
	}
	if err := sc.Validate(); err != nil {
		t.Errorf("a good schedule refused: %v", err)
	}
}
