package scenario

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/netem"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Bounds past which a plan is a typo, not a test: they keep every later
// allocation (schedules, presigned buffers, per-second series) finite.
const (
	MaxRate        = 1_000_000          // payments per second one generator offers
	MaxDuration    = 7 * 24 * time.Hour // longest load phase
	MaxUsers       = 1_000_000
	MaxSenders     = 10_000_000
	MaxWindow      = 1_000_000
	MaxAccounts    = 10_000_000
	MaxState       = 100_000_000 // pre-loaded accounts: a hash each, no key
	MaxStages      = 10_000
	MaxTimeout     = 24 * time.Hour // commit_timeout, drain
	MaxChainIDLen  = 64             // the ledger's limit (docs/ledger.md)
	MaxConnections = 10_000
)

var mixKindName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

func oneOf(path, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s: %q, expected one of %v", path, v, allowed)
}

// rateIn checks a rate is a finite number in [lo, MaxRate]; NaN fails every
// comparison, so it is caught here too.
func rateIn(path string, v, lo float64, what string) error {
	if !(v >= lo) {
		return fmt.Errorf("%s: %g, expected %s >= %g (payments per second)", path, v, what, lo)
	}
	if v > MaxRate {
		return fmt.Errorf("%s: %g, expected at most %d payments per second", path, v, MaxRate)
	}
	return nil
}

func durationIn(path string, d Duration, min, max time.Duration, what string) error {
	if d.D() < min || d.D() > max {
		return fmt.Errorf("%s: %s, expected %s between %s and %s", path, d.D(), what, min, max)
	}
	return nil
}

// Validate checks everything that can be checked before a run starts
// without knowing the kind of system: the kind's own rules are checked by
// the kind (kinds.Registry.Validate runs both).
func (s *Scenario) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("version: %d, expected %d", s.Version, Version)
	}
	t := s.Target
	for i, e := range t.NodeMetrics {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("target.node_metrics[%d]: %q, expected a Prometheus URL such as http://127.0.0.1:26660/metrics", i, e)
		}
	}
	if err := oneOf("target.broadcast", t.Broadcast, "sync", "async"); err != nil {
		return err
	}
	if err := durationIn("target.mempool_wait", t.MempoolWait, 0, MaxTimeout, "a duration"); err != nil {
		return err
	}
	if err := oneOf("target.confirm", t.Confirm, "websocket", "poll"); err != nil {
		return err
	}
	for i, e := range t.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("target.endpoints[%d]: %q, expected an RPC URL such as http://127.0.0.1:26657", i, e)
		}
	}
	if t.NetHome != "" && len(t.Endpoints) > 0 {
		return fmt.Errorf("target.net_home: %q given together with target.endpoints, expected one or the other", t.NetHome)
	}
	if err := s.Network.Validate(); err != nil {
		return err
	}
	if err := durationIn("abort_grace", s.AbortGrace, 0, MaxTimeout, "a duration"); err != nil {
		return err
	}
	if s.Health != "" && s.Health != "default" {
		return fmt.Errorf("health: %q, expected default (or none)", s.Health)
	}
	if s.AbortOnFail && len(s.Thresholds) == 0 && s.Health == "" {
		return fmt.Errorf("abort_on_fail: true, but no thresholds to watch, expected thresholds (--threshold 'p99_commit<=2s')")
	}
	if err := s.Load.validate(); err != nil {
		return err
	}
	if err := s.Workload.validate(s.Load); err != nil {
		return err
	}
	for i, p := range s.Profile {
		if err := oneOf(fmt.Sprintf("profile[%d]", i), p, "cpu", "allocs"); err != nil {
			return err
		}
	}
	if err := durationIn("commit_timeout", s.CommitTimeout, time.Millisecond, MaxTimeout, "a duration"); err != nil {
		return err
	}
	if err := validateFaults(s.Faults, s.Load.LoadDuration()); err != nil {
		return err
	}
	return s.checkMemory()
}

// Validate checks the network section alone: what `net up` creates a
// network with, and what a run that starts one does (one set of bounds for
// both front doors).

