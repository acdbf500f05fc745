package all

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
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
