// Package suggest names the known word closest to a misspelt one (a flag,
// a scenario field), as "did you mean" lines do.
package suggest

import (
	"strings"

	"github.com/agnivade/levenshtein"
)

// Closest is the candidate nearest word: one it begins, or one at most a
// third of word's length away (at least one edit; two from four letters); "" when none is.
func Closest(word string, candidates []string) string {
	best, bestD := "", 0
	w := strings.ToLower(word)
	for _, c := range candidates {
		if c == "" || c == word {
			continue
		}
		d := levenshtein.ComputeDistance(w, strings.ToLower(c))
		if len(w) >= 3 && strings.HasPrefix(strings.ToLower(c), w) {
			d = min(d, 1)
		}
		if best == "" || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := max(1, len(w)/3)
	if len(w) >= 4 {
		limit = max(2, limit) // a swapped pair is two edits
	}
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// Phrase is "; did you mean X?" for the closest candidate, or "".
func Phrase(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return "; did you mean " + c + "?"
	}
	return ""
}