func (n Network) Validate() error {
	switch {
	case n.Validators < 1 || n.Validators > 64:
		return fmt.Errorf("network.validators: %d, expected 1..64", n.Validators)
	case n.Accounts < 1 || n.Accounts > MaxAccounts:
		return fmt.Errorf("network.accounts: %d, expected 1..%d", n.Accounts, MaxAccounts)
	case n.State > MaxState:
		return fmt.Errorf("network.state: %d, expected 0..%d pre-loaded accounts", n.State, MaxState)
	case n.MempoolSize < 1:
		return fmt.Errorf("network.mempool_size: %d, expected at least 1", n.MempoolSize)
	case n.MempoolMaxBytes < 1:
		return fmt.Errorf("network.mempool_max_bytes: %d, expected at least 1", n.MempoolMaxBytes)
	case n.MempoolCacheSize < 0:
		return fmt.Errorf("network.mempool_cache_size: %d, expected 0 or more", n.MempoolCacheSize)
	case n.MaxBlockBytes < 1024 || n.MaxBlockBytes > 100<<20:
		return fmt.Errorf("network.max_block_bytes: %d, expected 1024..104857600", n.MaxBlockBytes)
	case n.MaxBlockGas == 0 || n.MaxBlockGas < -1:
		return fmt.Errorf("network.max_block_gas: %d, expected -1 (no cap) or at least 1", n.MaxBlockGas)
	case len(n.ChainID) > 64:
		return fmt.Errorf("network.chain_id: %d characters, expected at most 64", len(n.ChainID))
	case n.RPCNodes < 0 || n.RPCNodes > 16:
		return fmt.Errorf("network.rpc_nodes: %d, expected 0..16", n.RPCNodes)
	case n.ClientLinks && n.Topology == "":
		return fmt.Errorf("network.client_links: true without network.topology, expected a topology whose conditions the generator's links take")
	case net.ParseIP(n.Bind) == nil:
		return fmt.Errorf("network.bind: %q, expected an IP address such as 127.0.0.1", n.Bind)
	}
	if err := durationIn("network.timeout_commit", n.TimeoutCommit, 0, time.Minute, "a duration"); err != nil {
		return err
	}
	if err := durationIn("network.timeout_propose", n.TimeoutPropose, time.Millisecond, time.Minute, "a duration"); err != nil {
		return err
	}
	if n.LogLevel == "" || strings.ContainsAny(n.LogLevel, " \t\n") {
		return fmt.Errorf("network.log_level: %q, expected a node log level such as info, error or main:info,*:error", n.LogLevel)
	}
	if n.Topology != "" {
		if err := oneOf("network.topology", n.Topology, netem.Topologies...); err != nil {
			return err
		}
	}
	if _, err := testnet.CheckEnvelopes(n.NodeCPU, n.NodeMemory, n.Validators+n.RPCNodes, "network.node_cpu", "network.node_memory"); err != nil {
		return err
	}
	return nil
}

