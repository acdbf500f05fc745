package suggest

import "testing"

func TestClosest(t *testing.T) {
	flags := []string{"rate", "duration", "dashboard", "drain", "warmup", "senders", "segments"}
	for _, c := range []struct{ word, want string }{
		{"rat", "rate"}, {"rtae", "rate"}, {"duratoin", "duration"}, {"dash", "dashboard"},
		{"sender", "senders"}, {"zzz", ""}, {"x", ""}, {"wramup", "warmup"}, {"rate", ""},
	} {
		if got := Closest(c.word, flags); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if p := Phrase("rat", flags); p != "; did you mean rate?" {
		t.Errorf("Phrase: %q", p)
	}
}
