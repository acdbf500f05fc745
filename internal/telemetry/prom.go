package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// PromMetric maps a Prometheus family (a counter or gauge, summed over its
// series and over every endpoint) to a metric.
type PromMetric struct {
	Family string
	Match  map[string]string // labels a series must have to count (none: every series)
	Scale  float64           // multiplies the value (0: 1)
	Metric
}

// Prometheus scrapes Prometheus text endpoints (a service's /metrics).
type Prometheus struct {
	URLs    []string
	Map     []PromMetric
	client  *http.Client
	metrics []Metric
	want    map[string]bool // families in Map
	body    []byte          // the last page read, reused
	kept    []byte          // its lines of wanted families, reused
}

// NewPrometheus scrapes urls for the families in m.
func NewPrometheus(urls []string, m []PromMetric) *Prometheus {
	p := &Prometheus{URLs: urls, Map: m, want: map[string]bool{},
		client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	for _, x := range m {
		p.metrics = append(p.metrics, x.Metric)
		p.want[x.Family] = true
	}
	return p
}

// Metrics are the mapped families'.
func (p *Prometheus) Metrics() []Metric { return p.metrics }

// Sample sums each family over every endpoint; a value is missing (NaN)
// unless every endpoint answered.
func (p *Prometheus) Sample(ctx context.Context, dst []float64) error {
	for i := range dst {
		dst[i] = 0
	}
	for _, u := range p.URLs {
		fams, err := p.scrape(ctx, u)
		if err != nil {
			for i := range dst {
				dst[i] = nan
			}
			return err
		}
		for i, m := range p.Map {
			f, ok := fams[m.Family]
			if !ok {
				continue
			}
			scale := m.Scale
			if scale == 0 {
				scale = 1
			}
			for _, s := range f.GetMetric() {
				if !matches(s, m.Match) {
					continue
				}
				switch {
				case s.Counter != nil:
					dst[i] += scale * s.Counter.GetValue()
				case s.Gauge != nil:
					dst[i] += scale * s.Gauge.GetValue()
				case s.Untyped != nil:
					dst[i] += scale * s.Untyped.GetValue()
				}
			}
		}
	}
	return nil
}

func (p *Prometheus) scrape(ctx context.Context, u string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	// Unzipping a page a second per node cost more CPU than its bytes cost
	// on the wire (tens of KB).
	req.Header.Set("Accept-Encoding", "identity")
	res, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", u, res.StatusCode)
	}
	buf := bytes.NewBuffer(p.body[:0])
	_, err = buf.ReadFrom(res.Body)
	p.body = buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	p.kept = keepFamilies(p.kept[:0], p.body, p.want)
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(p.kept))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return fams, nil
}

// keepFamilies appends to dst the lines of page (Prometheus text format)
// that belong to a wanted family: its HELP and TYPE comments and samples
// named exactly so. A CometBFT node's page is ~500 lines of which a dozen
// are read; parsing all of it each second, per node, was a fifth of
// tpslab's CPU on the built-in network.
func keepFamilies(dst, page []byte, want map[string]bool) []byte {
	for len(page) > 0 {
		line := page
		if i := bytes.IndexByte(page, '\n'); i >= 0 {
			line, page = page[:i+1], page[i+1:]
		} else {
			page = nil
		}
		if want[string(familyOf(line))] {
			dst = append(dst, line...)
		}
	}
	if n := len(dst); n > 0 && dst[n-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst
}

// familyOf is the metric name a text-format line is about: the third
// word of "# HELP name …" and "# TYPE name …", the name before the labels
// or value of a sample; nil for other comments and blank lines.
func familyOf(line []byte) []byte {
	if bytes.HasPrefix(line, []byte("# HELP ")) || bytes.HasPrefix(line, []byte("# TYPE ")) {
		line = line[len("# HELP "):]
	} else if len(line) == 0 || line[0] == '#' {
		return nil
	}
	if i := bytes.IndexAny(line, "{ \t\n"); i >= 0 {
		return line[:i]
	}
	return line
}

func matches(s *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range s.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// Close drops idle connections.
func (p *Prometheus) Close() { p.client.CloseIdleConnections() }
