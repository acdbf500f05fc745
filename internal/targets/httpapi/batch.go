package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/buger/jsonparser"

	"github.com/tpslab/tpslab/internal/sut"
)

// batchable checks that a batch request can carry what the templates ask:
// headers and the batch path are the request's, one for many payments,
// so they may not name one payment's fields.
func (t *Target) batchable() (err error) {
	if t.o.BatchPath == "" {
		t.o.BatchPath = t.o.Path
	}
	if t.batchPath, err = ParseTemplate("http.batch_path", t.o.BatchPath, false); err != nil || t.o.BatchSize <= 1 {
		return err
	}
	perPayment := []placeholder{phSender, phSenderPub, phRecipient, phAmount, phSequence, phSignature, phIdempotencyKey, phTx, phTxHex}
	for _, ph := range perPayment {
		if t.batchPath.Uses(ph) {
			return fmt.Errorf("http.batch_path: %q names one payment's field, expected a path for a batch of payments (http.batch_size %d)", t.o.BatchPath, t.o.BatchSize)
		}
		for i, h := range t.headers {
			if h.value.Uses(ph) {
				return fmt.Errorf("http.headers[%d]: %q names one payment's field, expected a header for a batch of payments (http.batch_size %d; put it in the body)", i, t.o.Headers[i], t.o.BatchSize)
			}
		}
	}
	return nil
}

// BatchLanes is one in-order lane per endpoint when payments go in arrays
// (BatchSize > 1), else 0 (sut.Batcher).
func (t *Target) BatchLanes() int {
	if t.o.BatchSize > 1 {
		return len(t.o.Endpoints)
	}
	return 0
}

// SubmitBatch posts txs in order, BatchSize at a time, each array waited
// for before the next (a sender's sequences stay in order); a 429 is
// waited out and the array posted again, as Submit does for one payment.
func (s *submitter) SubmitBatch(ctx context.Context, txs []sut.Tx, out []sut.Receipt) {
	size := max(s.t.o.BatchSize, 1)
	for lo := 0; lo < len(txs); lo += size {
		hi := min(len(txs), lo+size)
		s.submitArray(ctx, txs[lo:hi], out[lo:hi])
	}
}

func (s *submitter) submitArray(ctx context.Context, txs []sut.Tx, out []sut.Receipt) {
	s.body = append(s.body[:0], '[')
	s.ids = s.ids[:0]
	s.at = s.at[:0]
	for k, tx := range txs {
		if err := s.t.o.Decode(tx.Bytes, &s.f); err != nil {
			out[k] = sut.Receipt{Status: sut.Rejected, Reason: "malformed", Detail: err.Error()}
			continue
		}
		s.v.tx, s.v.key = tx.Bytes, tx.ID[:]
		if len(s.ids) > 0 {
			s.body = append(s.body, ',')
		}
		s.body = s.t.body.Append(s.body, &s.v)
		s.ids = append(s.ids, tx.ID)
		s.at = append(s.at, k)
	}
	s.body = append(s.body, ']')
	if len(s.ids) == 0 {
		return
	}
	s.res = append(s.res[:0], make([]sut.Receipt, len(s.ids))...)
	throttled, why := s.waitOut(ctx, func() { s.t.pool.SendMany(ctx, s.pref, s.res, s.postArray) })
	if why != "" {
		for k := range s.res {
			s.res[k] = sut.Receipt{Status: sut.Rejected, Reason: "throttled", Endpoint: s.res[k].Endpoint, Detail: why}
		}
	}
	// Throttled counts 429 answers, and the array got each one once: its
	// first payment carries them, whatever the payments became.
	s.res[0].Throttled = throttled
	for j, k := range s.at {
		out[k] = s.res[j]
	}
}

// postArray posts the array in s.body to endpoint i and reads each
// element's answer; an answer that is not an array of as many elements
// leaves the payments past the last element read unacked (the system may
// hold them).
func (s *submitter) postArray(ctx context.Context, i int) (int, error) {
	t := s.t
	s.url = t.batchPath.Append(append(s.url[:0], t.o.Endpoints[i]...), &s.v)
	code, err := s.do(ctx)
	if err != nil {
		return 0, err
	}
	if code == http.StatusTooManyRequests {
		return len(s.res), nil
	}
	body := s.resp.Bytes()
	if code == badRequest {
		for k := range s.res {
			s.res[k] = sut.Receipt{Status: sut.Rejected, Reason: "bad_request", Detail: string(body)}
		}
		return len(s.res), nil
	}
	if code >= len(t.accept) || !t.accept[code] {
		// The array was refused whole: every payment with its answer.
		for k := range s.res {
			s.res[k] = t.classify(code, body)
		}
		return len(s.res), nil
	}
	n := 0
	_, _ = jsonparser.ArrayEach(body, func(e []byte, typ jsonparser.ValueType, _ int, _ error) {
		if n >= len(s.res) {
			return
		}
		c := code
		if v, err := jsonparser.GetInt(e, "code"); err == nil && v > 0 && v < int64(len(t.accept)) {
			c = int(v)
		}
		s.res[n] = s.read(c, e, s.ids[n], i)
		n++
	})
	for k := n; k < len(s.res); k++ {
		s.res[k] = sut.Unreadable(code, clip(body))
	}
	return len(s.res), nil
}
