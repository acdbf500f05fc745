package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBadScenarios(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown top field", "rat: 5", `rat: unknown field, expected one of`},
		{"unknown nested field", "load:\n  rat: 5", `load.rat: unknown field, expected one of arrival, connections`},
		{"misspelt field", "load:\n  duratoin: 5s", `; did you mean duration?`},
		{"rate not a number", "load:\n  rate: fast", `load.rate: "fast", expected a finite number`},
		{"rate NaN", "load:\n  rate: NaN", `load.rate: "NaN", expected a finite number`},
		{"rate infinite", "load:\n  rate: .inf", `load.rate: ".inf", expected a finite number`},
		{"rate too high", "load:\n  rate: 1e12", `load.rate: 1e+12, expected at most 1000000 payments per second`},
		{"duration too long", "load:\n  duration: 100000h", `load.duration: 100000h0m0s, expected at most 168h0m0s`},
		{"stage target too high", "load:\n  stages:\n    - {duration: 10s, target: 5e9}", `load.stages[0].target: 5e+09, expected at most 1000000`},
		{"too many steps", "load:\n  steps: {from: 1, to: 1000000, by: 1, every: 1s}", `load.steps: 1000000 steps`},
		{"duplicate key", "load:\n  rate: 5\n  duration: 10s\n  rate: 7", `load.rate: given twice (lines 3 and 5), expected each field once`},
		{"duplicate top key", "load: {rate: 5}\nload: {rate: 6}", `load: given twice (lines 2 and 3)`},
		{"chain id too long", "workload:\n  chain_id: " + strings.Repeat("c", 65), `workload.chain_id: 65 characters, expected at most 64`},
		{"presign too big", "load:\n  rate: 1000000\n  duration: 160h", `workload.mode: presigned: 576000000001 payments need about`},
		{"commit timeout", "commit_timeout: 0s", `commit_timeout: 0s, expected a duration between 1ms and 24h0m0s`},
		{"users", "load:\n  model: closed\n  users: 2000000", `load.users: 2000000, expected 1..1000000`},
		{"max connections", "load:\n  max_connections: 20000", `load.max_connections: 20000, expected 0 (8 times load.connections) or 32..10000`},
		{"hot share NaN", "workload:\n  sender_choice: {dist: hot, hot: 5, hot_share: .nan}", `workload.sender_choice.hot_share: ".nan", expected a finite number`},
		{"negative rate", "load:\n  rate: -5", `load.rate: -5, expected a rate above 0 payments per second`},
		{"zero rate", "load:\n  rate: 0", `load.rate: 0, expected a rate above 0 payments per second`},
		{"zero duration", "load:\n  duration: 0s", `load.duration: 0s, expected a duration > 0`},
		{"bad duration", "load:\n  duration: thirty", `load.duration: "thirty" is not a duration, expected e.g. 30s`},
		{"warmup too long", "load:\n  duration: 10s\n  warmup: 10s", `load.warmup: 10s, expected >= 0 and shorter than the load (10s)`},
		{"model", "load:\n  model: ramp", `load.model: "ramp", expected one of [open closed]`},
		{"closed without users", "load:\n  model: closed", `load.users: 0, expected 1..1000000`},
		{"users beyond senders", "load:\n  model: closed\n  users: 3000\n  pacing: 5s\nworkload:\n  senders: 100", `load.users: 3000, expected at most workload.senders (100)`},
		{"senders not integer", "workload:\n  senders: many", `workload.senders: "many", expected an integer`},
		{"zero senders", "workload:\n  senders: 0", `workload.senders: 0, expected 1..10000000`},
		{"window", "workload:\n  window: 0", `workload.window: 0, expected 1..1000000`},
		// Issue 52: a supply past 64 bits, a mix kind twice.
		{"fund overflow", "workload:\n  senders: 1000000\n  fund_amount: 18446744073709551615", `workload.fund_amount: 18446744073709551615 to each of 1000000 senders, expected at most 18446744073709`},
		{"mix twice", "workload:\n  mix: [{kind: send, weight: 1}, {kind: send, weight: 2}]", `workload.mix[1].kind: send, already workload.mix[0]'s`},
		{"zipf exponent", "workload:\n  sender_choice: {dist: zipf, s: 0.5}", `workload.sender_choice.s: 0.5, expected an exponent > 1`},
		{"hot set", "workload:\n  recipient_choice: {dist: hot, hot: 0, hot_share: 0.5}", `workload.recipient_choice.hot: 0, expected 1..`},
		{"amount", "workload:\n  amount: {min: 5, max: 1}", `workload.amount: min 5 max 1, expected 1 <= min <= max`},
		{"mode", "workload:\n  mode: later", `workload.mode: "later", expected one of [presigned live]`},
		{"endpoint not a URL", "target:\n  endpoints: [localhost]", `target.endpoints[0]: "localhost", expected an RPC URL`},
		{"stage ramp", "load:\n  stages:\n    - {duration: 10s, target: 5, ramp: curvy}", `load.stages[0].ramp: "curvy", expected one of [linear step]`},
		{"stage duration", "load:\n  stages:\n    - {duration: 0s, target: 5}", `load.stages[0].duration: 0s, expected a duration > 0`},
		{"steps by", "load:\n  steps: {from: 1, to: 100, by: 0, every: 1s}", `load.steps.by: 0, expected > 0`},
		{"list expected", "load:\n  stages: 5", `load.stages: expected a list, got a value "5"`},
		{"mapping expected", "load: 5", `load: expected a mapping of fields, got a value "5"`},
		{"not yaml", "load: [", `not valid YAML`},
		{"version", "version: 2", `version: 2, expected 1`},
		{"version missing", "load:\n  rate: 5", "version: missing, expected `version: 1`"},
		{"empty file", "", "the file is empty, expected a YAML mapping"},
		{"comments only", "# nothing\n", "the file is empty"},
		{"validators", "network:\n  validators: 0", `network.validators: 0, expected 1..64`},
		{"presigned closed no pacing", "load:\n  model: closed\n  users: 5", `workload.mode: presigned with a closed model needs load.pacing > 0`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
		body := c.yaml
		if !strings.HasPrefix(c.name, "version") && !strings.Contains(c.name, "empty") && !strings.Contains(c.name, "comments") {
			body = "version: 1\n" + body
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadFile(path)
		if err == nil {
			err = s.Validate()
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", c.name, err)
		}
	}
}

func TestSetOverridesAndDefaults(t *testing.T) {
	s := Default()
	if err := s.Validate(); err != nil {
		t.Fatalf("default scenario invalid: %v", err)
	}
	if err := Set(&s, "load.rate", "2500"); err != nil {
		t.Fatal(err)
	}
	if err := Set(&s, "load.duration", "1m"); err != nil {
		t.Fatal(err)
	}
	if err := Set(&s, "target.endpoints", "[http://127.0.0.1:1, http://127.0.0.1:2]"); err != nil {
		t.Fatal(err)
	}
	if s.Load.Rate != 2500 || s.Load.Duration.D() != time.Minute || len(s.Target.Endpoints) != 2 {
		t.Fatalf("overrides not applied: %+v", s.Load)
	}
	if err := Set(&s, "load.nope", "1"); err == nil || !strings.Contains(err.Error(), `unknown field "nope"`) {
		t.Fatalf("unknown path: %v", err)
	}
	if err := Set(&s, "load.steps.from", "1"); err != nil {
		t.Fatalf("path through a nil pointer: %v", err)
	}
	s.Workload.Gas = 5
	if err := Apply(&s, []byte("workload: {gas: auto}")); err != nil || s.Workload.Gas != 0 {
		t.Fatalf("gas: auto gave %d, %v; want 0, the kind's own", s.Workload.Gas, err)
	}
	if err := Apply(&s, []byte("load: {rate: auto}")); err == nil {
		t.Fatal("load.rate: auto was taken: only fields whose 0 means auto take it")
	}
}

func FuzzApply(f *testing.F) {
	f.Add([]byte("load:\n  rate: 5\n  stages:\n    - {duration: 1s, target: 3}\n"))
	f.Add([]byte("workload: {kind: raw}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Default()
		if err := Apply(&s, b); err == nil {
			_ = s.Validate()
		}
	})
}

// "auto" gathering: about 20 payments within 5..20 ms, and at high rates
// about 200 payments, down to 1 ms; a duration is taken as given.
func TestSendEvery(t *testing.T) {
	for _, c := range []struct {
		interval string
		rate     float64
		want     time.Duration
	}{
		{"auto", 0, 20 * time.Millisecond},
		{"auto", 500, 20 * time.Millisecond},
		{"auto", 1000, 20 * time.Millisecond},
		{"auto", 2000, 10 * time.Millisecond},
		{"auto", 20_000, 5 * time.Millisecond},
		{"auto", 40_000, 5 * time.Millisecond},
		{"auto", 100_000, 2 * time.Millisecond},
		{"auto", 400_000, time.Millisecond},
		{"auto", 2_000_000, time.Millisecond},
		{"0", 400_000, 0},
		{"40ms", 1000, 40 * time.Millisecond},
	} {
		if got := (Load{SendInterval: c.interval}).SendEvery(c.rate); got != c.want {
			t.Errorf("send_interval %s at %.0f/s: %s, want %s", c.interval, c.rate, got, c.want)
		}
	}
}

// A long load is compressed in time for a quick check: its faults keep
// their place in it, its rates stay, it still validates.
func TestCompressKeepsTheShapeOfTheLoad(t *testing.T) {
	s, err := ReadFile("../../examples/ramp-steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := s.Load.LoadDuration()
	if f := Compress(&s, 3*time.Second); f >= 1 || s.Load.LoadDuration() > 3*time.Second || s.Load.Steps.To != 7000 {
		t.Errorf("factom steps: factor %g, %s (from %s), to %g", f, s.Load.LoadDuration(), before, s.Load.Steps.To)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("compressed: %v", err)
	}
	d := Default()
	d.Load.Duration = Duration(45 * time.Second)
	for _, spec := range []string{"10s:crash:node1:8s", "25s:partition:node0+node1:10s"} {
		f, _ := ParseFault(spec)
		d.Faults = append(d.Faults, f)
	}
	Compress(&d, 9*time.Second)
	if d.Load.Duration.D() != 9*time.Second || d.Faults[0].At.D() != 2*time.Second || d.Faults[1].For.D() != 2*time.Second || d.Load.Drain.D() != 9*time.Second {
		t.Errorf("faults: %+v, load %+v", d.Faults, d.Load)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("compressed with faults: %v", err)
	}
}
