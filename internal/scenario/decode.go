package scenario

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tpslab/tpslab/internal/suggest"
)

// yaml.v3's own decoder reports type errors by line without the field path
// or the expected kind; this walker decodes field by field so every error is
// one line naming the field, the value and what was expected.

// ReadFile reads a scenario file over the defaults. The file must be a
// mapping that states its format version.
func ReadFile(path string) (Scenario, error) {
	s := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return s, fmt.Errorf("%s: not valid YAML: %s", path, firstLine(err.Error()))
	}
	if len(doc.Content) == 0 {
		return s, fmt.Errorf("%s: the file is empty, expected a YAML mapping starting with `version: %d`", path, Version)
	}
	s.Version = 0
	if err := decode(&doc, reflect.ValueOf(&s).Elem(), ""); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.Version == 0 {
		return s, fmt.Errorf("%s: version: missing, expected `version: %d` (the scenario format version)", path, Version)
	}
	resolvePaths(&s, filepath.Dir(path))
	return s, nil
}

// Apply decodes YAML onto s; fields absent from the YAML keep their values.
func Apply(s *Scenario, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not valid YAML: %s", firstLine(err.Error()))
	}
	if doc.Kind == 0 { // empty file
		return nil
	}
	return decode(&doc, reflect.ValueOf(s).Elem(), "")
}

// Set overrides one field by its dotted path (e.g. "load.rate") with a value
// written in YAML ("2000", "30s", "[a, b]").
func Set(s *Scenario, path, value string) error {
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(value), &node); err != nil {
		return fmt.Errorf("%s: %q is not a valid value: %s", path, value, firstLine(err.Error()))
	}
	v, err := field(s, path)
	if err != nil {
		return err
	}
	if node.Kind == 0 {
		node = yaml.Node{Kind: yaml.ScalarNode, Value: ""}
	}
	return decode(&node, v, path)
}

// Get reads one field by its dotted path, written as Set takes it, and
// names its type as a flag's help shows it (int, float, duration, bool,
// string, list).
func Get(s *Scenario, path string) (value, typ string, err error) {
	v, err := field(s, path)
	if err != nil {
		return "", "", err
	}
	switch {
	case v.Type() == reflect.TypeOf(Duration(0)):
		return v.Interface().(Duration).D().String(), "duration", nil
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool()), "bool", nil
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10), "int", nil
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10), "int", nil
	case v.CanFloat():
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), "float", nil
	case v.Kind() == reflect.String:
		return v.String(), "string", nil
	case v.Kind() == reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ", ") + "]", "list", nil
	}
	return fmt.Sprint(v.Interface()), "value", nil
}

// field finds the field at a dotted path.
func field(s *Scenario, path string) (reflect.Value, error) {
	v := reflect.ValueOf(s).Elem()
	parts := strings.Split(path, ".")
	for pi, part := range parts {
		if v.Kind() == reflect.Ptr {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return v, fmt.Errorf("%s: no such field", path)
		}
		idx, names := fieldIndex(v.Type())
		i, ok := idx[part]
		if secs, _ := sectionsOf(v); !ok && secs[part] != nil {
			v = reflect.ValueOf(secs[part]).Elem()
			continue
		}
		if !ok {
			if err := movedError(strings.Join(parts[:pi+1], ".")); err != nil {
				return v, err
			}
			if secs, ok := sectionsOf(v); ok {
				names = append(append([]string{}, names...), secs.names()...)
				sort.Strings(names)
			}
			return v, fmt.Errorf("%s: unknown field %q, expected one of %s%s", path, part, strings.Join(names, ", "), suggest.Phrase(part, names))
		}
		v = v.Field(i)
	}
	return v, nil
}

