package telemetry

// CometBFT maps a CometBFT node's Prometheus metrics (namespace cometbft,
// and the Go runtime's) to metrics named after the node. p2p bytes are
// message bytes handed to peers, before framing and encryption; channel
// 0x30 is the mempool's. A remote node's CPU and memory come from its Go
// process metrics (a local node's are read from /proc).
func CometBFT(node string, remote bool) []PromMetric {
	n := node + "."
	v := func(name, unit, help string, rate bool, better string) Metric {
		return Metric{Name: n + name, Unit: unit, Help: help, Rate: rate, Better: better, Role: "validator"}
	}
	ms := []PromMetric{
		{Family: "cometbft_mempool_size", Metric: v("mempool_txs", "1", "transactions in the mempool", false, "")},
		{Family: "cometbft_mempool_size_bytes", Metric: v("mempool_bytes", "bytes", "bytes of the mempool's transactions", false, "")},
		{Family: "cometbft_mempool_failed_txs", Metric: v("mempool_failed", "1/s", "transactions CheckTx refused", true, "lower")},
		{Family: "cometbft_mempool_recheck_times", Metric: v("mempool_rechecks", "1/s", "mempool rechecks after a block", true, "")},
		{Family: "cometbft_consensus_rounds", Metric: v("rounds", "1", "consensus rounds of the current height (0: decided in the first)", false, "lower")},
		{Family: "cometbft_consensus_block_size_bytes", Metric: v("block_bytes", "bytes", "size of the latest block", false, "")},
		{Family: "cometbft_p2p_peer_send_bytes_total", Metric: Metric{Name: n + "p2p_send_bytes", Unit: "bytes/s", Rate: true, PerPayment: true, Better: "lower", Role: "validator",
			Help: "bytes sent to peers, every channel"}},
		{Family: "cometbft_p2p_peer_receive_bytes_total", Metric: v("p2p_recv_bytes", "bytes/s", "bytes received from peers, every channel", true, "")},
		{Family: "cometbft_p2p_peer_send_bytes_total", Match: map[string]string{"chID": "0x30"}, Metric: v("p2p_mempool_send_bytes", "bytes/s", "bytes of transactions gossiped to peers (the mempool channel)", true, "lower")},
		{Family: "go_memstats_alloc_bytes_total", Metric: v("alloc_bytes", "bytes/s", "heap allocation rate (Go runtime)", true, "lower")},
		{Family: "go_memstats_heap_alloc_bytes", Metric: v("heap_bytes", "bytes", "live heap (Go runtime)", false, "")},
		{Family: "go_goroutines", Metric: v("goroutines", "1", "goroutines", false, "")},
	}
	if remote {
		ms = append(ms,
			PromMetric{Family: "process_cpu_seconds_total", Scale: 100, Metric: Metric{Name: n + "cpu_percent", Unit: "%", Rate: true, Better: "lower", Role: "validator",
				Help: "CPU time used, in percent of one core (the node's process_cpu_seconds_total)"}},
			PromMetric{Family: "process_resident_memory_bytes", Metric: v("rss_bytes", "bytes", "resident memory", false, "")})
	}
	return ms
}