func (l Load) validate() error {
	if err := oneOf("load.model", string(l.Model), string(Open), string(Closed)); err != nil {
		return err
	}
	if err := oneOf("load.arrival", l.Arrival, "uniform", "poisson"); err != nil {
		return err
	}
	if l.Trace != "" {
		switch {
		case l.Model != Open:
			return fmt.Errorf("load.trace: given with load.model %s, expected the open model (a trace is a schedule of arrivals)", l.Model)
		case len(l.Stages) > 0 || l.Steps != nil:
			return fmt.Errorf("load.trace: given with load.stages or load.steps, expected one schedule")
		case l.TraceSpeed != 0 && (l.TraceSpeed < 0.01 || l.TraceSpeed > 1000):
			return fmt.Errorf("load.trace_speed: %g, expected 0.01..1000 (2: twice as fast)", l.TraceSpeed)
		case l.TraceRate < 0 || l.TraceRate > 10_000_000:
			return fmt.Errorf("load.trace_rate: %g, expected 0 (the trace's) .. 10000000 arrivals per second", l.TraceRate)
		}
		if _, err := l.TraceTimes(); err != nil {
			return err
		}
		if d := l.LoadDuration(); d > MaxDuration {
			return fmt.Errorf("load.trace: lasts %s, expected at most %s", d, MaxDuration)
		}
	} else if l.TraceSpeed != 0 || l.TraceRate != 0 {
		return fmt.Errorf("load.trace_speed or load.trace_rate: given without load.trace, expected a trace to replay")
	}
	if l.Duration <= 0 {
		return fmt.Errorf("load.duration: %s, expected a duration > 0", l.Duration.D())
	}
	if l.Duration.D() > MaxDuration {
		return fmt.Errorf("load.duration: %s, expected at most %s", l.Duration.D(), MaxDuration)
	}
	if err := durationIn("load.drain", l.Drain, 0, MaxTimeout, "a duration"); err != nil {
		return err
	}
	if l.Connections < 1 || l.Connections > MaxConnections {
		return fmt.Errorf("load.connections: %d, expected 1..%d", l.Connections, MaxConnections)
	}
	if m := l.MaxConnections; m != 0 && (m < l.Connections || m > MaxConnections) {
		return fmt.Errorf("load.max_connections: %d, expected 0 (%d times load.connections) or %d..%d (at least load.connections)", m, connectionsGrowth, l.Connections, MaxConnections)
	}
	if l.SendInterval != "auto" {
		if d, err := time.ParseDuration(l.SendInterval); err != nil || d < 0 || d > time.Second {
			return fmt.Errorf("load.send_interval: %q, expected auto, 0 or a duration up to 1s", l.SendInterval)
		}
	}
	if l.Model == Closed {
		if l.Users < 1 || l.Users > MaxUsers {
			return fmt.Errorf("load.users: %d, expected 1..%d for the closed model", l.Users, MaxUsers)
		}
		if err := oneOf("load.wait_for", l.WaitFor, "ack", "commit"); err != nil {
			return err
		}
		for _, d := range []struct {
			path string
			v    Duration
		}{{"load.ramp_up", l.RampUp}, {"load.pacing", l.Pacing}, {"load.think", l.Think}} {
			if err := durationIn(d.path, d.v, 0, MaxDuration, "a duration"); err != nil {
				return err
			}
		}
		return l.validateWarmup()
	}
	if len(l.Stages) == 0 && l.Steps == nil && !(l.Rate > 0) {
		return fmt.Errorf("load.rate: %g, expected a rate above 0 payments per second (or load.stages / load.steps)", l.Rate)
	}
	if err := rateIn("load.rate", l.Rate, 0, "a rate"); err != nil {
		return err
	}
	if l.Steps != nil {
		st := *l.Steps
		if err := rateIn("load.steps.from", st.From, 0, "a rate"); err != nil {
			return err
		}
		if err := rateIn("load.steps.to", st.To, st.From, "a rate at least load.steps.from,"); err != nil {
			return err
		}
		if !(st.By > 0) || math.IsInf(st.By, 0) {
			return fmt.Errorf("load.steps.by: %g, expected > 0", st.By)
		}
		if st.Every <= 0 {
			return fmt.Errorf("load.steps.every: %s, expected a duration > 0", st.Every.D())
		}
		if n := (st.To-st.From)/st.By + 1; n > MaxStages {
			return fmt.Errorf("load.steps: %.0f steps from %g to %g by %g, expected at most %d", n, st.From, st.To, st.By, MaxStages)
		}
		if len(l.Stages) > 0 {
			return fmt.Errorf("load.steps: given together with load.stages, expected one or the other")
		}
	}
	if len(l.Stages) > MaxStages {
		return fmt.Errorf("load.stages: %d stages, expected at most %d", len(l.Stages), MaxStages)
	}
	for i, st := range l.Stages {
		if st.Duration <= 0 {
			return fmt.Errorf("load.stages[%d].duration: %s, expected a duration > 0", i, st.Duration.D())
		}
		if err := rateIn(fmt.Sprintf("load.stages[%d].target", i), st.Target, 0, "a rate"); err != nil {
			return err
		}
		if st.Ramp != "" {
			if err := oneOf(fmt.Sprintf("load.stages[%d].ramp", i), st.Ramp, "linear", "step"); err != nil {
				return err
			}
		}
	}
	if d := l.LoadDuration(); d > MaxDuration {
		return fmt.Errorf("load: the stages or steps last %s, expected at most %s", d, MaxDuration)
	}
	return l.validateWarmup()
}

