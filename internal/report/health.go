package report

import (
	"fmt"
	"strings"
)

// Health is every node's health through a run, and the worst of each
// figure over the nodes (docs/health.md).
type Health struct {
	Nodes []NodeHealth `json:"nodes"`
	// CaughtUpS is the seconds after the load until every node was within
	// a block of the highest; -1 when it did not happen in time.
	CaughtUpS float64 `json:"caught_up_s"`
	// Chain: the nodes are a chain's (heights, signatures, catch-up);
	// else processes only (a service and its database).
	Chain bool `json:"chain"`
	// Unsigned: the chain's blocks are not read for its nodes' signatures
	// (a chain other than CometBFT: factomd's): no missed signatures said.
	Unsigned    bool    `json:"unsigned,omitempty"`
	NoProgressS float64 `json:"no_progress_s"` // the longest stretch without a new block
	// BlockIntervalS is the run's mean block interval: a stretch without a
	// new block is said when it is twice that or more (5 s at least).
	BlockIntervalS float64 `json:"block_interval_s,omitempty"`
	// The worst node's figures.
	BehindMax        int64   `json:"behind_blocks_max"`
	MissedPercentMax float64 `json:"missed_signatures_percent_max"`
	Restarts         int     `json:"restarts"`
	Exits            int     `json:"exits"`
	LogErrors        int     `json:"log_errors"`
	// LogBenign are the bad lines every healthy network writes too (start-up,
	// peers leaving, a websocket client closing), counted apart.
	LogBenign int `json:"log_benign,omitempty"`
	// MissedInARowMax is the most blocks in a row a validator did not sign.
	MissedInARowMax int64 `json:"missed_signatures_in_a_row_max,omitempty"`
}

// NodeHealth is one node's.
type NodeHealth struct {
	Name        string   `json:"name"`
	BehindMax   int64    `json:"behind_blocks_max"`
	BehindMaxAt float64  `json:"behind_blocks_max_at_s"` // seconds into the run
	Missed      int64    `json:"missed_signatures"`      // committed blocks without its signature
	Signable    int64    `json:"signable_blocks"`        // committed blocks read while it was a validator
	Restarts    int      `json:"restarts"`
	Exits       int      `json:"exits"` // times its process was found gone
	LogErrors   int      `json:"log_errors"`
	LogBenign   int      `json:"log_benign,omitempty"`
	LogQuotes   []string `json:"log_quotes,omitempty"` // the first few
	// MissedInARow is the most committed blocks in a row without its
	// signature (one late vote is one).
	MissedInARow int64 `json:"missed_signatures_in_a_row,omitempty"`
	PeersMin     int   `json:"peers_min"` // -1: never answered
}

// MissedPercent is the share of the blocks read without its signature.
func (n NodeHealth) MissedPercent() float64 {
	if n.Signable == 0 {
		return 0
	}
	return 100 * float64(n.Missed) / float64(n.Signable)
}

// Summarize sets the worst figures from the nodes'.
func (h *Health) Summarize() {
	h.BehindMax, h.MissedPercentMax, h.Restarts, h.Exits, h.LogErrors = 0, 0, 0, 0, 0
	h.LogBenign, h.MissedInARowMax = 0, 0
	for _, n := range h.Nodes {
		h.LogBenign += n.LogBenign
		h.MissedInARowMax = max(h.MissedInARowMax, n.MissedInARow)
		h.BehindMax = max(h.BehindMax, n.BehindMax)
		h.MissedPercentMax = max(h.MissedPercentMax, n.MissedPercent())
		h.Restarts += n.Restarts
		h.Exits += n.Exits
		h.LogErrors += n.LogErrors
	}
}

// Worst names the node with the worst figure for a health metric, and
// its value, for a failed threshold's note.
func (h *Health) Worst(metric string) string {
	best, at := -1.0, ""
	for _, n := range h.Nodes {
		v := map[string]float64{"node_behind_blocks_max": float64(n.BehindMax), "missed_signatures_percent": n.MissedPercent(),
			"node_restarts": float64(n.Restarts), "node_exits": float64(n.Exits), "node_log_errors": float64(n.LogErrors),
			"missed_signatures_in_a_row_max": float64(n.MissedInARow)}[metric]
		if v > best && v > 0 {
			best, at = v, n.Name
			switch metric {
			case "node_behind_blocks_max":
				at += fmt.Sprintf(": %d %s behind at t=%.0f s", n.BehindMax, plural(n.BehindMax, "block"), n.BehindMaxAt)
			case "missed_signatures_percent":
				at += fmt.Sprintf(": %d of %d blocks without its signature", n.Missed, n.Signable)
			case "node_log_errors":
				if len(n.LogQuotes) > 0 {
					at += fmt.Sprintf(": %d %s, the first %q", n.LogErrors, plural(int64(n.LogErrors), "line"), n.LogQuotes[0])
				}
			}
		}
	}
	return at
}

