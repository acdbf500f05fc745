package measure

// Counter is one counter of docs/metrics.md, defined once: its name in
// result.json and series.jsonl, its Prometheus counter, its row in the
// summary table, and where Counts keeps it. Everything that lists counters
// (merging intervals, the per-second record, the exporter, the table, the
// merged chart points) walks Counters, so a new counter is one entry here
// and one field in Counts.
type Counter struct {
	Name  string // as in result.json and series.jsonl
	Prom  string // the Prometheus counter, under the tpslab_ namespace
	Title string // the summary table's row
	Help  string
	// Always: the table shows it when it is zero too.
	Always bool
	// Scalar or Reasons says where Counts keeps it: one number, or one per
	// reason.
	Scalar  func(*Counts) *int64
	Reasons func(*Counts) *map[string]int64
	// Known are reasons common to every kind, which the live exporter
	// starts at 0 (others appear when they first happen).
	Known []string
}

// Value is the counter's total.
func (d Counter) Value(c *Counts) int64 {
	if d.Reasons != nil {
		return Sum(*d.Reasons(c))
	}
	return *d.Scalar(c)
}

func scalar(f func(*Counts) *int64) func(*Counts) *int64                        { return f }
func reasons(f func(*Counts) *map[string]int64) func(*Counts) *map[string]int64 { return f }

// Counters are every counter, in the summary table's order.
var Counters = []Counter{
	{Name: "offered", Prom: "payments_offered_total", Title: "offered", Always: true, Help: "payments due by the schedule",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Offered })},
	{Name: "sent", Prom: "payments_sent_total", Title: "sent", Always: true, Help: "payments handed to the target",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Sent })},
	{Name: "unsent", Prom: "payments_unsent_total", Title: "unsent (load ended first)", Help: "payments offered but never sent",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Unsent })},
	{Name: "accepted", Prom: "payments_accepted_total", Title: "accepted", Always: true, Help: "payments the target accepted",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Accepted })},
	{Name: "rejected", Prom: "payments_rejected_total", Title: "rejected", Always: true, Help: "payments the target refused, by reason",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.Rejected }),
		Known:   []string{"mempool_full", "duplicate", "tx_too_large", "rpc_error", "transport_error", "insufficient_funds", "sequence_mismatch"}},
	{Name: "unacked", Prom: "payments_unacked_total", Title: "unacked (answer lost, still tracked)", Help: "submissions with no answer tpslab could read, by reason",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.Unacked }),
		Known:   []string{"transport_error", "timeout", "http_502", "http_504", "unreadable_answer"}},
	{Name: "committed", Prom: "payments_committed_total", Title: "committed ok", Always: true, Help: "payments committed (final), as read from the blocks or the ledger's answers",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Committed })},
	{Name: "committed_failed", Prom: "payments_failed_total", Title: "committed with failure", Always: true, Help: "payments included but failed in the block, by reason",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.Failed })},
	{Name: "expired", Prom: "payments_expired_total", Title: "expired", Always: true, Help: "accepted payments not committed within commit_timeout",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Expired })},
	{Name: "in_flight_end", Prom: "payments_in_flight_end_total", Title: "in flight at the end", Help: "accepted payments unresolved when the run ended, their commit_timeout not yet passed",
		Scalar: scalar(func(c *Counts) *int64 { return &c.InFlightEnd })},
	{Name: "late_commits", Prom: "late_commits_total", Title: "late commits", Help: "expired payments later seen committed",
		Scalar: scalar(func(c *Counts) *int64 { return &c.LateCommits })},
	{Name: "late_refusals", Prom: "late_refusals_total", Title: "late refusals", Help: "expired payments whose refusal came after their commit timeout",
		Scalar: scalar(func(c *Counts) *int64 { return &c.LateRefusals })},
	{Name: "throttled", Prom: "throttled_total", Title: "throttled (429, waited and retried)", Help: "answers that asked tpslab to slow down (HTTP 429), waited out",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Throttled })},
	{Name: "resyncs", Prom: "resyncs_total", Title: "sequence resyncs", Help: "sender sequence resynchronisations",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Resyncs })},
	{Name: "sequence_mismatches", Prom: "sequence_mismatches_total", Title: "sequence mismatches recovered", Help: "submissions refused for another sequence and recovered, by class",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.Mismatches })},
	{Name: "resubmitted", Prom: "resubmitted_total", Title: "  resubmitted", Help: "submissions of original bytes made by those recoveries",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Resubmitted })},
	{Name: "resigned", Prom: "resigned_total", Title: "  re-signed", Help: "payments re-signed with the chain's expected sequence",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Resigned })},
	{Name: "repriced", Prom: "repriced_total", Title: "re-priced (refused for the fee, re-signed)", Help: "payments refused for an insufficient fee and signed again at the chain's current gas price (once each)",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Repriced })},
	{Name: "sent_by_kind", Prom: "sent_by_kind_total", Title: "sent, by kind (workload.mix)", Help: "payments sent, by their kind in the mix",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.SentByKind })},
	{Name: "committed_by_kind", Prom: "committed_by_kind_total", Title: "committed ok, by kind", Help: "payments committed, by their kind in the mix",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.CommittedByKind })},
	{Name: "committed_failed_by_kind", Prom: "failed_by_kind_total", Title: "committed with failure, by kind", Help: "payments included but failed, by their kind in the mix",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.FailedByKind })},
	{Name: "invalid_sent", Prom: "invalid_sent_total", Title: "invalid sent (workload.invalid)", Help: "deliberately invalid payments sent, by sort; counted apart from every figure above",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.InvalidSent })},
	{Name: "invalid_refused", Prom: "invalid_refused_total", Title: "  refused as they should be", Help: "invalid payments refused, by sort and reason (at the door, in a block, or expired)",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.InvalidRefused })},
	{Name: "invalid_accepted", Prom: "invalid_accepted_total", Title: "  accepted at the door", Help: "invalid payments the target accepted for inclusion, by sort (not yet a finding: a block may refuse them)",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.InvalidAccepted })},
	{Name: "invalid_unanswered", Prom: "invalid_unanswered_total", Title: "  answer lost at the door", Help: "invalid payments whose answer was lost (a timeout, a gateway's 5xx), by sort: tracked until a block shows what became of them",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.InvalidUnanswered })},
	{Name: "invalid_unknown", Prom: "invalid_unknown_total", Title: "  unknown (answer lost, in no block)", Help: "invalid payments whose answer was lost and that no block held by the end of the run, by sort: neither refused nor taken",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.InvalidUnknown })},
	{Name: "invalid_committed", Prom: "invalid_committed_total", Title: "  COMMITTED (a finding)", Help: "invalid payments committed with success, by sort: the system took what it must refuse",
		Reasons: reasons(func(c *Counts) *map[string]int64 { return &c.InvalidCommitted })},
	{Name: "reorged", Prom: "reorged_total", Title: "back to pending by a reorg", Help: "payments put back to pending by a reorg",
		Scalar: scalar(func(c *Counts) *int64 { return &c.Reorgs })},
	{Name: "conn_waits", Prom: "conn_waits_total", Title: "connection waits", Help: "due payments that waited for a busy connection or their lane's batch in flight",
		Scalar: scalar(func(c *Counts) *int64 { return &c.ConnWaits })},
	{Name: "window_waits", Prom: "window_waits_total", Title: "window waits", Help: "due payments that waited for a sender's in-flight window",
		Scalar: scalar(func(c *Counts) *int64 { return &c.WindowWaits })},
}