func firstLine(s string) string {
	s = strings.TrimPrefix(s, "yaml: ")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func fieldIndex(t reflect.Type) (map[string]int, []string) {
	idx := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		idx[tag] = i
		names = append(names, tag)
	}
	sort.Strings(names)
	return idx, names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()

func decode(n *yaml.Node, v reflect.Value, path string) error {
	for n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		} else {
			n = n.Alias
		}
	}
	t := v.Type()
	if t.Kind() == reflect.Ptr {
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return decode(n, v.Elem(), path)
	}
	if t == reflect.TypeOf(JSON("")) {
		return decodeJSON(n, v, path)
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: expected a duration such as 30s or 500ms, got a %s", path, kindName(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return fmt.Errorf("%s: %q is not a duration, expected e.g. 30s or 500ms", path, n.Value)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: expected a mapping of fields, got a %s", rootName(path), kindName(n))
		}
		idx, names := fieldIndex(t)
		secs, hasSecs := sectionsOf(v)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if line, dup := seen[key]; dup {
				return fmt.Errorf("%s: given twice (lines %d and %d), expected each field once", join(path, key), line, n.Content[i].Line)
			}
			seen[key] = n.Content[i].Line
			fi, ok := idx[key]
			if sec, isSec := secs[key]; !ok && isSec {
				if err := decode(n.Content[i+1], reflect.ValueOf(sec).Elem(), key); err != nil {
					return err
				}
				continue
			}
			if !ok {
				if err := movedError(join(path, key)); err != nil {
					return err
				}
				if hasSecs {
					names = append(append([]string{}, names...), secs.names()...)
					sort.Strings(names)
					return fmt.Errorf("%s: unknown field, expected one of %s (a kind's own section is named by the kind)%s", join(path, key), strings.Join(names, ", "), suggest.Phrase(key, names))
				}
				return fmt.Errorf("%s: unknown field, expected one of %s%s", join(path, key), strings.Join(names, ", "), suggest.Phrase(key, names))
			}
			if val := n.Content[i+1]; val.Kind == yaml.ScalarNode && val.Value == "auto" && t.Field(fi).Tag.Get("auto") == "zero" {
				v.Field(fi).SetZero() // the field's 0 means auto (workload.gas)
				continue
			}
			if err := decode(n.Content[i+1], v.Field(fi), join(path, key)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: expected a list, got a %s", path, kindName(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s: expected a %s, got a %s", path, scalarName(t.Kind()), kindName(n))
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return fmt.Errorf("%s: %q, expected true or false", path, n.Value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q, expected an integer", path, n.Value)
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		i, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q, expected a non-negative integer", path, n.Value)
		}
		v.SetUint(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: %q, expected a finite number", path, n.Value)
		}
		v.SetFloat(f)
	default:
		return errors.New(path + ": unsupported field type " + t.String())
	}
	return nil
}

// JSON is a value written as YAML (a mapping, a list, a scalar) or as a
// string of JSON, kept as JSON text: a system's own message fields, which
// the scenario does not know.
type JSON string

func decodeJSON(n *yaml.Node, v reflect.Value, path string) error {
	var x any
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && json.Valid([]byte(n.Value)) && strings.ContainsAny(strings.TrimSpace(n.Value)[:1], "{[") {
		v.SetString(n.Value)
		return nil
	}
	if err := n.Decode(&x); err != nil {
		return fmt.Errorf("%s: %s", path, firstLine(err.Error()))
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("%s: %v, expected a value JSON can write (mappings with string keys)", path, err)
	}
	v.SetString(string(b))
	return nil
}

func rootName(path string) string {
	if path == "" {
		return "scenario"
	}
	return path
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	default:
		return fmt.Sprintf("value %q", n.Value)
	}
}

func scalarName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float64:
		return "number"
	default:
		return "integer"
	}
}

// resolvePaths makes each relative path a scenario's file gives (a string
// field tagged path:"file", in the scenario or a kind's section) relative
// to the file's directory, as k6 resolves a script's open().
func resolvePaths(s *Scenario, dir string) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Ptr, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < t.NumField(); i++ {
				f := v.Field(i)
				if !t.Field(i).IsExported() {
					continue
				}
				if t.Field(i).Tag.Get("path") == "file" && f.Kind() == reflect.String {
					if p := f.String(); p != "" && !filepath.IsAbs(p) {
						f.SetString(filepath.Join(dir, p))
					}
					continue
				}
				walk(f)
			}
		}
	}
	walk(reflect.ValueOf(s).Elem())
	for _, sec := range s.all() {
		walk(reflect.ValueOf(sec))
	}
}
