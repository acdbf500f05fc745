// Package verify re-counts a finished run's committed payments from the
// chain itself, apart from the run's confirmer: it reads each block the
// evidence file names (and its results) from any node of the chain, and
// checks the file's running digest, so an edited result or evidence file,
// a pruned node or another chain is named (docs/results.md).
package verify

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/report"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
)

// Outcome is what a verification found.
type Outcome struct {
	Found, Committed int64  // payments found committed with code 0, and the result's count
	First, Last      int64  // the blocks read
	Windows          int    // the seconds of payments settled by answers read from a store
	Store            string // the store read, without a password
	ChainID          string
	Differences      []string // the first ones, when some payment was not found
	// Checked are the figures re-derived from the evidence and found to
	// hold; NotChecked those it could not re-derive, and why.
	Checked, NotChecked []string
}

// maxShown bounds the differences listed; catchUp is how long a node
// behind the run's last block is given to reach it.
const (
	maxShown = 5
	catchUp  = 10 * time.Second
)

// Source is where a run's payments are re-counted from: a CometBFT node
// for the lines of blocks (kinds whose payments are CometBFT transactions:
// Recountable), and a kind's store for payments settled by answers.
type Source struct {
	RPC         string
	Recountable []string
	// Rows, when set, says which ids the kind's store holds as committed
	// (kinds.Recounter), read from Store.
	Rows  func(ctx context.Context, ids []string) (map[string]bool, error)
	Store string
	// Block, when set, re-counts one line of a kind whose blocks are not
	// CometBFT's (kinds.BlockRecounter), from the node at RPC.
	Block func(ctx context.Context, l report.EvidenceLine) (found int64, diffs []string, err error)
}

// Run verifies the run in dir against src: the evidence file's digests,
// its count against result.json's, and every payment it names in the
// block it names with result code 0, or in the kind's store. A failed
// check is an error: exit 1 for differences, 3 for a chain or store that
// lacks the payments' blocks (or is another one), 2 for a run verify
// cannot read.
func Run(ctx context.Context, dir string, src Source) (Outcome, error) {
	var o Outcome
	r, err := report.ReadResult(dir)
	if err != nil {
		return o, exitcode.Wrap(exitcode.BadInput, err)
	}
	kind := ""
	if r.Network != nil {
		kind = r.Network.Kind
		o.ChainID = r.Network.ChainID
	}
	lines, err := readEvidence(dir)
	if err != nil {
		return o, err
	}
	o.Committed = r.Summary.Committed
	var blocks, windows []report.EvidenceLine
	for _, l := range lines {
		o.Found += int64(len(l.OK))
		if l.Window > 0 {
			windows = append(windows, l)
		} else {
			blocks = append(blocks, l)
		}
	}
	if o.Found != o.Committed {
		return o, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("result.json says %d committed, %s names %d: one of them was edited", o.Committed, report.EvidenceFile, o.Found))
	}
	if err := o.checkFigures(r, lines); err != nil {
		return o, exitcode.Wrap(exitcode.ThresholdsFailed, err)
	}
	if len(blocks) > 0 && !slices.Contains(src.Recountable, kind) && src.Block == nil {
		return o, exitcode.BadInputf("%s: a %q run; verify re-counts blocks of CometBFT transactions (%s)", dir, kind, strings.Join(src.Recountable, ", "))
	}
	if len(windows) > 0 && src.Rows == nil {
		return o, exitcode.BadInputf("%s: a %q run settled by answers; verify re-counts those from the kind's store, which %q does not name", dir, kind, kind)
	}
	o.Found = 0
	switch {
	case len(blocks) > 0 && src.Block != nil:
		o.First, o.Last = blocks[0].Height, blocks[len(blocks)-1].Height
		for _, l := range blocks {
			found, diffs, err := src.Block(ctx, l)
			if err != nil {
				return o, exitcode.Wrap(exitcode.TargetFailed, err)
			}
			o.Found += found
			o.note(diffs)
		}
	case len(blocks) > 0:
		if err := o.recountBlocks(ctx, src.RPC, blocks); err != nil {
			return o, err
		}
	}
	if len(windows) > 0 {
		if err := o.recountRows(ctx, src, windows); err != nil {
			return o, err
		}
	}
	if o.Found != o.Committed {
		where := fmt.Sprintf("blocks %d..%d of %s", o.First, o.Last, src.RPC)
		if o.Windows > 0 {
			where = o.Store
		}
		return o, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%d of %d committed payments found in %s: %v", o.Found, o.Committed, where, o.Differences))
	}
	return o, nil
}