func (l Load) validateWarmup() error {
	if l.Warmup < 0 || l.Warmup.D() >= l.LoadDuration() {
		return fmt.Errorf("load.warmup: %s, expected >= 0 and shorter than the load (%s)", l.Warmup.D(), l.LoadDuration())
	}
	return nil
}

func (c Choice) validate(path string, n int) error {
	if err := oneOf(path+".dist", c.Dist, "uniform", "zipf", "hot"); err != nil {
		return err
	}
	switch c.Dist {
	case "zipf":
		if !(c.S > 1) || c.S > 100 {
			return fmt.Errorf("%s.s: %g, expected an exponent > 1 (and at most 100) for zipf", path, c.S)
		}
	case "hot":
		if c.Hot < 1 || c.Hot > n {
			return fmt.Errorf("%s.hot: %d, expected 1..%d accounts", path, c.Hot, n)
		}
		if !(c.HotShare > 0 && c.HotShare <= 1) {
			return fmt.Errorf("%s.hot_share: %g, expected a share in (0, 1]", path, c.HotShare)
		}
	}
	return nil
}

func (w Workload) validate(l Load) error {
	if s := w.Invalid.Share; s < 0 || s > 0.9 {
		return fmt.Errorf("workload.invalid.share: %g, expected 0..0.9 of the payments", s)
	}
	for i, sort := range w.Invalid.Sorts {
		if err := oneOf(fmt.Sprintf("workload.invalid.sorts[%d]", i), sort, "bad_signature", "wrong_chain_id", "stale_sequence", "insufficient_funds", "oversized"); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	for i, m := range w.Mix {
		p := fmt.Sprintf("workload.mix[%d]", i)
		// Which kinds a system has is its kind's to say (kinds.MixKinds).
		if !mixKindName.MatchString(m.Kind) {
			return fmt.Errorf("%s.kind: %q, expected a kind of payment such as send or multi_send", p, m.Kind)
		}
		if j, ok := seen[m.Kind]; ok {
			return fmt.Errorf("%s.kind: %s, already workload.mix[%d]'s; expected each kind once (add the weights)", p, m.Kind, j)
		}
		seen[m.Kind] = i
		if m.Weight <= 0 || m.Weight > 1e6 {
			return fmt.Errorf("%s.weight: %g, expected a weight above 0", p, m.Weight)
		}
		if m.Outputs != 0 && (m.Kind != "multi_send" || m.Outputs < 2 || m.Outputs > 100) {
			return fmt.Errorf("%s.outputs: %d, expected 2..100 recipients of a multi_send", p, m.Outputs)
		}
	}
	if len(w.Invalid.Sorts) > 0 && w.Invalid.Share == 0 {
		return fmt.Errorf("workload.invalid.sorts: given with share 0, expected a share such as 0.1")
	}
	if err := oneOf("workload.kind", w.Kind, "payment", "raw", "erc20"); err != nil {
		return err
	}
	if err := oneOf("workload.mode", string(w.Mode), string(Presigned), string(Live)); err != nil {
		return err
	}
	if w.Padding < 0 || w.Padding > 65535 {
		return fmt.Errorf("workload.padding: %d, expected 0..65535 bytes", w.Padding)
	}
	if w.Gas > 1_000_000_000 {
		return fmt.Errorf("workload.gas: %d, expected 0 (the kind's default) .. 1000000000", w.Gas)
	}
	if w.FundAmount < 1 {
		return fmt.Errorf("workload.fund_amount: %d, expected at least 1", w.FundAmount)
	}
	if len(w.ChainID) > MaxChainIDLen {
		return fmt.Errorf("workload.chain_id: %d characters, expected at most %d", len(w.ChainID), MaxChainIDLen)
	}
	if w.Accounts > MaxAccounts {
		return fmt.Errorf("workload.accounts: %d, expected at most %d", w.Accounts, MaxAccounts)
	}
	if w.Kind == "raw" {
		return nil
	}
	if w.Senders < 1 || w.Senders > MaxSenders {
		return fmt.Errorf("workload.senders: %d, expected 1..%d", w.Senders, MaxSenders)
	}
	if w.FundAmount > math.MaxUint64/uint64(w.Senders) {
		return fmt.Errorf("workload.fund_amount: %d to each of %d senders, expected at most %d each (the total must fit in 64 bits)", w.FundAmount, w.Senders, uint64(math.MaxUint64)/uint64(w.Senders))
	}
	if w.SendersOffset < 0 || w.SendersOffset > MaxAccounts {
		return fmt.Errorf("workload.senders_offset: %d, expected 0..%d", w.SendersOffset, MaxAccounts)
	}
	if w.Window < 1 || w.Window > MaxWindow {
		return fmt.Errorf("workload.window: %d, expected 1..%d payments in flight per sender", w.Window, MaxWindow)
	}
	if err := w.SenderChoice.validate("workload.sender_choice", w.Senders); err != nil {
		return err
	}
	if err := w.RecipientChoice.validate("workload.recipient_choice", w.Senders); err != nil {
		return err
	}
	if w.Amount.Min < 1 || w.Amount.Max < w.Amount.Min {
		return fmt.Errorf("workload.amount: min %d max %d, expected 1 <= min <= max", w.Amount.Min, w.Amount.Max)
	}
	if l.Model == Closed && l.Users > w.Senders {
		return fmt.Errorf("load.users: %d, expected at most workload.senders (%d): each user pays from its own account", l.Users, w.Senders)
	}
	if l.Model == Closed && w.Mode == Presigned && l.Pacing == 0 {
		return fmt.Errorf("workload.mode: presigned with a closed model needs load.pacing > 0 to know how many payments to sign, expected live or a pacing")
	}
	return nil
}

// CheckAccounts is the validation that needs the network: senders must be
// funded genesis accounts.
func (s *Scenario) CheckAccounts(accounts uint64) error {
	w := s.Workload
	if w.Kind != "raw" && uint64(w.SendersOffset+w.Senders) > accounts {
		if w.SendersOffset > 0 {
			return fmt.Errorf("workload.senders: accounts %d..%d (senders_offset %d + senders %d), expected within the %d funded accounts", w.SendersOffset, w.SendersOffset+w.Senders-1, w.SendersOffset, w.Senders, accounts)
		}
		return fmt.Errorf("workload.senders: %d, expected at most the %d funded accounts", w.Senders, accounts)
	}
	return nil
}

// LoadDuration is the length of the load phase: the stages' or steps' total,
// else load.duration.
func (l Load) LoadDuration() time.Duration {
	if l.Model == Open {
		if l.Trace != "" {
			return l.Profile().Duration()
		}
		if l.Steps != nil {
			n := int((l.Steps.To-l.Steps.From)/l.Steps.By) + 1
			return time.Duration(n) * l.Steps.Every.D()
		}
		if len(l.Stages) > 0 {
			var d time.Duration
			for _, st := range l.Stages {
				d += st.Duration.D()
			}
			return d
		}
	}
	return l.Duration.D()
}

// MaxLoadEnv names a cap on a load's length, for quick checks of long
// examples (CI's README check sets 3s): a longer load is compressed in
// time (Compress).
const MaxLoadEnv = "TPSLAB_MAX_LOAD"

// Compress shortens sc's load to at most max by scaling its time axis:
// duration, warm-up, ramp, stages, steps, and the faults' times with it
// (a fault keeps its place in the load); rates stay as they are, and the
// drain is held to max. It returns the factor, 1 when nothing changed. A
// trace's timing is its own and is not compressed.
func Compress(sc *Scenario, max time.Duration) float64 {
	l := &sc.Load
	d := l.LoadDuration()
	if max <= 0 || d <= max || l.Trace != "" {
		return 1
	}
	f := float64(max) / float64(d)
	scale := func(x *Duration) { *x = Duration(time.Duration(float64(x.D()) * f).Round(time.Millisecond)) }
	scale(&l.Duration)
	scale(&l.Warmup)
	scale(&l.RampUp)
	for i := range l.Stages {
		scale(&l.Stages[i].Duration)
	}
	if l.Steps != nil {
		scale(&l.Steps.Every)
	}
	for i := range sc.Faults {
		scale(&sc.Faults[i].At)
		scale(&sc.Faults[i].For)
	}
	if l.Drain.D() > max {
		l.Drain = Duration(max)
	}
	return f
}
