// Package scenario defines the run description (YAML + flags), its defaults
// and its validation. See docs/scenario.md.
package scenario

import (
	"fmt"
	"strings"
	"time"
)

// Version is the scenario format version.
const Version = 1

// Duration is a time.Duration written as "30s", "500ms" in YAML and JSON.
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("not a duration")
	}
	*d = Duration(v)
	return nil
}

// Scenario is one run, fully resolved.
type Scenario struct {
	Version       int      `yaml:"version" json:"version"`
	Name          string   `yaml:"name" json:"name"`
	Target        Target   `yaml:"target" json:"target"`
	Network       Network  `yaml:"network" json:"network"`
	Load          Load     `yaml:"load" json:"load"`
	Workload      Workload `yaml:"workload" json:"workload"`
	CommitTimeout Duration `yaml:"commit_timeout" json:"commit_timeout"`
	Seed          int64    `yaml:"seed" json:"seed"` // random choices (senders, amounts, Poisson arrivals)
	Out           string   `yaml:"out" json:"out"`
	Thresholds    []string `yaml:"thresholds" json:"thresholds"`
	// AbortOnFail ends the load as soon as a threshold with a value each
	// second (p99_commit, committed_tps, …) has failed for longer than
	// AbortGrace after the warm-up, k6's abortOnFail (docs/reports.md).
	AbortOnFail bool     `yaml:"abort_on_fail" json:"abort_on_fail,omitempty"`
	AbortGrace  Duration `yaml:"abort_grace" json:"abort_grace"`
	// Health names a set of health thresholds added to Thresholds:
	// "default" (docs/health.md), or "" for none.
	Health string `yaml:"health" json:"health,omitempty"`
	// Faults are done to the network during the load (docs/faults.md).
	Faults []Fault `yaml:"faults" json:"faults,omitempty"`
	// Profile lists the Go profiles taken from the local nodes over the
	// steady window: cpu, allocs.
	Profile []string `yaml:"profile" json:"profile,omitempty"`
	// Kinds are the kinds' own sections (section.go), written at the top
	// level by name. A copy of a Scenario shares them: give a copy its
	// own with Clone before setting a section's field on it.
	Kinds Sections `yaml:"-" json:"-"`
}

// Target says what system is measured and how to reach it.
type Target struct {
	Kind      string   `yaml:"kind" json:"kind"`           // a registered kind (tpslab kinds); empty: the first registered, the built-in network
	Endpoints []string `yaml:"endpoints" json:"endpoints"` // RPC URLs; given, tpslab starts no network
	NetHome   string   `yaml:"net_home" json:"net_home"`   // a network started by `tpslab net up`
	Broadcast string   `yaml:"broadcast" json:"broadcast"` // sync | async
	Confirm   string   `yaml:"confirm" json:"confirm"`     // websocket | poll
	// MempoolWait is how long to wait before the load for the target's
	// mempool to empty (an earlier run's expired payments still in it
	// compete with this run's); 0: do not wait, only say so.
	MempoolWait Duration `yaml:"mempool_wait" json:"mempool_wait,omitempty"`
	// NodeMetrics are Prometheus endpoints of remote CometBFT nodes, read
	// once a second as remote0, remote1, ... (local nodes are read anyway).
	NodeMetrics []string `yaml:"node_metrics" json:"node_metrics,omitempty"`
}

