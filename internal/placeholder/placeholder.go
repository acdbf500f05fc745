// Package placeholder fills a scenario's templates of a system's own
// messages and calls: "{sender}", "{contract:pair}", "{choice:a|b}" in any
// text. text/template's {{.Sender}} would do the filling, but the
// scenario's form is the one the Cosmos and EVM load tools users know
// ({sender}), and a template here is split once into pieces, so a
// payment's filling is appends, not a template execution.
package placeholder

import (
	"regexp"
	"strings"
)

// pattern is a placeholder: a lower-case name, with an argument after a
// colon (choice:a|b, contract:pair); no quotes or braces inside.
var pattern = regexp.MustCompile(`\{([a-z_]+)(?::([^{}"]*))?\}`)

// Piece is literal text, or a placeholder when Name is set.
type Piece struct {
	Text, Name, Arg string
	Choices         []string // choice's list
}

// Template is text split into literal pieces and placeholders.
type Template []Piece

// Compile splits s.
func Compile(s string) Template {
	var t Template
	last := 0
	for _, loc := range pattern.FindAllStringSubmatchIndex(s, -1) {
		t = append(t, Piece{Text: s[last:loc[0]]})
		p := Piece{Name: s[loc[2]:loc[3]]}
		if loc[4] >= 0 {
			p.Arg = s[loc[4]:loc[5]]
		}
		if p.Name == "choice" {
			p.Choices = strings.Split(p.Arg, "|")
		}
		t = append(t, p)
		last = loc[1]
	}
	return append(t, Piece{Text: s[last:]})
}

// Unknown is the first placeholder in s whose name is not in names
// ("choice" always is), as written; "" when all are known.
func Unknown(s string, names []string) string {
	for _, m := range pattern.FindAllStringSubmatch(s, -1) {
		if m[1] != "choice" && !contains(names, m[1]) {
			return m[0]
		}
	}
	return ""
}

// Names lists the placeholders of t with their arguments (contract:pair).
func (t Template) Names() []Piece {
	var out []Piece
	for _, p := range t {
		if p.Name != "" {
			out = append(out, p)
		}
	}
	return out
}

// Choices is the longest choice list in t (1 when none): how many draws
// try every choice.
func (t Template) Choices() int {
	n := 1
	for _, p := range t {
		n = max(n, len(p.Choices))
	}
	return n
}

// Append appends t filled: value gives a placeholder's text (choices are
// drawn by pick); escape, when set, is applied to each value.
func (t Template) Append(b []byte, value func(p Piece) string, pick uint64, escape func([]byte, string) []byte) []byte {
	for _, p := range t {
		if p.Name == "" {
			b = append(b, p.Text...)
			continue
		}
		s := ""
		if p.Name == "choice" {
			s = p.Choices[pick%uint64(len(p.Choices))]
		} else {
			s = value(p)
		}
		if escape != nil {
			b = escape(b, s)
		} else {
			b = append(b, s...)
		}
	}
	return b
}

// String is t filled, unescaped.
func (t Template) String(value func(p Piece) string, pick uint64) string {
	return string(t.Append(nil, value, pick, nil))
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
