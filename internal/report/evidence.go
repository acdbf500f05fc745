package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

// EvidenceFile is what a re-count needs (docs/results.md): one line per
// block that holds committed payments of ours (or, for payments a service
// settles by its answer, per second of the run), with their ids and a
// digest running over every line before it.
const EvidenceFile = "evidence.jsonl"

// EvidenceLine is one line of evidence.jsonl.
type EvidenceLine struct {
	Height int64 `json:"height,omitempty"`
	// Window is the place (1-based) in series.jsonl of the second whose
	// answers settled the ids, on a line of payments settled outside a
	// block (Height is 0): its phase says whether they count in the steady
	// window (a second collected late carries a later T than its place).
	Window int64     `json:"window,omitempty"`
	Hash   string    `json:"hash,omitempty"` // the block's content hash as the chain names it
	Time   time.Time `json:"time"`
	OK     []string  `json:"ok"`     // our payments committed with result code 0, hex ids
	Digest string    `json:"digest"` // EvidenceDigest of the line before and this one
}

// Where is the line's place in the digest: the height in decimal, or "w"
// and the window's number.
func (l EvidenceLine) Where() string {
	if l.Window > 0 {
		return "w" + strconv.FormatInt(l.Window, 10)
	}
	return strconv.FormatInt(l.Height, 10)
}

// EvidenceDigest is the running digest: SHA-256 of the previous line's
// digest (hex, "" for the first), where (EvidenceLine.Where), the hash, and
// each id in hex, each followed by a newline.
func EvidenceDigest(prev, where, hash string, ids []string) string {
	h := sha256.New()
	for _, s := range append([]string{prev, where, hash}, ids...) {
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// evidenceLines encodes blocks' evidence lines by hand (the ids are most
// of a run's bytes: 10,000 a second), advancing the running digest. Each
// id is put in hex once, into both the line and the digest, with no
// allocation per payment (EvidenceDigest is the same digest, for readers).
func evidenceLines(buf *bytes.Buffer, digest *string, blocks []measure.BlockStat) {
	h := sha256.New()
	var hx [64]byte
	var num [20]byte
	for i := range blocks {
		b := &blocks[i]
		if len(b.OK) == 0 {
			continue
		}
		where := strconv.AppendInt(num[:0], b.Height, 10)
		h.Reset()
		digestPart(h, []byte(*digest))
		digestPart(h, where)
		digestPart(h, []byte(b.Hash))
		buf.WriteString(`{"height":`)
		buf.Write(where)
		buf.WriteString(`,"hash":`)
		buf.WriteString(strconv.Quote(b.Hash))
		buf.WriteString(`,"time":"`)
		buf.WriteString(b.Time.UTC().Format(time.RFC3339Nano))
		buf.WriteString(`","ok":[`)
		for k := range b.OK {
			hex.Encode(hx[:], b.OK[k][:])
			digestPart(h, hx[:])
			if k > 0 {
				buf.WriteByte(',')
			}
			buf.WriteByte('"')
			buf.Write(hx[:])
			buf.WriteByte('"')
		}
		var sum [sha256.Size]byte
		*digest = hex.EncodeToString(h.Sum(sum[:0]))
		buf.WriteString(`],"digest":"`)
		buf.WriteString(*digest)
		buf.WriteString("\"}\n")
	}
}

var newline = []byte{'\n'}

// digestPart adds one part of a line to its digest: its bytes and a newline.
func digestPart(h hash.Hash, b []byte) {
	h.Write(b)
	h.Write(newline)
}

// settledLine encodes the line of the ids settled outside a block in the
// run's second window (1-based), ending at t.
func settledLine(buf *bytes.Buffer, digest *string, window int64, t time.Time, settled [][32]byte) {
	if len(settled) == 0 {
		return
	}
	ids := make([]string, len(settled))
	for i, id := range settled {
		ids[i] = hex.EncodeToString(id[:])
	}
	where := "w" + strconv.FormatInt(window, 10)
	*digest = EvidenceDigest(*digest, where, "", ids)
	buf.WriteString(`{"window":`)
	buf.WriteString(where[1:])
	evidenceTail(buf, t, ids, *digest)
}

func evidenceTail(buf *bytes.Buffer, t time.Time, ids []string, digest string) {
	buf.WriteString(`,"time":"`)
	buf.WriteString(t.UTC().Format(time.RFC3339Nano))
	buf.WriteString(`","ok":[`)
	for k, id := range ids {
		if k > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('"')
		buf.WriteString(id)
		buf.WriteByte('"')
	}
	buf.WriteString(`],"digest":"`)
	buf.WriteString(digest)
	buf.WriteString("\"}\n")
}