// recountRows asks the kind's store for every id of the windows' lines.
func (o *Outcome) recountRows(ctx context.Context, src Source, windows []report.EvidenceLine) error {
	var ids []string
	for _, l := range windows {
		ids = append(ids, l.OK...)
	}
	found, err := src.Rows(ctx, ids)
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, err)
	}
	o.Windows = len(windows)
	o.Store = "the database"
	if u, err := url.Parse(src.Store); err == nil {
		o.Store = u.Redacted()
	}
	for _, l := range windows {
		for _, id := range l.OK {
			if found[id] {
				o.Found++
			} else if len(o.Differences) < maxShown {
				o.Differences = append(o.Differences, fmt.Sprintf("%s (second %d) not in the store", id, l.Window))
			}
		}
	}
	return nil
}

// recountBlocks reads each line's block from the node at rpc.
func (o *Outcome) recountBlocks(ctx context.Context, rpc string, lines []report.EvidenceLine) error {
	o.First, o.Last = lines[0].Height, lines[len(lines)-1].Height
	cl := &cometbft.Client{URL: rpc, HTTP: &http.Client{Timeout: 30 * time.Second}}
	st, err := cl.Status(ctx)
	if err != nil {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%s: %w", rpc, err))
	}
	if o.ChainID != "" && st.NodeInfo.Network != o.ChainID {
		return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%s serves chain %q; the run's was %q", rpc, st.NodeInfo.Network, o.ChainID))
	}
	// Another node than the run read may be a block or two behind it
	// (CI: height 8 when the run had counted block 9): it catches up.
	for deadline := time.Now().Add(catchUp); int64(st.SyncInfo.LatestBlockHeight) < o.Last; {
		if time.Now().After(deadline) {
			return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%s is at height %d, behind the run's last block %d, after %s", rpc, st.SyncInfo.LatestBlockHeight, o.Last, catchUp))
		}
		select {
		case <-ctx.Done():
			return exitcode.Wrap(exitcode.TargetFailed, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
		if st, err = cl.Status(ctx); err != nil {
			return exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("%s: %v", rpc, err))
		}
	}
	for _, l := range lines {
		found, diffs, err := recount(ctx, cl, l)
		if err != nil {
			return err
		}
		o.Found += found
		o.note(diffs)
	}
	return nil
}

// note keeps the first differences.
func (o *Outcome) note(diffs []string) {
	for _, d := range diffs {
		if len(o.Differences) < maxShown {
			o.Differences = append(o.Differences, d)
		}
	}
}

// recount reads the line's block and its results and counts the line's
// payments there with code 0.
func recount(ctx context.Context, cl *cometbft.Client, l report.EvidenceLine) (int64, []string, error) {
	b, err := cl.Block(ctx, l.Height)
	if err != nil {
		return 0, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("block %d is not on %s (pruned, or another chain): %v", l.Height, cl.URL, err))
	}
	if l.Hash != "" && b.Header.DataHash != l.Hash {
		return 0, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("block %d on %s holds other transactions (data_hash %s, the run counted %s): another chain of the same name", l.Height, cl.URL, b.Header.DataHash, l.Hash))
	}
	res, err := cl.BlockResults(ctx, l.Height)
	if err != nil {
		return 0, nil, exitcode.Wrap(exitcode.TargetFailed, fmt.Errorf("block %d's results are not on %s: %v", l.Height, cl.URL, err))
	}
	ok := map[string]bool{}
	for k, tx := range b.Data.Txs {
		sum := sha256.Sum256(tx)
		ok[hex.EncodeToString(sum[:])] = k < len(res) && res[k].Code == 0
	}
	var found int64
	var diffs []string
	for _, id := range l.OK {
		switch code0, in := ok[id]; {
		case !in:
			diffs = append(diffs, fmt.Sprintf("%s not in block %d", id, l.Height))
		case !code0:
			diffs = append(diffs, fmt.Sprintf("%s in block %d with a result code other than 0", id, l.Height))
		default:
			found++
		}
	}
	return found, diffs, nil
}

// readEvidence reads the run's evidence file (a segmented run's: each
// segment's) and checks each line's running digest.
func readEvidence(dir string) ([]report.EvidenceLine, error) {
	files := []string{filepath.Join(dir, report.EvidenceFile)}
	st, err := os.Stat(files[0])
	if segs, _ := filepath.Glob(filepath.Join(dir, "segments", "*", report.EvidenceFile)); len(segs) > 0 && (err != nil || st.Size() == 0) {
		files = segs // a merged run: each segment kept its own
	} else if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("%s: no %s (a run before tpslab kept evidence)", dir, report.EvidenceFile)
	}
	var out []report.EvidenceLine
	for _, f := range files {
		lines, err := readFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

func readFile(path string) ([]report.EvidenceLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, err)
	}
	defer f.Close()
	var out []report.EvidenceLine
	digest := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var l report.EvidenceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%s line %d: not an evidence line: %v", path, n, err))
		}
		digest = report.EvidenceDigest(digest, l.Where(), l.Hash, l.OK)
		if digest != l.Digest {
			return nil, exitcode.Wrap(exitcode.ThresholdsFailed, fmt.Errorf("%s line %d (block %d): its digest does not follow from the lines before it: the file was edited or a line dropped", path, n, l.Height))
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, exitcode.Wrap(exitcode.BadInput, fmt.Errorf("%s: %v", path, err))
	}
	return out, nil
}

