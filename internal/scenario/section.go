package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// A kind's own settings are a section of the scenario named by the kind
// (`tally: {account: shop}` at the top level), declared by the kind and
// decoded, set by flags and read like the scenario's own fields. The
// scenario knows no kind: kinds register their sections when a registry
// takes them (kinds.Registry.Add), as k6's executors register their config
// types.

var sections = struct {
	sync.Mutex
	defaults map[string]func() any
}{defaults: map[string]func() any{}}

// RegisterSection declares the section name: defaults returns a fresh
// pointer to a struct holding the section's default settings. A second
// registration of the name replaces the first (registries are built more
// than once in one process, by tests).
func RegisterSection(name string, defaults func() any) {
	if v := reflect.ValueOf(defaults()); v.Kind() != reflect.Ptr || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("scenario: section %q: defaults must return a pointer to a struct, not %T", name, defaults()))
	}
	sections.Lock()
	defer sections.Unlock()
	sections.defaults[name] = defaults
}

// Sections are the kinds' sections of one scenario, by name: pointers to
// each registered section's struct, holding its defaults until the file or
// a flag sets them.
type Sections map[string]any

// names lists the sections, sorted.
func (s Sections) names() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Section is the kind's section of sc, as its registered defaults made it
// and the file and flags set it; nil when no kind registered the name.
// Kinds read theirs with kinds.SectionOf.
func (s *Scenario) Section(name string) any { return s.all()[name] }

// all is s's sections with every registered one present: a kind registered
// after s was made (a test's throw-away kind) gets its defaults now.
func (s *Scenario) all() Sections {
	sections.Lock()
	defer sections.Unlock()
	if s.Kinds == nil {
		s.Kinds = make(Sections, len(sections.defaults))
	}
	for name, f := range sections.defaults {
		if _, ok := s.Kinds[name]; !ok {
			s.Kinds[name] = f()
		}
	}
	return s.Kinds
}

// MarshalJSON writes the sections at the top level after the scenario's
// own fields, as a file gives them.
func (s Scenario) MarshalJSON() ([]byte, error) {
	type plain Scenario // without this method
	b, err := json.Marshal(plain(s))
	if err != nil || len(s.Kinds) == 0 {
		return b, err
	}
	b = b[:len(b)-1] // the closing brace
	for _, name := range s.Kinds.names() {
		v, err := json.Marshal(s.Kinds[name])
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(name)
		b = append(append(append(append(b, ','), k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// sectionsOf is the Sections field of a struct value, if it has one.
func sectionsOf(v reflect.Value) (Sections, bool) {
	if v.Type() != reflect.TypeOf(Scenario{}) {
		return nil, false
	}
	return v.Addr().Interface().(*Scenario).all(), true
}

// Clone is s with sections of its own (a plain copy shares them).
func (s Scenario) Clone() Scenario {
	if s.Kinds != nil {
		own := make(Sections, len(s.Kinds))
		for name, v := range s.Kinds {
			p := reflect.New(reflect.TypeOf(v).Elem())
			p.Elem().Set(reflect.ValueOf(v).Elem())
			own[name] = p.Interface()
		}
		s.Kinds = own
	}
	return s
}

// moved are settings that left the scenario's own fields for a kind's
// section: the old dotted path and where it went (a kind declares its own,
// kinds.Moved), so an old file or --set gets one line saying where.
var moved = struct {
	sync.Mutex
	to map[string]string
}{to: map[string]string{}}

// RegisterMoved says the field at the dotted path from is now at to.
func RegisterMoved(from, to string) {
	moved.Lock()
	defer moved.Unlock()
	moved.to[from] = to
}

// movedError is the migration message for a field no longer at path, or
// nil when nothing moved from there.
func movedError(path string) error {
	moved.Lock()
	to, ok := moved.to[path]
	moved.Unlock()
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: moved to %s (a kind's settings are its own section at the top level of the scenario: docs/scenario.md)", path, to)
}

// SectionNames lists the scenario's sections, sorted.
func (s *Scenario) SectionNames() []string { return s.all().names() }

// SectionChanged names the first field of section name (its yaml name, in
// the struct's order; nested structs by their dotted path) whose value is
// not the registered default, or "" when none is.
func (s *Scenario) SectionChanged(name string) string {
	sections.Lock()
	f, ok := sections.defaults[name]
	sections.Unlock()
	cur := s.Section(name)
	if !ok || cur == nil {
		return ""
	}
	return changedField(reflect.ValueOf(cur).Elem(), reflect.ValueOf(f()).Elem(), "")
}

func changedField(cur, def reflect.Value, prefix string) string {
	t := cur.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		a, b := cur.Field(i), def.Field(i)
		if a.Kind() == reflect.Struct && a.Type() != reflect.TypeOf(Duration(0)) {
			if f := changedField(a, b, prefix+tag+"."); f != "" {
				return f
			}
			continue
		}
		if a.Kind() == reflect.Slice && a.Len() == 0 && b.Len() == 0 {
			continue // [] as nil
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return prefix + tag
		}
	}
	return ""
}
