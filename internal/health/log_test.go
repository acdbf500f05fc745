package health

import (
	"os"
	"path/filepath"
	"testing"
)

// Only lines written after the start count; a line is counted once it
// ends; each kind of bad line is caught, and a healthy info line is not.
func TestLogTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "node.log")
	os.WriteFile(p, []byte("E[2026-11-28|07:00:00.000] before the run\n"), 0o644)
	lt := newLogTail(p)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	f.WriteString("I[2026-11-28|07:00:01.000] executed block height=5\n")
	f.WriteString("E[2026-11-28|07:00:02.000] failed to apply block\n")
	// The start-up line every fresh CometBFT network logs, and peer churn:
	// counted apart, never as errors.
	f.WriteString("E[2026-11-28|07:00:02.100] SendTimeout module=blocksync reason=\"peer did not send us anything\" peer=abc timeout=15s\n")
	f.WriteString("E[2026-11-28|07:00:02.200] Stopping peer for error module=p2p peer=abc err=EOF\n")
	f.WriteString("8:00AM ERR failed to commit\n")
	f.WriteString("panic: runtime error: index out of range [recovered]\n")
	f.WriteString("CONSENSUS FAILURE!!! err=boom")
	if n := lt.read(); n != 3 {
		t.Fatalf("%d bad lines, want 3 (the unended one waits)", n)
	}
	f.WriteString("\nI[2026-11-28|07:00:03.000] fine\n")
	if n := lt.read(); n != 4 || len(lt.quotes) != 3 || lt.quotes[0] != "E[2026-11-28|07:00:02.000] failed to apply block" || lt.benign != 2 {
		t.Fatalf("%d bad lines, quotes %q", n, lt.quotes)
	}
}