// Network configures the built-in network tpslab starts itself.
type Network struct {
	Validators        int      `yaml:"validators" json:"validators"`
	Accounts          uint64   `yaml:"accounts" json:"accounts"`
	TimeoutCommit     Duration `yaml:"timeout_commit" json:"timeout_commit"`
	TimeoutPropose    Duration `yaml:"timeout_propose" json:"timeout_propose"`
	MempoolSize       int      `yaml:"mempool_size" json:"mempool_size"`
	MempoolMaxBytes   int64    `yaml:"mempool_max_bytes" json:"mempool_max_bytes"`
	MempoolCacheSize  int      `yaml:"mempool_cache_size" json:"mempool_cache_size"`
	MaxBlockBytes     int64    `yaml:"max_block_bytes" json:"max_block_bytes"`
	MaxBlockGas       int64    `yaml:"max_block_gas" json:"max_block_gas"`
	CreateEmptyBlocks bool     `yaml:"create_empty_blocks" json:"create_empty_blocks"`
	LogLevel          string   `yaml:"log_level" json:"log_level"`
	// GossipStage: a Cosmos SDK or Cosmos EVM network's nodes log their
	// mempool, and runs time the gossiped stage from it (docs/metrics.md:
	// it costs the nodes CPU).
	GossipStage bool `yaml:"gossip_stage" json:"gossip_stage,omitempty"`
	// What the network is created with (`net up`, or a run that starts
	// it); empty or 0: the kind's own.
	ChainID string `yaml:"chain_id" json:"chain_id,omitempty"`
	Seed    string `yaml:"seed" json:"-"` // derives the funded accounts' keys: never written out
	Balance uint64 `yaml:"balance" json:"balance,omitempty"`
	Bind    string `yaml:"bind" json:"bind"`               // every node listener's address
	Binary  string `yaml:"binary" json:"binary,omitempty"` // cosmos, evm: the daemon instead of the kind's own
	Keep    bool   `yaml:"keep" json:"keep"`               // leave it running after the run
	// Topology emulates the links between nodes: loopback (proxied, nothing
	// added), lan, region, continent, global (docs/network.md); empty:
	// direct loopback, or loopback when a fault needs the links.
	Topology string `yaml:"topology" json:"topology,omitempty"`
	// RPCNodes are full nodes that take the load and gossip it on.
	RPCNodes int `yaml:"rpc_nodes" json:"rpc_nodes,omitempty"`
	// ClientLinks puts the load generator behind emulated links as well.
	ClientLinks bool `yaml:"client_links" json:"client_links,omitempty"`
	// NodeCPU and NodeMemory are each node's resource envelope, as net
	// up's --node-cpu and --node-memory ("0.5", "node1=250m"): a cgroup of
	// its own on the network a run starts.
	NodeCPU    string `yaml:"node_cpu" json:"node_cpu,omitempty"`
	NodeMemory string `yaml:"node_memory" json:"node_memory,omitempty"`
	// State pre-loads this many accounts beyond the funded ones (net up
	// --state), which payments are drawn to as well: a chain with a real
	// chain's state behind it.
	State uint64 `yaml:"state" json:"state,omitempty"`
}

// Stage is one segment of an open-model load: the rate moves from the
// previous stage's target to Target over Duration, linearly or at once.
type Stage struct {
	Duration Duration `yaml:"duration" json:"duration"`
	Target   float64  `yaml:"target" json:"target"`
	Ramp     string   `yaml:"ramp" json:"ramp"` // linear | step
}

// Steps is a shorthand for stepped stages: From, From+By, ... up to To,
// each held for Every (Factom's 1 -> 7000 by 500 every 30 s).
type Steps struct {
	From  float64  `yaml:"from" json:"from"`
	To    float64  `yaml:"to" json:"to"`
	By    float64  `yaml:"by" json:"by"`
	Every Duration `yaml:"every" json:"every"`
}

// Model is how load is offered: open (arrivals on a schedule, whatever the
// system does) or closed (users that wait for their answers).
type Model string

const (
	Open   Model = "open"
	Closed Model = "closed"
)

// Mode is when payments are signed: presigned (all before the load) or
// live (as they are sent, nonces tracked).
type Mode string

const (
	Presigned Mode = "presigned"
	Live      Mode = "live"
)

// Load is the shape of the offered load.
type Load struct {
	Model       Model    `yaml:"model" json:"model"` // open | closed
	Rate        float64  `yaml:"rate" json:"rate"`   // open: constant arrivals per second
	Stages      []Stage  `yaml:"stages" json:"stages,omitempty"`
	Steps       *Steps   `yaml:"steps" json:"steps,omitempty"`
	Arrival     string   `yaml:"arrival" json:"arrival"` // uniform | poisson
	Duration    Duration `yaml:"duration" json:"duration"`
	Warmup      Duration `yaml:"warmup" json:"warmup"` // excluded from steady-state figures
	Drain       Duration `yaml:"drain" json:"drain"`   // longest wait for in-flight payments after the load
	Users       int      `yaml:"users" json:"users"`   // closed
	RampUp      Duration `yaml:"ramp_up" json:"ramp_up"`
	WaitFor     string   `yaml:"wait_for" json:"wait_for"` // closed: ack | commit
	Pacing      Duration `yaml:"pacing" json:"pacing"`     // closed: constant pacing between starts
	Think       Duration `yaml:"think" json:"think"`       // closed: pause after each result
	Connections int      `yaml:"connections" json:"connections"`
	// MaxConnections is how far connections may grow while
	// they are busy waiting for answers and payments wait for them (send
	// interval 0); 0: MostConnections' default.
	MaxConnections int `yaml:"max_connections" json:"max_connections,omitempty"`
	// SendInterval lets due payments gather and leave together (open
	// model): "auto", a duration, or 0 to send each at its own time.
	SendInterval string `yaml:"send_interval" json:"send_interval"`
	// Trace replays a recorded arrival schedule (open model; `tpslab
	// record` writes one): TraceSpeed times faster, and at TraceRate
	// arrivals per second on average when given (0: the trace's).
	Trace      string  `yaml:"trace" json:"trace,omitempty"`
	TraceSpeed float64 `yaml:"trace_speed" json:"trace_speed,omitempty"`
	TraceRate  float64 `yaml:"trace_rate" json:"trace_rate,omitempty"`
	// Segment is set in each generator of a load spread over several
	// (tpslab run --segments): the share this one sends.
	Segment *Segment `yaml:"-" json:"segment,omitempty"`
}

