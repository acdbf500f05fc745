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

// Part is the kind's section name of n decoded as a *T, kept on n (changes
// to it are saved with n, as a field of Net would be); nil when n has none
// or it does not decode (Section says why).
func Part[T any](n *Net, name string) *T {
	if v, ok := n.parts[name].(*T); ok {
		return v
	}
	v := new(T)
	if ok, err := n.Section(name, v); !ok || err != nil {
		return nil
	}
	if n.parts == nil {
		n.parts = map[string]any{}
	}
	n.parts[name] = v
	return v
}

// Section decodes the kind's section name of net.json into v; false when
// the network has none.
func (n *Net) Section(name string, v any) (bool, error) {
	if p, ok := n.parts[name]; ok {
		b, err := json.Marshal(p)
		if err != nil {
			return true, err
		}
		return true, json.Unmarshal(b, v)
	}
	raw, ok := n.sections[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%s: %s: %w", NetFile, name, err)
	}
	return true, nil
}

// SetSection sets the kind's section name to v (saved with the network;
// Part gives v back when it is a *T).
func (n *Net) SetSection(name string, v any) error {
	if _, core := coreKeys()[name]; core {
		return fmt.Errorf("%s: section %q would replace a field every network has", NetFile, name)
	}
	if n.parts == nil {
		n.parts = map[string]any{}
	}
	n.parts[name] = v
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
	if err != nil || len(n.sections)+len(n.parts) == 0 {
		return b, err
	}
	m := map[string]json.RawMessage{}
	for k, v := range n.sections {
		m[k] = v
	}
	for k, v := range n.parts {
		if m[k], err = json.Marshal(v); err != nil {
			return nil, err
		}
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