// rateTolerance is how far committed_tps may lie from the rate the
// evidence and blocks.jsonl give by the run's own arithmetic: the seen
// times are written in milliseconds, so only rounding parts them.
const rateTolerance = 0.01

// checkFigures re-derives what the run's own files can say about its
// figures, before any node is asked: each id counted once (an id listed
// twice is a forgery: a digest anyone can recompute binds nothing), every
// line inside the run's blocks or seconds, the counts' identities, the
// series adding up to the summary, and committed_tps from the evidence
// and the blocks' seen times.
func (o *Outcome) checkFigures(r *report.Result, lines []report.EvidenceLine) error {
	s := &r.Summary
	seen := make(map[[32]byte]int64, s.Committed)
	for _, l := range lines {
		for _, id := range l.OK {
			var k [32]byte
			if b, err := hex.DecodeString(id); err != nil || len(b) != 32 {
				return fmt.Errorf("%s: %q at %s is not a payment id", report.EvidenceFile, id, l.Where())
			} else {
				copy(k[:], b)
			}
			if at, dup := seen[k]; dup {
				return fmt.Errorf("%s lists payment %s twice (at %d and at %s): forged, a payment counts once", report.EvidenceFile, id, at, l.Where())
			}
			seen[k] = l.Height
		}
		if l.Height > 0 && (l.Height < r.Chain.FirstHeight || l.Height > r.Chain.LastHeight) {
			return fmt.Errorf("%s names block %d, outside the blocks the run read (%d..%d): another run's evidence", report.EvidenceFile, l.Height, r.Chain.FirstHeight, r.Chain.LastHeight)
		}
	}
	o.Checked = append(o.Checked, "each id once", "every block within the run's")
	if err := s.Counts.Check(); err != nil {
		return fmt.Errorf("result.json's counts do not add up: %v", err)
	}
	o.Checked = append(o.Checked, "the counts' identities")
	if len(r.Series) > 0 {
		var sum int64
		for _, x := range r.Series {
			sum += x.Committed
		}
		if sum != s.Committed {
			return fmt.Errorf("series.jsonl's seconds committed %d in all, result.json says %d: one of them was edited", sum, s.Committed)
		}
		o.Checked = append(o.Checked, "the series' sum")
	}
	want, ok := evidenceRate(r, lines)
	switch {
	case !ok:
		o.NotChecked = append(o.NotChecked, "committed_tps (its steady window holds too few blocks of payments to re-derive it)")
	case math.Abs(s.CommittedTPS-want) > rateTolerance*want+1:
		return fmt.Errorf("result.json says committed_tps %.1f; the evidence's payments over the steady window's blocks, by the times blocks.jsonl says they were seen, give %.1f", s.CommittedTPS, want)
	default:
		o.Checked = append(o.Checked, fmt.Sprintf("committed_tps (%.1f from the evidence over the steady blocks' span)", want))
	}
	o.NotChecked = append(o.NotChecked, "latencies and when blocks were seen (tpslab's own clock)")
	return nil
}

// evidenceRate is committed_tps as the run derives it (runner's
// committedRate), from the evidence: the payments in the steady window's
// blocks after its first, over the time from its first block to its last
// as blocks.jsonl says they were seen, plus the window's stall; or, for
// payments settled by answers, those of the steady seconds over them.
// Header times would not do: EVM headers count whole seconds, and a
// short window of them read 59 against 208 on an honest evmd run.
func evidenceRate(r *report.Result, lines []report.EvidenceLine) (float64, bool) {
	c, s := r.Chain, r.Summary.Steady
	// A window is its second's place in the series, whose phase says if
	// it is steady: on a busy machine a steady second collected late
	// carries a T past the window's end (CI: 183.7 against 197.7).
	inWindow := func(w int64) bool {
		if w <= int64(len(r.Series)) {
			return r.Series[w-1].Phase == "steady"
		}
		return float64(w) > s.StartS && float64(w) <= s.EndS
	}
	var n int64
	windows := false
	for _, l := range lines {
		switch {
		case l.Window > 0:
			windows = true
			if inWindow(l.Window) {
				n += int64(len(l.OK))
			}
		case l.Height > c.SteadyFirstHeight && l.Height <= c.SteadyLastHeight:
			n += int64(len(l.OK))
		}
	}
	if windows {
		return float64(n) / s.DurationS, s.DurationS > 0
	}
	first, last := -1.0, -1.0
	for _, b := range r.Blocks {
		switch b.Height {
		case c.SteadyFirstHeight:
			first = b.Seen
		case c.SteadyLastHeight:
			last = b.Seen
		}
	}
	span := last - first + s.StallS
	if first < 0 || last < 0 || c.SteadyLastHeight <= c.SteadyFirstHeight || span <= 0 {
		return 0, false
	}
	return float64(n) / span, true
}
