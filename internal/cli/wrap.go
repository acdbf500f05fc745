package cli

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/mitchellh/go-wordwrap"
)

// termLines wraps each whole line written to a terminal at its width,
// continuation lines indented: a long line the terminal wraps itself
// leaves a ragged first screen. A line holding \r (rewritten in place)
// passes as it is.
type termLines struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	buf   []byte
}

func (t *termLines) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		line := string(t.buf[:i])
		t.buf = t.buf[i+1:]
		if _, err := io.WriteString(t.w, wrapLine(line, t.width)+"\n"); err != nil {
			return len(p), err
		}
	}
	if bytes.IndexByte(t.buf, '\r') >= 0 {
		_, err := t.w.Write(t.buf)
		t.buf = t.buf[:0]
		return len(p), err
	}
	return len(p), nil
}

// wrapLine wraps line at width (0: not at all), continuation lines
// indented by two spaces; a word longer than the width (a path) stays
// whole on its own line.
func wrapLine(line string, width int) string {
	if width <= 0 || len([]rune(line)) <= width || strings.ContainsRune(line, '\r') {
		return line
	}
	lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
	wrapped := wordwrap.WrapString(strings.TrimLeft(line, " "), uint(width-len(lead)-2))
	return lead + strings.ReplaceAll(wrapped, "\n", "\n"+lead+"  ")
}
