package testnet

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// net.json holds a kind-neutral core (the fields of Net) and, at the top
// level beside it, each kind's own section, read and written by the kind
// alone (Section, SetSection): testnet does not know what is in it.

// Section decodes the kind's section name of net.json into v; false when
// the network has none.
func (n *Net) Section(name string, v any) (bool, error) {
	raw, ok := n.sections[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%s: %s: %w", NetFile, name, err)
	}
	return true, nil
}

// SetSection sets the kind's section name to v (saved with the network).
func (n *Net) SetSection(name string, v any) error {
	if _, core := coreKeys()[name]; core {
		return fmt.Errorf("%s: section %q would replace a field every network has", NetFile, name)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if n.sections == nil {
		n.sections = map[string]json.RawMessage{}
	}
	n.sections[name] = b
	return nil
}

// coreKeys are net.json's keys that Net's own fields hold.
func coreKeys() map[string]struct{} {
	t := reflect.TypeOf(Net{})
	out := map[string]struct{}{}
	for i := 0; i < t.NumField(); i++ {
		if name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]; name != "" && name != "-" {
			out[name] = struct{}{}
		}
	}
	return out
}

// MarshalJSON writes the sections after the core, sorted by name.
func (n Net) MarshalJSON() ([]byte, error) {
	type plain Net
	b, err := json.Marshal(plain(n))
	if err != nil || len(n.sections) == 0 {
		return b, err
	}
	m := map[string]json.RawMessage{}
	for k, v := range n.sections {
		m[k] = v
	}
	extra, err := json.Marshal(m) // sorted keys
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], ','), extra[1:]...), nil
}

// UnmarshalJSON keeps every key that is not the core's as a kind's section.
func (n *Net) UnmarshalJSON(b []byte) error {
	type plain Net
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	*n = Net(p)
	core := coreKeys()
	for k, v := range all {
		if _, ok := core[k]; !ok {
			if n.sections == nil {
				n.sections = map[string]json.RawMessage{}
			}
			n.sections[k] = v
		}
	}
	return nil
}
