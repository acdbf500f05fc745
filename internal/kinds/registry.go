package kinds

import (
	"context"
	"fmt"
	"github.com/tpslab/tpslab/internal/threshold"
	"slices"
	"strings"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/testnet"
)

// Registry is the kinds a tpslab binary measures, in registration order;
// the first is the default (a scenario that names no kind).
type Registry struct {
	list   []Kind
	byName map[string]Kind
}

// NewRegistry registers ks. Two kinds of one name are a programming error.
func NewRegistry(ks ...Kind) *Registry {
	r := &Registry{byName: map[string]Kind{}}
	for _, k := range ks {
		r.Add(k)
	}
	return r
}

// Add registers one more kind (a test's throw-away kind, say).
func (r *Registry) Add(k Kind) {
	name := k.Info().Name
	if name == "" || r.byName[name] != nil {
		panic(fmt.Sprintf("kinds: kind %q registered twice or without a name", name))
	}
	r.list = append(r.list, k)
	r.byName[name] = k
	if c, ok := k.(Configured); ok {
		section, _ := c.Settings()
		scenario.RegisterSection(section, func() any { _, d := c.Settings(); return d })
	}
	if m, ok := k.(Migrated); ok {
		for from, to := range m.Moved() {
			scenario.RegisterMoved(from, to)
		}
	}
}

// Flags are the flags every kind declares; netUp: only those `net up`
// takes.
func (r *Registry) Flags(netUp bool) []Flag {
	var out []Flag
	seen := map[string]bool{} // kinds of a family share theirs
	for _, k := range r.list {
		if f, ok := k.(Flagged); ok {
			for _, fl := range f.Flags() {
				if (fl.NetUp || !netUp) && !seen[fl.Name] {
					seen[fl.Name] = true
					out = append(out, fl)
				}
			}
		}
	}
	return out
}

// Names lists the kinds in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.list))
	for i, k := range r.list {
		out[i] = k.Info().Name
	}
	return out
}

// All is every kind, in registration order.
func (r *Registry) All() []Kind { return r.list }

// Default is the kind a scenario that names none is measured as.
func (r *Registry) Default() Kind { return r.list[0] }

// Lookup finds a kind by name; "" is the default.
func (r *Registry) Lookup(name string) (Kind, error) {
	if name == "" {
		return r.Default(), nil
	}
	if k, ok := r.byName[name]; ok {
		return k, nil
	}
	return nil, exitcode.BadInputf("target.kind: %q, expected one of %v", name, r.Names())
}

// Resolve names the kind a scenario will be measured as: the default when
// it names none; for endpoints instead of a network to start, the kind's
// Remote (unless keepKind: the user named the kind on purpose).
func (r *Registry) Resolve(sc *scenario.Scenario, keepKind bool) error {
	k, err := r.Lookup(sc.Target.Kind)
	if err != nil {
		return err
	}
	if rk := k.Info().Remote; rk != nil && len(sc.Target.Endpoints) > 0 && !keepKind {
		k = rk
	}
	sc.Target.Kind = k.Info().Name
	return nil
}

// Validate checks a scenario: the kind it names, the scenario's own rules,
// then the kind's.
func (r *Registry) Validate(sc *scenario.Scenario) error {
	k, err := r.Lookup(sc.Target.Kind)
	if err != nil {
		return err
	}
	if err := sc.Validate(); err != nil {
		return err
	}
	// Thresholds name the report's metrics: checked here, so that the
	// scenario package knows nothing of the report.
	if _, err := threshold.ParseAll(threshold.Of(sc)); err != nil {
		return err
	}
	if sc.Target.NetHome == "" { // else the network's kind is known when it is read
		if err := unread(sc, k); err != nil {
			return err
		}
		if err := checkMix(sc, k); err != nil {
			return err
		}
		if sc.Network.State > 0 && len(sc.Target.Endpoints) == 0 && !k.Info().State {
			return exitcode.BadInputf("network.state: %d for target kind %s, expected 0: pre-loaded state is for %s", sc.Network.State, k.Info().Name, strings.Join(r.NamesWhere(func(k Kind) bool { return k.Info().State }), ", "))
		}
		for i, f := range sc.Faults {
			if len(sc.Target.Endpoints) > 0 {
				break // remote endpoints take no faults: fault.Check says so
			}
			if !k.Info().Faults {
				return exitcode.BadInputf("faults[%d]: %s on a %s target, which takes no faults (%s networks do)", i, f.Action, k.Info().Name, strings.Join(r.NamesWhere(func(k Kind) bool { return k.Info().Faults }), ", "))
			}
			if f.NeedsLinks() && !k.Info().Links {
				return exitcode.BadInputf("faults[%d]: %s needs emulated links, which %s networks do not have; they take crash and pause of a node", i, f.Action, k.Info().Name)
			}
		}
	}
	return k.Validate(sc)
}