// Segment is generator Index of Count sharing one load.
type Segment struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Share is the part of the load's arrivals segment sg sends: arrivals k
// with k mod Count == Index.
func (sg *Segment) Share() float64 {
	if sg == nil || sg.Count <= 1 {
		return 1
	}
	return 1 / float64(sg.Count)
}

// ForSegment makes sc the part of its load that generator i of n sends:
// every n-th arrival (open model) or its share of the users (closed), from
// its own contiguous range of the senders, so no two segments send from the
// same account. Faults are done by the controller, and thresholds are
// checked on the merged result, not on a part.
func (sc *Scenario) ForSegment(i, n int) error {
	w := &sc.Workload
	if n < 1 || i < 0 || i >= n {
		return fmt.Errorf("segment: %d/%d, expected I/N with 0 <= I < N", i, n)
	}
	if w.Senders < n {
		return fmt.Errorf("workload.senders: %d, expected at least one per segment (%d)", w.Senders, n)
	}
	lo, hi := part(w.Senders, i, n)
	w.SendersOffset += lo
	w.Senders = hi - lo
	if sc.Load.Model == Closed {
		if sc.Load.Users < n {
			return fmt.Errorf("load.users: %d, expected at least one per segment (%d)", sc.Load.Users, n)
		}
		ulo, uhi := part(sc.Load.Users, i, n)
		sc.Load.Users = uhi - ulo
	}
	sc.Faults = nil // the controller does them, once, on the agreed clock
	sc.Thresholds, sc.AbortOnFail = nil, false
	sc.Load.Segment = &Segment{Index: i, Count: n}
	return nil
}

// part is the i-th of n contiguous parts of [0, total), as even as can be.
func part(total, i, n int) (lo, hi int) {
	return total * i / n, total * (i + 1) / n
}

// Gathering: "auto" lets about AutoBatch payments gather, for at most
// MaxGather (the latency it may add to any payment) and at least MinGather:
// below it, wake-ups and exchanges cost more than the payments (at 20k/s on
// one core against the sink, 1 ms gave 117-121k payments per CPU-second,
// 5 ms 159-194k, schedule lag p99 1.6 and 6 ms). Where even less than
// MinGather gathers FastBatch payments (above 40k/s), that is enough, down
// to FastGather: at 400k/s, 5 ms was 2000 payments a gathering, and each
// waited for the one before (schedule lag p99 12-21 ms a second).
const (
	AutoBatch  = 20
	MaxGather  = 20 * time.Millisecond
	MinGather  = 5 * time.Millisecond
	FastBatch  = 200
	FastGather = time.Millisecond
)

// connectionsGrowth is how many times load.connections may grow to by
// default: 32 become at most 256, enough for 2,500/s at 100 ms answers.
const connectionsGrowth = 8

// MostConnections is how many connections the load may open: its
// max_connections, or connectionsGrowth times its connections.
func (l Load) MostConnections() int {
	if l.MaxConnections > 0 {
		return l.MaxConnections
	}
	return min(MaxConnections, connectionsGrowth*l.Connections)
}

// SendEvery is how long payments due around load time t gather before they
// leave, at the rate rate; 0 sends each at its own time.
func (l Load) SendEvery(rate float64) time.Duration {
	if l.SendInterval != "auto" {
		d, _ := time.ParseDuration(l.SendInterval)
		return d
	}
	if !(rate > 0) {
		return MaxGather
	}
	per := func(n float64) time.Duration { return time.Duration(n / rate * float64(time.Second)) }
	floor := max(FastGather, min(MinGather, per(FastBatch)))
	return min(MaxGather, max(floor, per(AutoBatch)))
}

// Choice picks accounts: uniformly, by Zipf's law with exponent S, or from a
// hot set of Hot accounts that receives HotShare of the picks.
type Choice struct {
	Dist     string  `yaml:"dist" json:"dist"` // uniform | zipf | hot
	S        float64 `yaml:"s" json:"s,omitempty"`
	Hot      int     `yaml:"hot" json:"hot,omitempty"`
	HotShare float64 `yaml:"hot_share" json:"hot_share,omitempty"`
}

// Amount draws payment amounts uniformly from [Min, Max].
type Amount struct {
	Min uint64 `yaml:"min" json:"min"`
	Max uint64 `yaml:"max" json:"max"`
}

