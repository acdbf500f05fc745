package segment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Streaming: a segment that runs where the controller cannot read its disk
// (a pod) sends its run directory's files to the coordinator as they grow,
// every second and once more at the end, so a segment that dies leaves
// what it measured until then. Append-only files (the JSON-lines series,
// blocks, histograms, raw latencies) go as their new bytes; result.json,
// rewritten whole, goes whole when it changes.

// serveFile writes what a segment sends into its folder under Out.
func (c *Coordinator) serveFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	i, err := strconv.Atoi(q.Get("segment"))
	name := q.Get("name")
	off, err2 := strconv.ParseInt(q.Get("offset"), 10, 64)
	if err != nil || i < 0 || i >= c.n || err2 != nil || off < 0 || name == "" || name != filepath.Base(name) || name[0] == '.' {
		http.Error(w, "segment, name and offset: expected a segment index, a plain file name and a byte offset", http.StatusBadRequest)
		return
	}
	if c.Out == "" {
		http.Error(w, "this coordinator takes no files", http.StatusForbidden)
		return
	}
	dir := Dir(c.Out, i)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path := filepath.Join(dir, name)
	if q.Get("whole") == "1" {
		tmp := path + ".part"
		if err := os.WriteFile(tmp, body, 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	if _, err := f.WriteAt(body, off); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Mirror sends dir's files to the coordinator once a second until ctx
// ends; Flush sends what is left.
type Mirror struct {
	Client *Client
	Dir    string
	sent   map[string]int64     // append-only files: bytes sent
	whole  map[string]time.Time // rewritten files: mtime sent
}

// wholeFiles are rewritten, not appended to.
var wholeFiles = map[string]bool{"result.json": true}

// Run mirrors until ctx ends.
func (m *Mirror) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		m.pass(ctx)
	}
}

// Flush sends everything not yet sent.
func (m *Mirror) Flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return m.pass(ctx)
}

func (m *Mirror) pass(ctx context.Context) error {
	if m.sent == nil {
		m.sent, m.whole = map[string]int64{}, map[string]time.Time{}
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return err
	}
	var first error
	for _, e := range entries {
		st, err := e.Info()
		if err != nil || !st.Mode().IsRegular() || e.Name()[0] == '.' || filepath.Ext(e.Name()) == ".html" {
			continue
		}
		name := e.Name()
		if wholeFiles[name] {
			if st.ModTime().Equal(m.whole[name]) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(m.Dir, name))
			if err == nil {
				err = m.post(ctx, name, 0, true, b)
			}
			if err == nil {
				m.whole[name] = st.ModTime()
			} else if first == nil {
				first = err
			}
			continue
		}
		if st.Size() <= m.sent[name] {
			continue
		}
		f, err := os.Open(filepath.Join(m.Dir, name))
		if err != nil {
			continue
		}
		b := make([]byte, st.Size()-m.sent[name])
		n, _ := f.ReadAt(b, m.sent[name])
		f.Close()
		if err := m.post(ctx, name, m.sent[name], false, b[:n]); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		m.sent[name] += int64(n)
	}
	return first
}

func (m *Mirror) post(ctx context.Context, name string, off int64, whole bool, b []byte) error {
	q := url.Values{"segment": {strconv.Itoa(m.Client.Index)}, "name": {name}, "offset": {strconv.FormatInt(off, 10)}}
	if whole {
		q.Set("whole", "1")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.Client.URL+"/file?"+q.Encode(), bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp, err := m.Client.http.Do(req)
	if err != nil {
		return fmt.Errorf("sending %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("sending %s: %s: %s", name, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
