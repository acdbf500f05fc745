package netem

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/signal"
	"syscall"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	toxiclib "github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// toxic is one Toxiproxy toxic, as its API takes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// LinkBytesFamily counts the bytes delivered through each link, by link
// and direction (upstream: from the dialing node).
const LinkBytesFamily = "tpslab_link_bytes_total"

var linkBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: LinkBytesFamily,
	Help: "Bytes delivered through an emulated link."}, []string{"link", "direction"})

// counter is a toxic that passes data on unchanged and counts it.
// Toxiproxy's own byte counters move only when a connection closes, and a
// P2P connection lives as long as the network.
type counter struct {
	Link      string `json:"link"`
	Direction string `json:"direction"`
}

func (t *counter) Pipe(stub *toxiclib.ToxicStub) {
	c := linkBytes.WithLabelValues(t.Link, t.Direction)
	for {
		select {
		case <-stub.Interrupt:
			return
		case chunk := <-stub.Input:
			if chunk == nil {
				stub.Close()
				return
			}
			c.Add(float64(len(chunk.Data)))
			stub.Output <- chunk
		}
	}
}

func init() { toxiclib.Register("tpslab_counter", new(counter)) }

// toxics turns conditions into toxics: the round trip split over the two
// directions (Toxiproxy delays in whole milliseconds), the rate in KB/s on
// each direction, resets of a share of connections 10 s after they open (a
// TCP proxy cannot drop packets; a lossy path shows as resets), and last
// the byte counters.
func toxics(link string, c Conditions) []toxic {
	var out []toxic
	if ms := c.RTT.Milliseconds(); ms > 0 {
		jitter := c.Jitter.Milliseconds()
		out = append(out,
			toxic{"latency_up", "latency", "upstream", 1, map[string]any{"latency": (ms + 1) / 2, "jitter": jitter}},
			toxic{"latency_down", "latency", "downstream", 1, map[string]any{"latency": ms / 2, "jitter": jitter}})
	}
	if c.RateKbit > 0 {
		kb := max(1, c.RateKbit/8)
		out = append(out,
			toxic{"bandwidth_up", "bandwidth", "upstream", 1, map[string]any{"rate": kb}},
			toxic{"bandwidth_down", "bandwidth", "downstream", 1, map[string]any{"rate": kb}})
	}
	if c.ResetProb > 0 {
		out = append(out, toxic{"reset", "reset_peer", "downstream", float32(c.ResetProb), map[string]any{"timeout": 10000}})
	}
	return append(out,
		toxic{"count_up", "tpslab_counter", "upstream", 1, map[string]any{"link": link, "direction": "upstream"}},
		toxic{"count_down", "tpslab_counter", "downstream", 1, map[string]any{"link": link, "direction": "downstream"}})
}

// Serve runs the proxies of links and Toxiproxy's HTTP API (with /metrics)
// on links.API until ctx ends or SIGINT/SIGTERM arrives. It is the process
// `tpslab links` that `net up` starts beside the nodes.
func Serve(ctx context.Context, links *Emulation, log io.Writer) error {
	host, port, err := net.SplitHostPort(links.API)
	if err != nil {
		return fmt.Errorf("links api %q: %w", links.API, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(linkBytes)
	metrics := toxiproxy.NewMetricsContainer(reg)
	metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	server := toxiproxy.NewServer(metrics, zerolog.New(log).Level(zerolog.WarnLevel).With().Timestamp().Logger())
	for _, l := range links.Links {
		p := toxiproxy.NewProxy(server, l.Name, l.Listen, l.Upstream)
		if err := server.Collection.Add(p, true); err != nil {
			return fmt.Errorf("link %s on %s: %w", l.Name, l.Listen, err)
		}
		for _, t := range toxics(l.Name, l.Conditions) {
			b, _ := json.Marshal(t)
			if _, err := p.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
				return fmt.Errorf("link %s: toxic %s: %w", l.Name, t.Name, err)
			}
		}
	}
	fmt.Fprintf(log, "%d links (%s), api on %s\n", len(links.Links), links.Topology, links.API)
	go server.Listen(host, port) // exits the process if it cannot listen
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return server.Collection.Clear()
}
