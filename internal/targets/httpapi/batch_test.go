package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tpslab/tpslab/internal/sut"
)

// A service that limits requests answers a whole array 429: the array is
// waited out and posted again, and each 429 is counted once (Throttled
// counts answers), not once per payment in the array.
func TestArrayThrottlingIsCountedOncePerAnswer(t *testing.T) {
	for _, c := range []struct {
		name   string
		refuse int64 // 429s before the array is taken
		status sut.Status
		want   int // Throttled summed over the array's receipts
	}{
		{"taken after two 429s", 2, sut.Committed, 2},
		{"refused until the retries run out", 1 << 30, sut.Rejected, 4},
	} {
		var posts atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if posts.Add(1) <= c.refuse {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, `[{"code":200},{"code":200},{"code":200}]`)
		}))
		tgt, err := New(Options{Endpoints: []string{srv.URL}, Path: "/p", Body: `{"tx":"{{tx}}"}`, Confirm: "sync", BatchSize: 3, ThrottleRetries: 3,
			Decode: func([]byte, *Fields) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		txs := make([]sut.Tx, 3)
		for k := range txs {
			txs[k] = sut.Tx{Bytes: []byte{byte(k)}, ID: sut.TxID{byte(k + 1)}}
		}
		out := make([]sut.Receipt, 3)
		tgt.Submitter(0).(sut.BatchSubmitter).SubmitBatch(context.Background(), txs, out)
		sum := 0
		for k, r := range out {
			sum += r.Throttled
			if r.Status != c.status {
				t.Errorf("%s: payment %d is %v (%s), want %v", c.name, k, r.Status, r.Reason, c.status)
			}
		}
		if sum != c.want {
			t.Errorf("%s: receipts count %d 429s, the service answered %d", c.name, sum, min(posts.Load(), c.refuse))
		}
		srv.Close()
	}
}
