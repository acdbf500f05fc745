// Package netem makes a local network look like a real one: every P2P
// connection between two nodes goes through a Toxiproxy proxy whose toxics
// add latency, jitter, a bandwidth cap and connection resets. The kernel's
// netem needs privileges these machines do not give; a user-space TCP proxy
// does not. Faults (partition, latency spike, bandwidth cut) change the
// same proxies at run time through Toxiproxy's HTTP API.
package netem

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Conditions are what one link adds to the traffic through it. RTT is a
// round trip: half of it is added in each direction.
type Conditions struct {
	RTT       time.Duration `json:"rtt"`
	Jitter    time.Duration `json:"jitter,omitempty"`     // +- on each direction's delay
	RateKbit  int64         `json:"rate_kbit,omitempty"`  // per direction; 0: no cap
	ResetProb float64       `json:"reset_prob,omitempty"` // share of connections reset by the peer
}

func (c Conditions) String() string {
	var parts []string
	if c.RTT > 0 {
		parts = append(parts, "rtt "+c.RTT.String())
	}
	if c.Jitter > 0 {
		parts = append(parts, "jitter "+c.Jitter.String())
	}
	if c.RateKbit > 0 {
		parts = append(parts, FormatRate(c.RateKbit))
	}
	if c.ResetProb > 0 {
		parts = append(parts, fmt.Sprintf("resets %.0f%%", c.ResetProb*100))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Link is one emulated connection: From dials To through the proxy at
// Listen, which forwards to To's P2P address (Upstream).
type Link struct {
	Name     string `json:"name"` // "node0-node1"; "client-node0" for the load generator's
	From     string `json:"from"` // Client for the load generator
	To       string `json:"to"`
	Listen   string `json:"listen"`   // host:port of the proxy
	Upstream string `json:"upstream"` // host:port of To's P2P listener
	// Protocol is what To speaks, for the round-trip probe: empty for
	// CometBFT's P2P, "postgres" for a database link, Opaque for one no
	// probe speaks (factomd's P2P: the dialer speaks first, with a signed
	// handshake).
	Protocol string `json:"protocol,omitempty"`
	Conditions
}

// Opaque is the protocol of a link whose round trip is not probed: the
// configured one is all a result says of it.
const Opaque = "opaque"

// Emulation is a network's emulated links, as net.json records them.
type Emulation struct {
	Topology string            `json:"topology"`
	API      string            `json:"api"`     // host:port of Toxiproxy's HTTP API
	Metrics  string            `json:"metrics"` // http://host:port/metrics: bytes per link and direction
	Regions  map[string]string `json:"regions,omitempty"`
	Links    []Link            `json:"links"`
}

// Client is the From of a link from the load generator to a node's RPC.
const Client = "client"

// IsClient says the link carries the load generator's requests, not P2P.
func (k Link) IsClient() bool { return k.From == Client }

// Touching lists the P2P links with node at either end (faults act on
// those; the generator's links are left alone), or, for a node that has
// no peers (geth's dev mode), the generator's link to it: its one link.
func (l *Emulation) Touching(node string) []Link {
	var out, client []Link
	for _, k := range l.Links {
		switch {
		case k.IsClient() && k.To == node:
			client = append(client, k)
		case !k.IsClient() && (k.From == node || k.To == node):
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return client
	}
	return out
}

// ClientConditions are the links from the load generator to each node: it
// sits in the first region of global, and one hop away elsewhere.
func ClientConditions(topology string, nodes []string, regions map[string]string) (map[string]Conditions, error) {
	out := make(map[string]Conditions, len(nodes))
	for _, n := range nodes {
		switch topology {
		case "loopback":
			out[n] = Conditions{}
		case "lan":
			out[n] = Conditions{RateKbit: 10_000_000}
		case "region":
			out[n] = Conditions{RTT: 5 * time.Millisecond, RateKbit: 1_000_000}
		case "continent":
			out[n] = Conditions{RTT: 30 * time.Millisecond, Jitter: 2 * time.Millisecond, RateKbit: 1_000_000}
		case "global":
			out[n] = wan(RegionRTT(Regions[0], regions[n]))
		default:
			return nil, fmt.Errorf("topology: %q, expected one of %s", topology, strings.Join(Topologies, ", "))
		}
	}
	return out, nil
}

// Topologies are the presets --topology accepts.
var Topologies = []string{"loopback", "lan", "region", "continent", "global"}

// Regions of the global preset, in the order validators are placed.
var Regions = []string{"us-east", "eu-central", "ap-northeast", "us-west", "sa-east"}

// globalRTT are average round trips between AWS regions N. Virginia,
// Frankfurt, Tokyo, Oregon and São Paulo, rounded to the millisecond, from
// the table "Latency Between AWS Global Regions" reproduced at
// https://acomputerscientistlearnsaws.blogspot.com/2017/04/aws-regions.html
// (docs/network.md).
var globalRTT = map[[2]string]int{
	{"us-east", "eu-central"}:      89,
	{"us-east", "ap-northeast"}:    145,
	{"us-east", "us-west"}:         88,
	{"us-east", "sa-east"}:         120,
	{"eu-central", "ap-northeast"}: 237,
	{"eu-central", "us-west"}:      160,
	{"eu-central", "sa-east"}:      195,
	{"ap-northeast", "us-west"}:    89,
	{"ap-northeast", "sa-east"}:    257,
	{"us-west", "sa-east"}:         183,
}

// RegionRTT is the round trip between two regions of the global preset
// (1 ms inside one region, between its availability zones).
func RegionRTT(a, b string) time.Duration {
	if a == b {
		return time.Millisecond
	}
	ms, ok := globalRTT[[2]string{a, b}]
	if !ok {
		ms = globalRTT[[2]string{b, a}]
	}
	return time.Duration(ms) * time.Millisecond
}

// Pair is two nodes to link; From dials To.
type Pair struct{ From, To string }

// Plan gives each pair the conditions of a topology. Validators come first
// in nodes; regions (global) are assigned round-robin in that order.
func Plan(topology string, nodes []string, pairs []Pair) (map[Pair]Conditions, map[string]string, error) {
	out := make(map[Pair]Conditions, len(pairs))
	var regions map[string]string
	switch topology {
	case "loopback":
		for _, p := range pairs {
			out[p] = Conditions{}
		}
	case "lan":
		// 0.2 ms: Toxiproxy delays in whole milliseconds, so no latency
		// toxic; the proxy hop itself adds about that on loopback (measured
		// per link in the report).
		for _, p := range pairs {
			out[p] = Conditions{RateKbit: 10_000_000}
		}
	case "region":
		for _, p := range pairs {
			out[p] = Conditions{RTT: 5 * time.Millisecond, RateKbit: 1_000_000}
		}
	case "continent":
		// 30 to 80 ms, spread evenly over the pairs in a fixed order.
		sorted := append([]Pair(nil), pairs...)
		sort.Slice(sorted, func(i, j int) bool {
			if sorted[i].From != sorted[j].From {
				return sorted[i].From < sorted[j].From
			}
			return sorted[i].To < sorted[j].To
		})
		for i, p := range sorted {
			ms := 30
			if len(sorted) > 1 {
				ms = 30 + 50*i/(len(sorted)-1)
			}
			rtt := time.Duration(ms) * time.Millisecond
			out[p] = Conditions{RTT: rtt, Jitter: (rtt / 20).Round(time.Millisecond), RateKbit: 1_000_000}
		}
	case "global":
		regions = make(map[string]string, len(nodes))
		for i, n := range nodes {
			regions[n] = Regions[i%len(Regions)]
		}
		for _, p := range pairs {
			out[p] = wan(RegionRTT(regions[p.From], regions[p.To]))
		}
	default:
		return nil, nil, fmt.Errorf("topology: %q, expected one of %s", topology, strings.Join(Topologies, ", "))
	}
	return out, regions, nil
}

// wan is a link between two regions of the global preset: the round trip,
// 5% jitter (to the millisecond Toxiproxy keeps), 1 Gbit/s.
func wan(rtt time.Duration) Conditions {
	return Conditions{RTT: rtt, Jitter: (rtt / 20).Round(time.Millisecond), RateKbit: 1_000_000}
}

// ParseRate reads a bandwidth such as 1mbit, 500kbit, 10gbit or 2mbps
// (bytes) into kbit/s.
func ParseRate(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		kbit   float64
	}{{"gbit", 1e6}, {"mbit", 1e3}, {"kbit", 1}, {"gbps", 8e6}, {"mbps", 8e3}, {"kbps", 8}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			var f float64
			if _, err := fmt.Sscanf(n, "%g", &f); err != nil || f <= 0 || f*u.kbit < 8 || f*u.kbit > 1e8 {
				break
			}
			return int64(f * u.kbit), nil
		}
	}
	return 0, fmt.Errorf("%q, expected a bandwidth from 8kbit to 100gbit such as 1mbit, 500kbit or 10gbit", s)
}

// FormatRate writes kbit/s the way ParseRate reads it.
func FormatRate(kbit int64) string {
	switch {
	case kbit >= 1e6 && kbit%1e6 == 0:
		return fmt.Sprintf("%dgbit", kbit/1e6)
	case kbit >= 1e3 && kbit%1e3 == 0:
		return fmt.Sprintf("%dmbit", kbit/1e3)
	}
	return fmt.Sprintf("%dkbit", kbit)
}
