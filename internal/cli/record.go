package cli

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/kinds"
	"github.com/tpslab/tpslab/internal/scenario"
	"github.com/tpslab/tpslab/internal/schedule"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
)

// recordCmd writes a finished open-model run's arrivals as a trace. The
// schedule is arithmetic on the scenario and its seed (Poisson gaps
// included), so the run's own scenario gives back exactly the intended send
// times it offered, without the run having logged each one.
func recordCmd(reg *kinds.Registry) *cobra.Command {
	var out string
	var allowIncomplete bool
	var chainOpts recordChain
	c := &cobra.Command{
		Use:   "record RUN_DIR | record --rpc URL --from H [--to H] --out FILE",
		Short: "Write a finished open-model run's arrivals, or a chain's blocks' payments, as a trace to replay (load.trace)",
		Long: `Writes the intended send time of every payment a finished open-model run
offered as a trace (CSV, docs/scenario.md "Traces"), which load.trace replays,
faster with load.trace_speed or at another mean rate with load.trace_rate.

With --rpc, reads the blocks --from..--to of a CometBFT chain instead and
writes every payment in them, whoever sent it, with its kind, sender,
recipient and amount, as the chain's kind (--kind) reads them; replay
maps the trace's accounts onto the run's senders.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if chainOpts.rpc != "" {
				if len(args) > 0 {
					return exitcode.BadInputf("record: a run directory and --rpc both given, expected one of them")
				}
				return chainOpts.record(cmd.Context(), reg, out)
			}
			if len(args) != 1 {
				return exitcode.BadInputf("record: no run directory, expected RUN_DIR or --rpc URL")
			}
			if reps, _ := filepath.Glob(filepath.Join(args[0], "rep-*", "result.json")); len(reps) > 0 {
				return exitcode.BadInputf("record: %s holds %d repetitions (--repeat), expected one run: record one of them, e.g. %s", args[0], len(reps), filepath.Join(args[0], "rep-1"))
			}
			r, err := readRun(args[0])
			if err != nil {
				return err
			}
			if err := refuseIncomplete(r, allowIncomplete); err != nil {
				return err
			}
			b, _ := json.Marshal(r.Scenario)
			sc := scenario.Default()
			if err := json.Unmarshal(b, &sc); err != nil {
				return exitcode.BadInputf("%s: result.json's scenario: %v", args[0], err)
			}
			if sc.Load.Model != scenario.Open {
				return exitcode.BadInputf("%s: load.model %s, expected an open-model run (a closed model's users have no arrival schedule)", args[0], sc.Load.Model)
			}
			if sc.Load.Trace != "" {
				if _, err := sc.Load.TraceTimes(); err != nil {
					return exitcode.BadInputf("%s replayed a trace that cannot be read now: %v", args[0], err)
				}
			}
			// A run stopped early offered only the schedule's first
			// arrivals: the trace holds those, not the whole plan.
			limit := int64(-1)
			if r.Status != "complete" || strings.HasPrefix(r.EndedBecause, "interrupted") {
				limit = r.Summary.Offered
			}
			var times []time.Duration
			for a := sc.Load.Arrivals(sc.Seed); limit < 0 || int64(len(times)) < limit; {
				t, ok := a.Next()
				if !ok {
					break
				}
				times = append(times, t)
			}
			if out == "" {
				out = filepath.Join(args[0], "trace.csv")
			}
			f, err := os.Create(out)
			if err != nil {
				return exitcode.BadInputf("--out: %v", err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			err = schedule.WriteTrace(w, times)
			if err == nil {
				err = w.Flush()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", out, err)
			}
			last := time.Duration(0)
			if len(times) > 0 {
				last = times[len(times)-1]
			}
			fmt.Printf("wrote %d arrivals over %.1f s to %s; replay with load.trace: %s\n", len(times), last.Seconds(), out, out)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the trace file (default RUN_DIR/trace.csv; with --rpc, required)")
	c.Flags().BoolVar(&allowIncomplete, "allow-incomplete", false, "record a run that ended early or a partial merge too (its trace holds only what it offered)")
	c.Flags().StringVar(&chainOpts.rpc, "rpc", "", "read payments from this CometBFT RPC's blocks instead of a run")
	decoders := reg.NamesWhere(func(k kinds.Kind) bool { _, ok := k.(kinds.PaymentDecoder); return ok })
	c.Flags().StringVar(&chainOpts.kind, "kind", reg.Default().Info().Name, "the kind of chain, how its transactions are read as payments: "+strings.Join(decoders, ", "))
	c.Flags().Int64Var(&chainOpts.from, "from", 0, "the first block (with --rpc)")
	c.Flags().Int64Var(&chainOpts.to, "to", 0, "the last block (with --rpc; default the chain's latest)")
	return c
}

// recordChain reads a trace from a chain's blocks.
type recordChain struct {
	rpc, kind string
	from, to  int64
}

// record writes the payments of blocks from..to as a trace. A block's
// payments arrive evenly spread over the time since the block before it
// (header times): the block says when they were committed, not when each
// was sent, so the trace keeps each block's count and the blocks' pace.
func (o recordChain) record(ctx context.Context, reg *kinds.Registry, out string) error {
	k, err := reg.Lookup(o.kind)
	if err != nil {
		return exitcode.BadInputf("--kind: %v", err)
	}
	dec, ok := k.(kinds.PaymentDecoder)
	if !ok {
		return exitcode.BadInputf("--kind: %s, expected a kind whose blocks tpslab reads as payments (%s)", o.kind,
			strings.Join(reg.NamesWhere(func(k kinds.Kind) bool { _, ok := k.(kinds.PaymentDecoder); return ok }), ", "))
	}
	if out == "" {
		return exitcode.BadInputf("--out: empty, expected the trace file to write")
	}
	if o.from < 1 {
		return exitcode.BadInputf("--from: %d, expected the first block's height (1 or more)", o.from)
	}
	cl := &cometbft.Client{URL: o.rpc, HTTP: &http.Client{Timeout: 30 * time.Second}}
	head, err := cl.Height(ctx)
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("--rpc %s: %w", o.rpc, err))
	}
	if o.to == 0 {
		if o.from > head {
			return exitcode.BadInputf("--from: %d, expected a height at or below the chain's latest, %d", o.from, head)
		}
		o.to = head
	}
	if o.to > head {
		return exitcode.BadInputf("--to: %d, expected a height at or below the chain's latest, %d", o.to, head)
	}
	if o.to < o.from {
		return exitcode.BadInputf("--to: %d, expected a height at or above --from %d", o.to, o.from)
	}
	// Written beside and renamed when whole: a failed read leaves no
	// empty or half trace under the name a replay would use.
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.part")
	if err != nil {
		return exitcode.BadInputf("--out: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w := csv.NewWriter(bw)
	w.Write([]string{"offset_s", "kind", "sender", "recipient", "amount"})
	var start, prev time.Time
	if o.from > 1 {
		b, err := cl.Block(ctx, o.from-1)
		if err != nil {
			return fmt.Errorf("block %d: %w", o.from-1, err)
		}
		start, prev = b.Header.Time, b.Header.Time
	}
	var rows, other int
	for h := o.from; h <= o.to; h++ {
		b, err := cl.Block(ctx, h)
		if err != nil {
			return fmt.Errorf("block %d: %w", h, err)
		}
		t := b.Header.Time
		if start.IsZero() {
			start, prev = t, t
		}
		n := len(b.Data.Txs)
		for i, tx := range b.Data.Txs {
			p, ok := dec.DecodePayment(tx)
			if !ok {
				other++
				continue
			}
			at := prev.Add(t.Sub(prev) * time.Duration(i+1) / time.Duration(n))
			w.Write([]string{strconv.FormatFloat(at.Sub(start).Seconds(), 'f', 6, 64), p.Kind, p.Sender, p.Recipient, strconv.FormatUint(p.Amount, 10)})
			rows++
		}
		prev = t
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	fmt.Printf("wrote %d payments of blocks %d..%d to %s", rows, o.from, o.to, out)
	if other > 0 {
		fmt.Printf(" (%d other transactions left out)", other)
	}
	fmt.Printf("; replay with load.trace: %s\n", out)
	return nil
}
