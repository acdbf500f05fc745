package scenario

import (
	"fmt"
	"net/url"
	"time"

	"github.com/tpslab/tpslab/internal/threshold"
)

func oneOf(path, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s: %q, expected one of %v", path, v, allowed)
}

// Validate checks everything that can be checked before a run starts.
// accounts is the number of funded accounts when known (0: not yet known).
func (s *Scenario) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("version: %d, expected %d", s.Version, Version)
	}
	t := s.Target
	if err := oneOf("target.kind", t.Kind, "builtin", "cometbft"); err != nil {
		return err
	}
	if err := oneOf("target.broadcast", t.Broadcast, "sync", "async"); err != nil {
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
	if t.Kind == "cometbft" && len(t.Endpoints) == 0 {
		return fmt.Errorf("target.endpoints: empty, expected at least one RPC URL for target kind cometbft (--endpoint)")
	}
	if t.NetHome != "" && len(t.Endpoints) > 0 {
		return fmt.Errorf("target.net_home: %q given together with target.endpoints, expected one or the other", t.NetHome)
	}
	n := s.Network
	if n.Validators < 1 || n.Validators > 64 {
		return fmt.Errorf("network.validators: %d, expected 1..64", n.Validators)
	}
	if n.Accounts < 1 {
		return fmt.Errorf("network.accounts: %d, expected at least 1", n.Accounts)
	}
	if n.TimeoutCommit < 0 {
		return fmt.Errorf("network.timeout_commit: %s, expected a duration >= 0", n.TimeoutCommit.D())
	}
	if n.MempoolSize < 1 {
		return fmt.Errorf("network.mempool_size: %d, expected at least 1", n.MempoolSize)
	}
	if err := s.Load.validate(); err != nil {
		return err
	}
	if err := s.Workload.validate(s.Load); err != nil {
		return err
	}
	if t.Kind == "builtin" && t.NetHome == "" && len(t.Endpoints) == 0 {
		// tpslab will fund network.accounts itself: check before starting it.
		if err := s.CheckAccounts(n.Accounts); err != nil {
			return err
		}
	}
	if _, err := threshold.ParseAll(s.Thresholds); err != nil {
		return err
	}
	if s.CommitTimeout <= 0 {
		return fmt.Errorf("commit_timeout: %s, expected a duration > 0", s.CommitTimeout.D())
	}
	return nil
}

func (l Load) validate() error {
	if err := oneOf("load.model", l.Model, "open", "closed"); err != nil {
		return err
	}
	if err := oneOf("load.arrival", l.Arrival, "uniform", "poisson"); err != nil {
		return err
	}
	if l.Duration <= 0 {
		return fmt.Errorf("load.duration: %s, expected a duration > 0", l.Duration.D())
	}
	if l.Drain < 0 {
		return fmt.Errorf("load.drain: %s, expected a duration >= 0", l.Drain.D())
	}
	if l.Connections < 1 || l.Connections > 10000 {
		return fmt.Errorf("load.connections: %d, expected 1..10000", l.Connections)
	}
	if l.Model == "closed" {
		if l.Users < 1 {
			return fmt.Errorf("load.users: %d, expected at least 1 for the closed model", l.Users)
		}
		if err := oneOf("load.wait_for", l.WaitFor, "ack", "commit"); err != nil {
			return err
		}
		if l.RampUp < 0 || l.Pacing < 0 || l.Think < 0 {
			return fmt.Errorf("load.ramp_up/pacing/think: expected durations >= 0, got %s/%s/%s", l.RampUp.D(), l.Pacing.D(), l.Think.D())
		}
		return l.validateWarmup()
	}
	if l.Rate < 0 {
		return fmt.Errorf("load.rate: %g, expected a rate >= 0 (payments per second)", l.Rate)
	}
	if l.Steps != nil {
		st := *l.Steps
		switch {
		case st.From < 0:
			return fmt.Errorf("load.steps.from: %g, expected >= 0", st.From)
		case st.By <= 0:
			return fmt.Errorf("load.steps.by: %g, expected > 0", st.By)
		case st.To < st.From:
			return fmt.Errorf("load.steps.to: %g, expected >= load.steps.from (%g)", st.To, st.From)
		case st.Every <= 0:
			return fmt.Errorf("load.steps.every: %s, expected a duration > 0", st.Every.D())
		}
		if len(l.Stages) > 0 {
			return fmt.Errorf("load.steps: given together with load.stages, expected one or the other")
		}
	}
	for i, st := range l.Stages {
		if st.Duration <= 0 {
			return fmt.Errorf("load.stages[%d].duration: %s, expected a duration > 0", i, st.Duration.D())
		}
		if st.Target < 0 {
			return fmt.Errorf("load.stages[%d].target: %g, expected a rate >= 0", i, st.Target)
		}
		if st.Ramp != "" {
			if err := oneOf(fmt.Sprintf("load.stages[%d].ramp", i), st.Ramp, "linear", "step"); err != nil {
				return err
			}
		}
	}
	if len(l.Stages) == 0 && l.Steps == nil && l.Rate == 0 {
		return fmt.Errorf("load.rate: 0, expected a rate > 0 (or load.stages / load.steps)")
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
		if c.S <= 1 {
			return fmt.Errorf("%s.s: %g, expected an exponent > 1 for zipf", path, c.S)
		}
	case "hot":
		if c.Hot < 1 || c.Hot > n {
			return fmt.Errorf("%s.hot: %d, expected 1..%d accounts", path, c.Hot, n)
		}
		if c.HotShare <= 0 || c.HotShare > 1 {
			return fmt.Errorf("%s.hot_share: %g, expected a share in (0, 1]", path, c.HotShare)
		}
	}
	return nil
}

func (w Workload) validate(l Load) error {
	if err := oneOf("workload.kind", w.Kind, "payment", "raw"); err != nil {
		return err
	}
	if err := oneOf("workload.mode", w.Mode, "presigned", "live"); err != nil {
		return err
	}
	if w.Padding < 0 || w.Padding > 65535 {
		return fmt.Errorf("workload.padding: %d, expected 0..65535 bytes", w.Padding)
	}
	if w.Kind == "raw" {
		return nil
	}
	if w.Senders < 1 {
		return fmt.Errorf("workload.senders: %d, expected at least 1", w.Senders)
	}
	if w.Window < 1 {
		return fmt.Errorf("workload.window: %d, expected at least 1 payment in flight per sender", w.Window)
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
	if l.Model == "closed" && l.Users > w.Senders {
		return fmt.Errorf("load.users: %d, expected at most workload.senders (%d): each user pays from its own account", l.Users, w.Senders)
	}
	if l.Model == "closed" && w.Mode == "presigned" && l.Pacing == 0 {
		return fmt.Errorf("workload.mode: presigned with a closed model needs load.pacing > 0 to know how many payments to sign, expected live or a pacing")
	}
	return nil
}

// CheckAccounts is the validation that needs the network: senders must be
// funded genesis accounts.
func (s *Scenario) CheckAccounts(accounts uint64) error {
	if s.Workload.Kind == "payment" && uint64(s.Workload.Senders) > accounts {
		return fmt.Errorf("workload.senders: %d, expected at most the %d funded accounts", s.Workload.Senders, accounts)
	}
	return nil
}

// LoadDuration is the length of the load phase: the stages' or steps' total,
// else load.duration.
func (l Load) LoadDuration() time.Duration {
	if l.Model == "open" {
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