// Workload says what is sent.
type Workload struct {
	Kind            string `yaml:"kind" json:"kind"` // payment | raw | erc20
	Mode            Mode   `yaml:"mode" json:"mode"` // presigned | live
	Senders         int    `yaml:"senders" json:"senders"`
	SendersOffset   int    `yaml:"senders_offset" json:"senders_offset,omitempty"` // first sending account: runs with disjoint ranges can share a network
	Window          int    `yaml:"window" json:"window"`                           // payments in flight per sender
	SenderChoice    Choice `yaml:"sender_choice" json:"sender_choice"`
	RecipientChoice Choice `yaml:"recipient_choice" json:"recipient_choice"`
	Amount          Amount `yaml:"amount" json:"amount"`
	Padding         int    `yaml:"padding" json:"padding"` // bytes added to each transaction
	ChainID         string `yaml:"chain_id" json:"chain_id,omitempty"`
	GenesisSeed     string `yaml:"genesis_seed" json:"genesis_seed,omitempty"`
	Accounts        uint64 `yaml:"accounts" json:"accounts,omitempty"` // funded genesis accounts, or test wallets
	// Chains with fees and funded wallets (Cosmos SDK, EVM).
	Gas          uint64 `yaml:"gas" json:"gas,omitempty" auto:"zero"`         // gas limit per transfer; 0 or auto: the kind's (cosmos: a simulated send x1.3; evm native 21000, erc20 100000)
	WalletSeed   string `yaml:"wallet_seed" json:"wallet_seed,omitempty"`     // test wallets are derived from it (never written out); default: the network's, or "tpslab"
	FunderKey    string `yaml:"funder_key" json:"funder_key,omitempty"`       // a file with a funded key (hex or mnemonic); the key is never written out
	FundAmount   uint64 `yaml:"fund_amount" json:"fund_amount,omitempty"`     // given to each sender by the funder
	ReuseWallets bool   `yaml:"reuse_wallets" json:"reuse_wallets,omitempty"` // skip funding when the wallets hold funds
	// Invalid asks for a share of deliberately invalid payments, counted
	// apart (docs/metrics.md); the payments' figures exclude them.
	Invalid Invalid `yaml:"invalid" json:"invalid,omitempty"`
	// Mix draws each payment's kind by weight (empty: every payment the
	// kind's transfer); counts are kept per kind as well.
	Mix []MixEntry `yaml:"mix" json:"mix,omitempty"`
}

// MixEntry is one kind of payment in a mix: send (the kind's transfer) or
// multi_send (Cosmos SDK: one sender, Outputs recipients).
type MixEntry struct {
	Kind    string  `yaml:"kind" json:"kind"`
	Weight  float64 `yaml:"weight" json:"weight"`
	Outputs int     `yaml:"outputs" json:"outputs,omitempty"` // multi_send: recipients (default 5)
}

// Invalid is a share of deliberately invalid payments of the sorts named
// (empty: all the kind can build): bad_signature, wrong_chain_id,
// stale_sequence, insufficient_funds, oversized.
type Invalid struct {
	Share float64  `yaml:"share" json:"share,omitempty"` // 0..0.9 of the payments
	Sorts []string `yaml:"sorts" json:"sorts,omitempty"`
}

// Default is `tpslab run` with no arguments: a 4-validator built-in network,
// 30 s of presigned payments at 1000/s.
func Default() Scenario {
	s := Scenario{
		Version: Version,
		Name:    "default",
		Target:  Target{Broadcast: "sync", Confirm: "websocket"},
		Network: Network{Validators: 4, Accounts: 10000, TimeoutCommit: Duration(500 * time.Millisecond), TimeoutPropose: Duration(3 * time.Second),
			MempoolSize: 50000, MempoolMaxBytes: 1 << 30, MempoolCacheSize: 200000, MaxBlockBytes: 8 << 20, MaxBlockGas: -1, CreateEmptyBlocks: true,
			LogLevel: "info", Bind: "127.0.0.1"},
		Load: Load{Model: Open, Rate: 1000, Arrival: "uniform", Duration: Duration(30 * time.Second),
			Warmup: Duration(5 * time.Second), Drain: Duration(15 * time.Second),
			WaitFor: "ack", Connections: 32, SendInterval: "auto"},
		Workload: Workload{Kind: "payment", Mode: Presigned, Senders: 2000, Window: 8,
			// s 1.1 is zipf's exponent when only the distribution is named.
			SenderChoice: Choice{Dist: "uniform", S: 1.1}, RecipientChoice: Choice{Dist: "uniform", S: 1.1},
			Amount: Amount{Min: 1, Max: 100}, FundAmount: 10_000_000},
		CommitTimeout: Duration(30 * time.Second),
		AbortGrace:    Duration(10 * time.Second),
		Seed:          1,
	}
	s.all() // every registered kind's section, at its defaults
	return s
}
