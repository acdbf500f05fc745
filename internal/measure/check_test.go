package measure

import (
	"reflect"
	"strings"
	"testing"
)

// Each identity of docs/metrics.md is checked, and a break names its figures.
func TestCheckNamesEachBrokenIdentity(t *testing.T) {
	ok := Counts{Offered: 10, Sent: 9, Unsent: 1, Accepted: 6, Rejected: map[string]int64{"x": 2}, Unacked: map[string]int64{"timeout": 1},
		Committed: 4, Failed: map[string]int64{"y": 1}, Expired: 2}
	if err := ok.Check(); err != nil {
		t.Fatalf("consistent counts: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Counts)
		want string
	}{
		{"unsent lost", func(c *Counts) { c.Unsent = 0 }, "offered 10 != sent 9 + unsent 0"},
		{"an answer lost", func(c *Counts) { c.Rejected = nil }, "sent 9 != accepted 6 + rejected 0 + unacked 1"},
		{"a commit lost", func(c *Counts) { c.Committed = 3 }, "accepted 6 + unacked 1 != committed 3 + committed_failed 1 + expired 2"},
	} {
		b := ok
		c.edit(&b)
		if err := b.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// Every field of Counts is in the registry, once: merging intervals walks
// the registry, so a field left out would be lost from every total.
func TestCountersCoverCounts(t *testing.T) {
	var c Counts
	seen := map[string]bool{}
	for _, d := range Counters {
		if seen[d.Name] {
			t.Errorf("%s twice", d.Name)
		}
		seen[d.Name] = true
		if d.Reasons != nil {
			*d.Reasons(&c) = map[string]int64{"x": 1}
		} else {
			*d.Scalar(&c)++
		}
	}
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.IsZero() {
			t.Errorf("Counts.%s is not in measure.Counters", v.Type().Field(i).Name)
		}
		tag := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
		if !seen[tag] {
			t.Errorf("Counts.%s (json %q) has no registry entry of that name", v.Type().Field(i).Name, tag)
		}
	}
	var sum Counts
	sum.add(&c)
	sum.add(&c)
	if sum.Offered != 2 || sum.Rejected["x"] != 2 {
		t.Errorf("add: %+v", sum)
	}
}