// Line is the summary's health line: "health: 4 nodes in step, 0
// restarts, 0 missed signatures, caught up in 0.7 s" (in step: none more
// than a block behind), or what failed; for a service,
// its processes' restarts, exits and log errors.
func (h *Health) Line() string {
	var missed int64
	for _, n := range h.Nodes {
		missed += n.Missed
	}
	what := "nodes"
	if !h.Chain {
		what = "processes"
	}
	parts := []string{fmt.Sprintf("%d %s", len(h.Nodes), what), fmt.Sprintf("%d %s", h.Restarts, plural(int64(h.Restarts), "restart"))}
	if h.Exits > 0 {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", h.Exits, plural(int64(h.Exits), "exit"), h.Worst("node_exits")))
	}
	if h.Chain {
		// A block behind is gossip: the nodes are "in step" (the line of a
		// healthy run fits the first screen's 80 columns).
		if h.BehindMax > 1 {
			parts = append(parts, fmt.Sprintf("max %d blocks behind (%s)", h.BehindMax, h.Worst("node_behind_blocks_max")))
		} else {
			parts[0] += " in step"
		}
		if !h.Unsigned {
			sigs := fmt.Sprintf("%d missed %s", missed, plural(missed, "signature"))
			if missed > 0 {
				sigs += " (" + h.Worst("missed_signatures_percent") + ")"
			}
			parts = append(parts, sigs)
		}
	}
	if h.LogErrors > 0 {
		parts = append(parts, fmt.Sprintf("%d error lines in logs (%s)", h.LogErrors, h.Worst("node_log_errors")))
	}
	if h.Chain {
		if h.NoProgressS >= max(5, 2*h.BlockIntervalS) {
			parts = append(parts, fmt.Sprintf("no new block for %.1f s", h.NoProgressS))
		}
		if h.CaughtUpS >= 0 {
			parts = append(parts, fmt.Sprintf("caught up in %.1f s", h.CaughtUpS))
		} else {
			parts = append(parts, "not all caught up after the load")
		}
	}
	return "health: " + strings.Join(parts, ", ")
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// healthDefs are the health figures thresholds name (docs/health.md):
// each the worst node's.
func healthDefs() []Def {
	h := func(name, unit, help string, v func(h *Health) float64) Def {
		return Def{Name: name, Unit: unit, Better: "lower", Help: help, Run: func(s *Summary) (float64, bool) {
			if s.Health == nil {
				return 0, false
			}
			return v(s.Health), true
		}}
	}
	nodeMax := func(name, suffix, unit, help string, scale float64) Def {
		return Def{Name: name, Unit: unit, Better: "lower", Help: help, Run: func(s *Summary) (float64, bool) {
			best, ok := 0.0, false
			for k, st := range s.Telemetry {
				if !strings.HasPrefix(k, "links.") && strings.HasSuffix(k, suffix) && strings.Count(k, ".") == 1 {
					best, ok = max(best, st.Max*scale), true
				}
			}
			return best, ok
		}}
	}
	return []Def{
		h("node_behind_blocks_max", "blocks", "the most blocks any node was behind the highest", func(h *Health) float64 { return float64(h.BehindMax) }),
		h("missed_signatures_percent", "%", "the highest share of committed blocks a validator did not sign", func(h *Health) float64 { return h.MissedPercentMax }),
		h("missed_signatures_in_a_row_max", "blocks", "the most blocks in a row a validator did not sign (a single late vote is 1)", func(h *Health) float64 { return float64(h.MissedInARowMax) }),
		h("no_progress_intervals", "", "the longest stretch without a new block, in the run's block intervals", func(h *Health) float64 {
			return h.NoProgressS / max(h.BlockIntervalS, 1)
		}),
		h("node_restarts", "", "node restarts during the run (all nodes)", func(h *Health) float64 { return float64(h.Restarts) }),
		h("node_exits", "", "times a node's process was found gone during the run (all nodes)", func(h *Health) float64 { return float64(h.Exits) }),
		h("node_log_errors", "", "error, fatal, panic and CONSENSUS FAILURE lines in the nodes' logs during the run", func(h *Health) float64 { return float64(h.LogErrors) }),
		h("caught_up_s", "s", "seconds after the load until every node was within a block of the highest (a large number when it did not happen)", func(h *Health) float64 {
			if h.CaughtUpS < 0 {
				return 1e9
			}
			return h.CaughtUpS
		}),
		h("no_progress_s", "s", "the longest stretch without a new block", func(h *Health) float64 { return h.NoProgressS }),
		nodeMax("node_cpu_percent_max", ".cpu_percent", "%", "the busiest second of the busiest node's process, % of one core", 1),
		nodeMax("node_rss_mb_max", ".rss_bytes", "MiB", "the largest resident memory of any node's process", 1.0/(1<<20)),
	}
}

// HealthDefault is --health default: the criteria a healthy network meets
// under load, each with why (docs/health.md).
var HealthDefault = []string{
	"node_behind_blocks_max<=2", // a node a block behind is gossip; more is a node that stopped keeping up
	// A single late vote is no fault: T.MissedInARow blocks in a row
	// without a validator's signature, or over T.MissedShare of them, is
	// a validator not voting.
	fmt.Sprintf("missed_signatures_in_a_row_max<%d", T.MissedInARow),
	fmt.Sprintf("missed_signatures_percent<=%g", 100*T.MissedShare),
	"node_restarts==0",         // nothing restarts in a healthy run
	"node_log_errors==0",       // no error, fatal, panic or CONSENSUS FAILURE line beyond the start-up and peer churn every network logs
	"caught_up_s<=10",          // every node within a block 10 s after the load
	"no_progress_intervals<=5", // a block at least every 5 of the chain's own intervals (many timeout rounds)
	"node_rss_mb_max<=2048",    // a node's memory past 2 GiB is a leak at these sizes
}
