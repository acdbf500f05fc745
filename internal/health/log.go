package health

import (
	"bytes"
	"io"
	"os"
	"regexp"
)

// badLine is a log line that says something went wrong: CometBFT's error
// level (E[...]), the Cosmos SDK's (ERR), geth's (ERROR[...]), logfmt's
// level=error, and panic, fatal and CONSENSUS FAILURE anywhere.
var badLine = regexp.MustCompile(`^E\[|\bERR\b|^ERROR\[|level=error|(?i:\bpanic\b)|(?i:\bfatal\b)|CONSENSUS FAILURE`)

// benignLine is a bad line every healthy network logs: CometBFT's start-up
// (blocksync's "peer did not send us anything" as it hands over to
// consensus), peers connecting and leaving, and an RPC client (tpslab's
// own block subscription) closing its websocket. Read in the logs of fresh
// healthy networks of every kind; counted apart (log_benign), shown with
// --summary full, never against the default bound.
var benignLine = regexp.MustCompile(`SendTimeout.*module=blocksync|peer did not send us anything|` +
	`module=rpc-server protocol=websocket|Stopping peer for error|Connection failed @ (send|recv)Routine|` +
	`(?i:error (dialing|stopping) peer)|dialing failed`)

// maxQuotes are the first bad lines kept; maxRead bounds one second's read.
const (
	maxQuotes = 3
	maxRead   = 4 << 20
)

// logTail reads a log file's new lines each second and counts the bad ones.
type logTail struct {
	path   string
	off    int64
	count  int
	benign int // bad lines a healthy network writes too (benignLine)
	quotes []string
	rest   []byte // a line not yet ended
}

func newLogTail(path string) *logTail {
	t := &logTail{path: path}
	if st, err := os.Stat(path); err == nil {
		t.off = st.Size() // what came before the run is not its
	}
	return t
}

// read takes the lines written since the last read and returns the bad
// lines counted so far.
func (t *logTail) read() int {
	if t.path == "" {
		return t.count
	}
	f, err := os.Open(t.path)
	if err != nil {
		return t.count
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < t.off {
		t.off, t.rest = 0, nil // rotated or truncated: read it from the start
	}
	buf, err := io.ReadAll(io.NewSectionReader(f, t.off, maxRead))
	if err != nil && len(buf) == 0 {
		return t.count
	}
	t.off += int64(len(buf))
	buf = append(t.rest, buf...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		t.rest = buf
		return t.count
	}
	t.rest = append([]byte(nil), buf[end+1:]...)
	for _, l := range bytes.Split(buf[:end], []byte{'\n'}) {
		if badLine.Match(l) {
			if benignLine.Match(l) {
				t.benign++
				continue
			}
			t.count++
			if len(t.quotes) < maxQuotes {
				t.quotes = append(t.quotes, string(truncate(bytes.Join(bytes.Fields(l), []byte{' '}), 200)))
			}
		}
	}
	return t.count
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
