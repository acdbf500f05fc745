package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/tpslab/tpslab/internal/measure"
)

// Each line parses back, its digest follows from the one before, and a
// block without payments of ours writes nothing.
func TestEvidenceLines(t *testing.T) {
	blocks := []measure.BlockStat{{Height: 5, Hash: "AB", Time: time.Unix(1, 0), OK: [][32]byte{{1}, {2}}}, {Height: 6}, {Height: 7, Hash: "CD", OK: [][32]byte{{3}}}}
	var buf bytes.Buffer
	digest := ""
	evidenceLines(&buf, &digest, blocks)
	settledLine(&buf, &digest, 3, time.Unix(3, 0), nil) // nothing settled: no line
	settledLine(&buf, &digest, 4, time.Unix(4, 0), [][32]byte{{4}, {5}})
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 3 || !bytes.HasPrefix(lines[2], []byte(`{"window":4,"time":`)) {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	prev := ""
	for i, l := range lines {
		var e EvidenceLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if prev = EvidenceDigest(prev, e.Where(), e.Hash, e.OK); prev != e.Digest {
			t.Errorf("line %d: digest %s, want %s", i, e.Digest, prev)
		}
	}
	if prev != digest {
		t.Error("the writer's running digest is not the last line's")
	}
}

// The evidence's cost per committed payment: at 10,000 payments/s the
// generator spends this x 10,000 ns a second on it.
func BenchmarkEvidenceLines(b *testing.B) {
	blocks := make([]measure.BlockStat, 10)
	for i := range blocks {
		blocks[i] = measure.BlockStat{Height: int64(i), Hash: "D32E1DBC9043FAD46B64839E24C1BB97A18458E8417A03CBE0D9BE1445B41353", Time: time.Now()}
		for k := 0; k < 1000; k++ {
			blocks[i].OK = append(blocks[i].OK, [32]byte{byte(k), byte(k >> 8), byte(i)})
		}
	}
	var buf bytes.Buffer
	digest := ""
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Reset()
		evidenceLines(&buf, &digest, blocks)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10_000), "ns/payment")
}
