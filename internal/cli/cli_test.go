package cli_test

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/testbin"
)

// Every mistake a user can make gives one line naming it, exit code 2, and
// no panic or stack trace.
func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	bin := testbin.Path(t)
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--rate", "abc"}, `--rate: load.rate: "abc", expected a finite number`},
		{[]string{"run", "--rate", "-5"}, `load.rate: -5, expected a rate >= 0`},
		{[]string{"run", "--duration", "0s"}, `load.duration: 0s, expected a duration > 0`},
		{[]string{"run", "--bogus"}, `unknown flag: --bogus`},
		{[]string{"run", "--set", "load.rat=5"}, `load.rat: unknown field "rat"`},
		{[]string{"run", "--threshold", "speed>1"}, `unknown metric "speed"`},
		{[]string{"run", "--target", "cometbft"}, `target.endpoints: empty`},
		{[]string{"run", "--endpoint", "localhost:1"}, `target.endpoints[0]: "localhost:1", expected an RPC URL`},
		{[]string{"run", "--senders", "20000"}, `workload.senders: 20000, expected at most the 10000 funded accounts`},
		{[]string{"run", "a.yaml", "b.yaml"}, `accepts at most 1 arg`},
		{[]string{"validate", dir + "/missing.yaml"}, `missing.yaml`},
		{[]string{"net", "up"}, `--home is required`},
		{[]string{"net", "up", "--home", dir + "/n", "--validators", "0"}, `--validators: 0, expected 1..64`},
		{[]string{"net", "status", "--home", dir}, `no net.json there`},
		{[]string{"compare", dir}, `requires at least 2 arg`},
		{[]string{"compare", dir, dir}, `no result.json`},
		{[]string{"report", dir}, `not a run directory`},
		{[]string{"export", dir}, `--csv is the only format`},
		{[]string{"find-max", "--factor", "1"}, `--factor: 1, expected > 1`},
		{[]string{"find-max", "--slo", "p99<1"}, `unknown metric "p99"`},
	}
	for _, c := range cases {
		cmd := exec.Command(bin, c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: exit %v, want 2 (stderr %q)", c.args, err, stderr.String())
			continue
		}
		out := strings.TrimSpace(stderr.String())
		if !strings.Contains(out, c.want) {
			t.Errorf("%v: stderr %q, want it to contain %q", c.args, out, c.want)
		}
		if strings.Count(out, "\n") > 0 || strings.Contains(out, "goroutine") {
			t.Errorf("%v: more than one line: %q", c.args, out)
		}
	}
}
