package telemetry

import (
	"bytes"
	"os"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// A real CometBFT node's page (the built-in network's node0, under load): the wanted
// families read from its kept lines are those read from the whole page.
func TestKeepFamilies(t *testing.T) {
	page, want := nodePage(t, true)
	parse := func(b []byte) map[string]*dto.MetricFamily {
		fams, err := parsePage(b)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*dto.MetricFamily{}
		for name, f := range fams {
			if want[name] {
				out[name] = f
			}
		}
		return out
	}
	whole := parse(page)
	kept := keepFamilies(nil, page, want)
	got := parse(kept)
	// (cometbft_mempool_failed_txs has no series before a refusal.)
	if len(whole) < len(want)-1 || len(got) != len(whole) {
		t.Fatalf("the page has %d of the %d families, its kept lines %d", len(whole), len(want), len(got))
	}
	for name, f := range whole {
		if !proto.Equal(f, got[name]) {
			t.Errorf("%s read from the kept lines as %v, from the whole page as %v", name, got[name], f)
		}
	}
	if len(kept)*5 > len(page) {
		t.Errorf("kept %d of %d bytes", len(kept), len(page))
	}
	// A page cut mid-line keeps what it has, ended by a newline.
	cut := page[:bytes.Index(page, []byte("go_goroutines 7"))+len("go_goroutines 7")]
	if k := keepFamilies(nil, cut, want); !bytes.HasSuffix(k, []byte("go_goroutines 7\n")) {
		t.Errorf("cut page kept %q at its end", k[max(0, len(k)-40):])
	}
}

// The page as the sampler reads it each second: whole, and only the kept
// lines.
func BenchmarkParseNodePage(b *testing.B) {
	page, want := nodePage(b, false)
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := parsePage(page); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		var kept []byte
		for i := 0; i < b.N; i++ {
			kept = keepFamilies(kept[:0], page, want)
			if _, err := parsePage(kept); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func parsePage(b []byte) (map[string]*dto.MetricFamily, error) {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	return tp.TextToMetricFamilies(bytes.NewReader(b))
}

// nodePage is the captured node page and the families a local (or remote)
// node's telemetry reads from it.
func nodePage(tb testing.TB, remote bool) (page []byte, want map[string]bool) {
	tb.Helper()
	page, err := os.ReadFile("testdata/cometbft-metrics.txt")
	if err != nil {
		tb.Fatal(err)
	}
	want = map[string]bool{}
	for _, m := range CometBFT("n", remote) {
		want[m.Family] = true
	}
	return page, want
}
