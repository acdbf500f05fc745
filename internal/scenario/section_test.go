package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

type testSection struct {
	Depth int      `yaml:"depth" json:"depth"`
	Mode  string   `yaml:"mode" json:"mode"`
	Wait  Duration `yaml:"wait" json:"wait"`
}

// A registered section decodes from the file, takes --set, reads back with
// Get, is refused field by field when misspelt, is written at the top level
// of the JSON, and is a copy's own after Clone.
func TestKindSection(t *testing.T) {
	RegisterSection("zed", func() any { return &testSection{Depth: 2, Mode: "a"} })
	s := Default()
	if err := Apply(&s, []byte("version: 1\nzed:\n  depth: 5\n  wait: 2s\n")); err != nil {
		t.Fatal(err)
	}
	z := s.Section("zed").(*testSection)
	if z.Depth != 5 || z.Mode != "a" || z.Wait.D().Seconds() != 2 {
		t.Errorf("decoded %+v, want depth 5 over the defaults", z)
	}
	if err := Set(&s, "zed.mode", "b"); err != nil || z.Mode != "b" {
		t.Errorf("set zed.mode: %v, %+v", err, z)
	}
	if v, typ, err := Get(&s, "zed.depth"); v != "5" || typ != "int" || err != nil {
		t.Errorf("get zed.depth: %q %q %v", v, typ, err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"zed:\n  deph: 1\n", "zed.deph: unknown field, expected one of depth, mode, wait"},
		{"zed:\n  depth: x\n", `zed.depth: "x", expected an integer`},
		{"zee: {}\n", "zee: unknown field, expected one of"},
	} {
		err := Apply(&s, []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
	if err := Apply(&s, []byte("zee: {}\n")); !strings.Contains(err.Error(), "zed") {
		t.Errorf("the unknown-field error does not list the sections: %v", err)
	}
	if err := Set(&s, "zed.nope", "1"); err == nil || !strings.Contains(err.Error(), `unknown field "nope", expected one of depth, mode, wait`) {
		t.Errorf("set zed.nope: %v", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || string(m["zed"]) != `{"depth":5,"mode":"b","wait":"2s"}` || m["load"] == nil {
		t.Errorf("JSON: %s (%v), want zed at the top level beside load", b, err)
	}
	c := s.Clone()
	if err := Set(&c, "zed.depth", "9"); err != nil {
		t.Fatal(err)
	}
	if z.Depth != 5 {
		t.Errorf("setting a clone's section changed the original's: %d", z.Depth)
	}
}
