package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

// EvidenceFile is what a re-count needs (docs/results.md): one line per
// block that holds committed payments of ours, with their ids and a
// digest running over every line before it.
const EvidenceFile = "evidence.jsonl"

// EvidenceLine is one line of evidence.jsonl.
type EvidenceLine struct {
	Height int64     `json:"height"`
	Hash   string    `json:"hash,omitempty"` // the block's content hash as the chain names it
	Time   time.Time `json:"time"`
	OK     []string  `json:"ok"`     // our payments committed with result code 0, hex ids
	Digest string    `json:"digest"` // EvidenceDigest of the line before and this one
}

// EvidenceDigest is the running digest: SHA-256 of the previous line's
// digest (hex, "" for the first), the height in decimal, the hash, and
// each id in hex, each followed by a newline.
func EvidenceDigest(prev string, height int64, hash string, ids []string) string {
	h := sha256.New()
	for _, s := range append([]string{prev, strconv.FormatInt(height, 10), hash}, ids...) {
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// evidenceLines encodes blocks' evidence lines by hand (the ids are most
// of a run's bytes: 10,000 a second), advancing the running digest.
func evidenceLines(buf *bytes.Buffer, digest *string, blocks []measure.BlockStat) {
	ids := make([]string, 0, 64)
	for i := range blocks {
		b := &blocks[i]
		if len(b.OK) == 0 {
			continue
		}
		ids = ids[:0]
		for _, id := range b.OK {
			ids = append(ids, hex.EncodeToString(id[:]))
		}
		*digest = EvidenceDigest(*digest, b.Height, b.Hash, ids)
		buf.WriteString(`{"height":`)
		buf.WriteString(strconv.FormatInt(b.Height, 10))
		buf.WriteString(`,"hash":`)
		buf.WriteString(strconv.Quote(b.Hash))
		buf.WriteString(`,"time":"`)
		buf.WriteString(b.Time.UTC().Format(time.RFC3339Nano))
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
		buf.WriteString(*digest)
		buf.WriteString("\"}\n")
	}
}