// checkMix refuses a mix's kind the system's kind does not have.
func checkMix(sc *scenario.Scenario, k Kind) error {
	have := append([]string{"send"}, k.Info().MixKinds...)
	if m, ok := k.(Mixer); ok {
		have = append(have, m.MixKinds(sc)...)
	}
	for i, m := range sc.Workload.Mix {
		if !slices.Contains(have, m.Kind) {
			return exitcode.BadInputf("workload.mix[%d].kind: %q, expected one of [%s] for %s", i, m.Kind, strings.Join(have, " "), k.Info().Name)
		}
	}
	return nil
}

// Sections lists the scenario sections a kind reads: its own, then the
// others it reads.
func Sections(k Kind) []string { return reads(k) }

// reads lists the sections a kind reads.
func reads(k Kind) []string {
	var out []string
	if c, ok := k.(Configured); ok {
		name, _ := c.Settings()
		out = append(out, name)
	}
	if r, ok := k.(Reader); ok {
		out = append(out, r.Reads()...)
	}
	return out
}

// unread refuses a setting given in a section the kind does not read: it
// would do nothing (cosmos.via rest for an EVM chain, a denom for the
// built-in ledger).
func unread(sc *scenario.Scenario, k Kind) error {
	mine := reads(k)
	for _, name := range sc.SectionNames() {
		if slices.Contains(mine, name) {
			continue
		}
		if field := sc.SectionChanged(name); field != "" {
			what := "no section"
			if len(mine) > 0 {
				what = "only " + strings.Join(mine, ", ")
			}
			return exitcode.BadInputf("%s.%s: set, but target kind %s reads %s (a setting of another kind's section would do nothing)", name, field, k.Info().Name, what)
		}
	}
	return nil
}

// NamesWhere lists, in registration order, the kinds that have a feature
// or capability.
func (r *Registry) NamesWhere(has func(Kind) bool) []string {
	var out []string
	for _, k := range r.list {
		if has(k) {
			out = append(out, k.Info().Name)
		}
	}
	return out
}

// IsNetwork says a kind's local networks are started by `tpslab net up`.
func IsNetwork(k Kind) bool {
	_, ok := k.(Network)
	return ok
}

// network finds the Network of a kind by name, for `net` commands.
func (r *Registry) network(name, field string) (Kind, Network, error) {
	k, err := r.Lookup(name)
	if err == nil {
		if nw, ok := k.(Network); ok {
			return k, nw, nil
		}
	}
	return nil, nil, exitcode.BadInputf("%s: %q, expected one of %v", field, name, r.NamesWhere(IsNetwork))
}

// NetDefaults lets o.Kind adjust the `net up` options the user did not set.
func (r *Registry) NetDefaults(o *NetOptions, changed func(option string) bool) error {
	_, nw, err := r.network(o.Kind, "--kind")
	if err != nil {
		return err
	}
	return nw.NetDefaults(o, changed)
}

// Up creates and starts a local network of o.Kind.
func (r *Registry) Up(ctx context.Context, o NetOptions) (*testnet.Net, error) {
	k, nw, err := r.network(o.Kind, "--kind")
	if err != nil {
		return nil, err
	}
	o.Kind = k.Info().Name
	if !k.Info().Links && (o.Topology != "" || o.RPCNodes > 0 || o.ClientLinks) {
		return nil, exitcode.BadInputf("--topology and --rpc-nodes: for --kind %s only (not %s)", strings.Join(r.NamesWhere(func(k Kind) bool { return k.Info().Links }), ", "), o.Kind)
	}
	if o.Scenario != nil {
		if err := unread(o.Scenario, k); err != nil {
			return nil, err
		}
	}
	if o.State > 0 && !k.Info().State {
		return nil, exitcode.BadInputf("--state: %d on --kind %s, expected 0: pre-loaded state is for %s", o.State, o.Kind, strings.Join(r.NamesWhere(func(k Kind) bool { return k.Info().State }), ", "))
	}
	if o.Kube != nil && !k.Info().Kubernetes {
		return nil, exitcode.BadInputf("--kubeconfig: networks on Kubernetes are of kind %s, not %s", strings.Join(r.NamesWhere(func(k Kind) bool { return k.Info().Kubernetes }), ", "), o.Kind)
	}
	return nw.Up(ctx, o.withLog())
}

// Status asks every node of a network for its state the way its kind
// allows.
func (r *Registry) Status(ctx context.Context, n *testnet.Net) ([]testnet.NodeStatus, error) {
	_, nw, err := r.network(n.Kind, n.Home+"/"+testnet.NetFile+": kind")
	if err != nil {
		return nil, err
	}
	return nw.Status(ctx, n), nil
}

// Check audits a network's state the way its kind allows.
func (r *Registry) Check(ctx context.Context, n *testnet.Net) (Audit, error) {
	_, nw, err := r.network(n.Kind, n.Home+"/"+testnet.NetFile+": kind")
	if err != nil {
		return Audit{}, err
	}
	return nw.Check(ctx, n), nil
}
