package scenario

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/netem"
)

// Fault is one scheduled fault (docs/faults.md): at At after the load
// begins, Action hits Target for For (0: until the load ends), then it is
// undone.
type Fault struct {
	At     Duration `yaml:"at" json:"at"`
	Action string   `yaml:"action" json:"action"` // crash | pause | partition | delay | bandwidth
	Target string   `yaml:"target" json:"target"` // a node; partition: nodes joined by +
	For    Duration `yaml:"for" json:"for,omitempty"`
	// Value is the added round trip of a delay (200ms) or the rate of a
	// bandwidth cut (1mbit).
	Value string `yaml:"value" json:"value,omitempty"`
}

// FaultActions are the actions a fault can take.
var FaultActions = []string{"crash", "pause", "partition", "delay", "bandwidth"}

// NeedsLinks says the action works on emulated links.
func (f Fault) NeedsLinks() bool {
	return f.Action == "partition" || f.Action == "delay" || f.Action == "bandwidth"
}

// Nodes are the nodes the fault hits.
func (f Fault) Nodes() []string { return strings.Split(f.Target, "+") }

func (f Fault) String() string {
	s := fmt.Sprintf("%s:%s:%s", f.At.D(), f.Action, f.Target)
	if f.Value != "" {
		s += ":" + f.Value
	}
	if f.For > 0 {
		s += ":" + f.For.D().String()
	}
	return s
}

// ParseFault reads --fault AT:ACTION:TARGET[:FOR], where delay and
// bandwidth take their amount before FOR: 5s:delay:node3:200ms[:10s].
func ParseFault(s string) (Fault, error) {
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("--fault: %q: %s, expected AT:ACTION:TARGET[:FOR] such as 10s:crash:node1:8s, or 5s:delay:node3:200ms[:FOR]", s, why)
	}
	p := strings.Split(s, ":")
	if len(p) < 3 || len(p) > 5 {
		return bad("wrong number of parts")
	}
	var f Fault
	at, err := time.ParseDuration(p[0])
	if err != nil {
		return bad("AT is not a duration")
	}
	f.At, f.Action, f.Target = Duration(at), p[1], p[2]
	rest := p[3:]
	if f.Action == "delay" || f.Action == "bandwidth" {
		if len(rest) == 0 {
			return bad(f.Action + " needs an amount")
		}
		f.Value, rest = rest[0], rest[1:]
	}
	if len(rest) > 1 {
		return bad("too many parts")
	}
	if len(rest) == 1 {
		d, err := time.ParseDuration(rest[0])
		if err != nil {
			return bad("FOR is not a duration")
		}
		f.For = Duration(d)
	}
	return f, nil
}

// validateFaults checks the schedule against the load: known actions,
// amounts that parse, inside the load, at most one fault at a time on a
// node, one partition at a time. Node names are checked against the
// network when it is known (fault.Check).
func validateFaults(faults []Fault, load time.Duration) error {
	type span struct {
		from, to time.Duration
		i        int
	}
	byNode := map[string][]span{}
	for i, f := range faults {
		path := fmt.Sprintf("faults[%d]", i)
		if err := oneOf(path+".action", f.Action, FaultActions...); err != nil {
			return err
		}
		if f.At < 0 || f.For < 0 {
			return fmt.Errorf("%s: at %s for %s, expected durations >= 0", path, f.At.D(), f.For.D())
		}
		if f.At.D() >= load {
			return fmt.Errorf("%s.at: %s, expected before the load ends at %s", path, f.At.D(), load)
		}
		end := load
		if f.For > 0 {
			end = f.At.D() + f.For.D()
			if end > load {
				return fmt.Errorf("%s.for: %s from %s ends at %s, expected to end by the load's end at %s", path, f.For.D(), f.At.D(), end, load)
			}
		}
		if f.Target == "" || strings.Contains(f.Target, "++") || strings.HasPrefix(f.Target, "+") || strings.HasSuffix(f.Target, "+") {
			return fmt.Errorf("%s.target: %q, expected a node name such as node1 (partition: node0+node1)", path, f.Target)
		}
		if f.Action != "partition" && len(f.Nodes()) > 1 {
			return fmt.Errorf("%s.target: %q, expected one node: only partition takes a group", path, f.Target)
		}
		switch f.Action {
		case "delay":
			d, err := time.ParseDuration(f.Value)
			if err != nil || d < time.Millisecond || d > 10*time.Second {
				return fmt.Errorf("%s.value: %q, expected the added round trip, 1ms..10s, such as 200ms", path, f.Value)
			}
		case "bandwidth":
			if _, err := netem.ParseRate(f.Value); err != nil {
				return fmt.Errorf("%s.value: %v", path, err)
			}
		default:
			if f.Value != "" {
				return fmt.Errorf("%s.value: %q, expected none: %s takes no amount", path, f.Value, f.Action)
			}
		}
		key := f.Nodes()
		if f.Action == "partition" {
			key = append(key, "(partition)") // one partition at a time
		}
		for _, n := range key {
			byNode[n] = append(byNode[n], span{f.At.D(), end, i})
		}
	}
	names := make([]string, 0, len(byNode))
	for n := range byNode {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := byNode[n]
		sort.Slice(s, func(a, b int) bool { return s[a].from < s[b].from })
		for k := 1; k < len(s); k++ {
			if s[k].from < s[k-1].to {
				what := "node " + n
				if n == "(partition)" {
					what = "the network (one partition at a time)"
				}
				return fmt.Errorf("faults[%d] and faults[%d]: overlap on %s (%s..%s and from %s), expected one fault at a time", s[k-1].i, s[k].i, what, s[k-1].from, s[k-1].to, s[k].from)
			}
		}
	}
	return nil
}
