package all

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testbin"
)

// hostile are the values every setting is tried with (issue 52, case 1):
// zero, negative, not a number, huge.
var hostile = []string{"0", "-5", "abc", "1e30", "99999999999999999999999"}

// settingFields lists a section's settings by their yaml names, with
// their Go kinds.
func settingFields(defaults any) map[string]reflect.Kind {
	out := map[string]reflect.Kind{}
	t := reflect.TypeOf(defaults).Elem()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out[name] = t.Field(i).Type.Kind()
		}
	}
	return out
}

// tryValue sets section.field to v in a scenario of kind and validates it,
// turning a panic into an error that says so.
func tryValue(reg *kinds.Registry, kind, path, v string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("PANIC: %v", p)
		}
	}()
	s := scenario.Default()
	s.Target.Kind = kind
	s.Target.Endpoints = []string{"http://127.0.0.1:1"}
	if kind == "http" && path != "http.path" {
		if err := scenario.Set(&s, "http.path", "/payments"); err != nil {
			return err
		}
	}
	if err := scenario.Set(&s, path, v); err != nil {
		return err
	}
	return reg.Validate(&s)
}

// zeroMeansDefault are the numeric settings whose 0 is the kind's default
// or "off"; every other numeric setting refuses 0.
var zeroMeansDefault = map[string]bool{"evm.depth": true, "ledger.max_queue": true, "ledger.batch_wait": true,
	"http.throttle_retries": true, "http.batch_size": true, "http.poll_interval": true, "http.max_retry_after": true,
	"http.timeout": true, "cosmos.fee_margin": true}

// enumerated are the text settings that take one of a few words: a junk
// value is refused.
var enumerated = []string{"http.confirm", "http.method", "evm.tx_type", "cosmos.via", "taler.currency", "taler.coin_value", "taler.deposit",
	"taler.synchronous_commit", "taler.bank_gateway", "taler.debit_payto", "taler.database_url", "ledger.isolation", "ledger.partition", "ledger.synchronous_commit"}

// Every field of every kind's section, given zero, a negative, a word
// and a huge value (issue 52, case 1: taler.coins=0 panicked), is refused
// in one line naming it, or accepted where that value means something:
// never a panic, never an error about something else.
func TestEveryKindSettingChecked(t *testing.T) {
	reg := Registry()
	seen := map[string]bool{}
	for _, k := range reg.All() {
		c, ok := k.(kinds.Configured)
		if !ok {
			continue
		}
		section, defaults := c.Settings()
		for field, kind := range settingFields(defaults) {
			path := section + "." + field
			seen[path] = true
			for _, v := range hostile {
				err := tryValue(reg, k.Info().Name, path, v)
				numeric := kind >= reflect.Int && kind <= reflect.Float64
				if err == nil {
					if numeric && (v != "0" || !zeroMeansDefault[path]) || slices.Contains(enumerated, path) {
						t.Errorf("%s %s=%s: accepted", k.Info().Name, path, v)
					}
					continue
				}
				msg := err.Error()
				if strings.HasPrefix(msg, "PANIC") || strings.Contains(msg, "\n") || !strings.Contains(msg, path) {
					t.Errorf("%s %s=%s: %q, expected one line naming %s", k.Info().Name, path, v, msg, path)
				}
			}
		}
	}
	for _, p := range append(slices.Collect(maps.Keys(zeroMeansDefault)), enumerated...) {
		if !seen[p] {
			t.Errorf("%s is named here but is no kind's setting", p)
		}
	}
}

// The same values through `tpslab run` itself (issue 64, case 9: the
// panics came after Validate, in presigning and withdrawing): every value
// Validate accepts, and one it refuses per section, against an endpoint
// that answers nothing. Each ends in one line and exit 2 (bad input,
// before any work) or 3 (the target did not answer), never a Go panic.
func TestEveryKindSettingThroughRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tpslab")
	}
	bin := testbin.Path(t)
	reg := Registry()
	type try struct{ kind, path, v string }
	var tries []try
	for _, k := range reg.All() {
		c, ok := k.(kinds.Configured)
		if !ok {
			continue
		}
		section, defaults := c.Settings()
		refused := false // one refusal per section shows run checks first
		for field := range settingFields(defaults) {
			path := section + "." + field
			for _, v := range hostile {
				if err := tryValue(reg, k.Info().Name, path, v); err == nil || !refused {
					refused = refused || err != nil
					tries = append(tries, try{k.Info().Name, path, v})
				}
			}
		}
	}
	dir := t.TempDir()
	for i, c := range tries {
		t.Run(fmt.Sprintf("%s=%s", c.path, c.v), func(t *testing.T) {
			t.Parallel()
			args := []string{"run", "--target", c.kind, "--endpoint", "http://127.0.0.1:9", "--rate", "10", "--duration", "3s", "--warmup", "1s",
				"--out", filepath.Join(dir, strconv.Itoa(i)), "--set", c.path + "=" + c.v}
			if c.kind == "http" && c.path != "http.path" {
				args = append(args, "--set", "http.path=/payments")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			last := strings.TrimSpace(string(out))
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:]
			}
			if strings.Contains(string(out), "goroutine ") || strings.Contains(string(out), "panic:") || (code != 2 && code != 3) || !strings.HasPrefix(last, "tpslab: ") {
				t.Errorf("%s %s=%s: exit %d, last line %q\n%s", c.kind, c.path, c.v, code, last, out)
			}
		})
	}
}
