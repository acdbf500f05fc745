package chain

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
)

const testChain = "test-chain"

type fixture struct {
	t      *testing.T
	app    *App
	dir    string
	keys   []ed25519.PrivateKey
	height int64
	g      Genesis
}

func newFixture(t *testing.T, accounts uint64, balance uint64) *fixture {
	t.Helper()
	dir := t.TempDir()
	app, err := Open(dir, testChain)
	if err != nil {
		t.Fatal(err)
	}
	g := Genesis{Seed: "unit", Accounts: accounts, Balance: balance}
	raw, _ := json.Marshal(g)
	if _, err := app.InitChain(context.Background(), &abci.RequestInitChain{ChainId: testChain, AppStateBytes: raw}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, app: app, dir: dir, keys: DeriveKeys(g.Seed, int(accounts)), g: g}
	t.Cleanup(func() { f.app.Close() })
	return f
}

func (f *fixture) pay(from, to int, amount, seq uint64) []byte {
	return AppendPayment(nil, testChain, f.keys[from], AddressOf(f.keys[to][32:]), amount, seq, 0)
}

func (f *fixture) checkTx(tx []byte) *abci.ResponseCheckTx {
	res, err := f.app.CheckTx(context.Background(), &abci.RequestCheckTx{Tx: tx})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// block finalizes and commits txs as the next block, returning the codes.
func (f *fixture) block(txs ...[]byte) []uint32 {
	f.height++
	res, err := f.app.FinalizeBlock(context.Background(), &abci.RequestFinalizeBlock{Txs: txs, Height: f.height})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.app.Commit(context.Background(), &abci.RequestCommit{}); err != nil {
		f.t.Fatal(err)
	}
	codes := make([]uint32, len(res.TxResults))
	for i, r := range res.TxResults {
		codes[i] = r.Code
	}
	return codes
}

func (f *fixture) account(i int) Account {
	return f.app.accounts[AddressOf(f.keys[i][32:])]
}

func (f *fixture) audit() Audit {
	a := f.app.audit()
	if len(a.Problems) > 0 {
		f.t.Fatalf("audit: %v", a.Problems)
	}
	return a
}

func TestCheckTxRejectionCodes(t *testing.T) {
	f := newFixture(t, 4, 1000)
	good := f.pay(0, 1, 10, 0)
	badSig := append([]byte(nil), good...)
	badSig[len(badSig)-1] ^= 1
	tampered := append([]byte(nil), good...)
	tampered[2+len(testChain)+PubKeySize+AddressSize+7] ^= 1 // amount's low byte: signature no longer covers it
	_, stranger, _ := ed25519.GenerateKey(rand.New(rand.NewSource(1)))
	cases := []struct {
		name string
		tx   []byte
		code uint32
	}{
		{"empty", nil, CodeMalformed},
		{"truncated", good[:len(good)-1], CodeMalformed},
		{"bad version", append([]byte{9}, good[1:]...), CodeMalformed},
		{"wrong chain", AppendPayment(nil, "other-chain", f.keys[0], AddressOf(f.keys[1][32:]), 10, 0, 0), CodeWrongChain},
		{"bad signature", badSig, CodeBadSignature},
		{"tampered amount", tampered, CodeBadSignature},
		{"sequence too high", f.pay(0, 1, 10, 5), CodeSequenceTooHigh},
		{"zero amount", f.pay(0, 1, 0, 0), CodeInvalidAmount},
		{"insufficient funds", f.pay(0, 1, 1001, 0), CodeInsufficientFunds},
		{"overflowing amount", f.pay(0, 1, math.MaxUint64, 0), CodeInsufficientFunds},
		{"unfunded sender", AppendPayment(nil, testChain, stranger, AddressOf(f.keys[1][32:]), 1, 0, 0), CodeInsufficientFunds},
		{"oversized", AppendPayment(nil, testChain, f.keys[0], AddressOf(f.keys[1][32:]), 1, 0, MaxTxBytes), CodeTooLarge},
		{"ok", good, CodeOK},
		{"sequence too low (already admitted)", good, CodeSequenceTooLow},
	}
	for _, c := range cases {
		res := f.checkTx(c.tx)
		if res.Code != c.code {
			t.Errorf("%s: code %d (%s), want %d", c.name, res.Code, res.Log, c.code)
		}
		if c.code != CodeOK && (res.Codespace != Codespace || res.Log == "") {
			t.Errorf("%s: codespace %q log %q: want codespace and a reason", c.name, res.Codespace, res.Log)
		}
	}
}

func TestSeveralInFlightThenRecheck(t *testing.T) {
	f := newFixture(t, 2, 1000)
	txs := [][]byte{f.pay(0, 1, 1, 0), f.pay(0, 1, 1, 1), f.pay(0, 1, 1, 2)}
	for i, tx := range txs {
		if c := f.checkTx(tx).Code; c != CodeOK {
			t.Fatalf("tx %d: code %d", i, c)
		}
	}
	// Block includes only the first; the mempool rechecks the rest after Commit.
	if codes := f.block(txs[0]); codes[0] != CodeOK {
		t.Fatalf("block: %v", codes)
	}
	for i, tx := range txs[1:] {
		if c := f.checkTx(tx).Code; c != CodeOK {
			t.Fatalf("recheck %d: code %d", i+1, c)
		}
	}
	if c := f.checkTx(txs[0]).Code; c != CodeSequenceTooLow {
		t.Fatalf("replay after commit: code %d, want %d", c, CodeSequenceTooLow)
	}
}

func TestReplayOfCommittedPayment(t *testing.T) {
	f := newFixture(t, 2, 1000)
	tx := f.pay(0, 1, 100, 0)
	if codes := f.block(tx); codes[0] != CodeOK {
		t.Fatalf("first: %v", codes)
	}
	if codes := f.block(tx); codes[0] != CodeSequenceTooLow {
		t.Fatalf("replay in a later block: %v", codes)
	}
	if got := f.account(0); got.Balance != 900 || got.Sequence != 1 {
		t.Fatalf("sender after replay: %+v", got)
	}
	f.audit()
}

func TestDoubleSpendInOneBlock(t *testing.T) {
	f := newFixture(t, 3, 1000)
	// Same sequence twice: the second is a replay within the block.
	codes := f.block(f.pay(0, 1, 600, 0), f.pay(0, 2, 600, 0))
	if codes[0] != CodeOK || codes[1] != CodeSequenceTooLow {
		t.Fatalf("same sequence: %v", codes)
	}
	// Consecutive sequences that together overspend: the second fails.
	codes = f.block(f.pay(1, 0, 1500, 0), f.pay(1, 2, 200, 1))
	if codes[0] != CodeOK || codes[1] != CodeInsufficientFunds {
		t.Fatalf("overspend: %v", codes)
	}
	if a := f.account(1); a.Balance != 100 || a.Sequence != 1 {
		t.Fatalf("account 1: %+v", a)
	}
	f.audit()
}

func TestFinalizeBlockRejectsUnverifiedBadSignature(t *testing.T) {
	f := newFixture(t, 2, 1000)
	tx := f.pay(0, 1, 5, 0)
	tx[len(tx)-3] ^= 0xff
	if codes := f.block(tx); codes[0] != CodeBadSignature {
		t.Fatalf("codes %v", codes)
	}
	if a := f.account(0); a.Balance != 1000 {
		t.Fatalf("failed payment changed state: %+v", a)
	}
}

func TestBalanceOverflowIsRejected(t *testing.T) {
	f := newFixture(t, 2, 1000)
	// Unreachable through payments (genesis supply fits in uint64): force it.
	f.app.accounts[AddressOf(f.keys[1][32:])] = Account{Balance: math.MaxUint64 - 5}
	if codes := f.block(f.pay(0, 1, 10, 0)); codes[0] != CodeBalanceOverflow {
		t.Fatalf("codes %v", codes)
	}
	if a := f.account(0); a.Balance != 1000 || a.Sequence != 0 {
		t.Fatalf("failed payment changed sender: %+v", a)
	}
}

func TestGenesisSupplyMustFit(t *testing.T) {
	if err := (Genesis{Seed: "x", Accounts: 1 << 33, Balance: 1 << 33}).Validate(); err == nil {
		t.Fatal("overflowing supply accepted")
	}
}

// Random payments, good and bad, over many blocks: supply never changes, the
// running digest always matches a recount, and a reopened ledger resumes with
// the same app hash.
func TestSupplyConservedUnderRandomPayments(t *testing.T) {
	const n = 20
	f := newFixture(t, n, 1000)
	rng := rand.New(rand.NewSource(42))
	seqs := make([]uint64, n)
	for b := 0; b < 60; b++ {
		var txs [][]byte
		for k := 0; k < rng.Intn(40); k++ {
			from, to := rng.Intn(n), rng.Intn(n)
			seq := seqs[from]
			switch rng.Intn(6) {
			case 0:
				seq += uint64(rng.Intn(3)) // sometimes too high
			case 1:
				if seq > 0 {
					seq-- // sometimes a replay
				}
			}
			amount := uint64(rng.Intn(700))
			if rng.Intn(10) == 0 {
				amount = math.MaxUint64 - uint64(rng.Intn(3))
			}
			txs = append(txs, f.pay(from, to, amount, seq))
			if rng.Intn(2) == 0 {
				seqs[from]++ // sender believes it went through
			}
		}
		f.block(txs...)
		for i := range seqs {
			seqs[i] = f.account(i).Sequence
		}
		a := f.audit()
		if a.Supply != "20000" {
			t.Fatalf("block %d: supply %s", b, a.Supply)
		}
	}
	before := f.audit()
	f.app.Close()
	app, err := Open(f.dir, testChain)
	if err != nil {
		t.Fatal(err)
	}
	f.app = app
	after := f.audit()
	if after.AppHash != before.AppHash || after.Height != before.Height {
		t.Fatalf("reopened ledger: %+v, before %+v", after, before)
	}
	info, _ := app.Info(context.Background(), &abci.RequestInfo{})
	if info.LastBlockHeight != f.height {
		t.Fatalf("info height %d, want %d", info.LastBlockHeight, f.height)
	}
}

func TestAccountQuery(t *testing.T) {
	f := newFixture(t, 2, 1000)
	f.block(f.pay(0, 1, 10, 0))
	f.checkTx(f.pay(0, 1, 10, 1))
	addr := AddressOf(f.keys[0][32:])
	res, err := f.app.Query(context.Background(), &abci.RequestQuery{Path: "/account", Data: addr[:]})
	if err != nil || res.Code != 0 {
		t.Fatal(err, res.Log)
	}
	var info AccountInfo
	if err := json.Unmarshal(res.Value, &info); err != nil {
		t.Fatal(err)
	}
	if info.Balance != 990 || info.Sequence != 1 || info.NextSequence != 2 {
		t.Fatalf("%+v", info)
	}
	if res, _ := f.app.Query(context.Background(), &abci.RequestQuery{Path: "/account", Data: []byte{1}}); res.Code != CodeMalformed {
		t.Fatalf("short address: code %d", res.Code)
	}
}

func TestDeriveKeyIsStable(t *testing.T) {
	// Pinned so a change to the derivation (a breaking change for every
	// client re-deriving keys) cannot go unnoticed.
	k := DeriveKey("tpslab", 0)
	if got := AddressOf(k[32:]).String(); got != pinnedAddress0 {
		t.Fatalf("address of account 0 = %s, want %s", got, pinnedAddress0)
	}
}

const pinnedAddress0 = "E2E1138ECF43253AFE70CF669EFF8EBB70BC1CA4"

// A mempool that listed a sender's payments out of order (they came from two
// peers at once) still yields a block in which all of them succeed: the
// proposal puts each sender's payments in sequence order, in the slots that
// sender's payments held, and leaves other senders and undecodable bytes be.
func TestProposalOrdersEachSendersSequences(t *testing.T) {
	f := newFixture(t, 3, 1000)
	a0, a1, a2 := f.pay(0, 2, 1, 0), f.pay(0, 2, 1, 1), f.pay(0, 2, 1, 2)
	b0, b1 := f.pay(1, 2, 1, 0), f.pay(1, 2, 1, 1)
	junk := []byte("not a payment")
	reaped := [][]byte{a2, b0, junk, a0, b1, a1}
	res, err := f.app.PrepareProposal(context.Background(), &abci.RequestPrepareProposal{Txs: slices.Clone(reaped), MaxTxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{a0, b0, junk, a1, b1, a2}
	if !slices.EqualFunc(res.Txs, want, bytes.Equal) {
		t.Fatalf("proposal order wrong: got %d txs, want a0 b0 junk a1 b1 a2", len(res.Txs))
	}
	codes := f.block(res.Txs...)
	for i, c := range codes {
		if i != 2 && c != CodeOK {
			t.Errorf("tx %d: code %d", i, c)
		}
	}
	// As reaped, the out-of-order payment fails: what the proposal prevents.
	g := newFixture(t, 3, 1000)
	if codes := g.block(reaped...); codes[0] != CodeSequenceTooHigh {
		t.Errorf("unordered block: first code %d, want sequence too high", codes[0])
	}
	// The cut at MaxTxBytes keeps a prefix of each sender's sequences.
	res, _ = f.app.PrepareProposal(context.Background(), &abci.RequestPrepareProposal{Txs: [][]byte{a2, a0, a1}, MaxTxBytes: int64(2 * len(a0))})
	if !slices.EqualFunc(res.Txs, [][]byte{a0, a1}, bytes.Equal) {
		t.Errorf("cut proposal: %d txs, want a0 a1", len(res.Txs))
	}
}

func TestBatchPaysEveryOutputOrNothing(t *testing.T) {
	f := newFixture(t, 4, 1000)
	to := []Address{AddressOf(f.keys[1][32:]), AddressOf(f.keys[2][32:]), AddressOf(f.keys[0][32:]), AddressOf(f.keys[1][32:])}
	batch := AppendBatch(nil, testChain, f.keys[0], to, []uint64{100, 200, 50, 1}, 0, 0)
	if len(batch) != BatchSize(len(testChain), 4, 0) {
		t.Fatalf("size %d, BatchSize says %d", len(batch), BatchSize(len(testChain), 4, 0))
	}
	p, err := Decode(batch)
	if err != nil || !p.Batch() || p.Outputs() != 4 || p.Recipient != to[0] || p.Amount != 100 || p.Sequence != 0 {
		t.Fatalf("decode: %v %+v", err, p)
	}
	if r := f.checkTx(batch); r.Code != CodeOK {
		t.Fatalf("checkTx: %d %s", r.Code, r.Log)
	}
	// Too much for the sender after the first: refused whole, nothing moves.
	over := AppendBatch(nil, testChain, f.keys[0], to[:2], []uint64{600}, 1, 0)
	zero := AppendBatch(nil, testChain, f.keys[3], to[:2], []uint64{5, 0}, 0, 0)
	if codes := f.block(batch, over, zero); !slices.Equal(codes, []uint32{CodeOK, CodeInsufficientFunds, CodeInvalidAmount}) {
		t.Fatalf("codes %v", codes)
	}
	if a := f.account(0); a.Balance != 1000-351+50 || a.Sequence != 1 {
		t.Fatalf("payer %+v", a)
	}
	if a, b := f.account(1), f.account(2); a.Balance != 1101 || b.Balance != 1200 {
		t.Fatalf("recipients %+v %+v", a, b)
	}
	if a := f.account(3); a.Balance != 1000 || a.Sequence != 0 {
		t.Fatalf("a refused batch changed its sender: %+v", a)
	}
	bad := slices.Clone(batch)
	bad[2+len(testChain)+PubKeySize] = 0
	if _, err := Decode(bad); err == nil {
		t.Fatal("a batch of 0 outputs decoded")
	}
	f.audit()
}

func TestSeenQueryRemembersSampledArrivals(t *testing.T) {
	f := newFixture(t, 2, 1<<40)
	var in, out []byte
	for amt := uint64(1); in == nil || out == nil; amt++ {
		tx := f.pay(0, 1, amt, 0)
		if SeenSample(sha256.Sum256(tx)) {
			in = tx
		} else {
			out = tx
		}
	}
	before := time.Now().UnixNano()
	f.checkTx(in)
	f.checkTx(out)
	hi, ho := sha256.Sum256(in), sha256.Sum256(out)
	res, err := f.app.Query(context.Background(), &abci.RequestQuery{Path: "/seen", Data: append(hi[:], ho[:]...)})
	if err != nil || len(res.Value) != 16 {
		t.Fatalf("%v %+v", err, res)
	}
	if at := int64(binary.BigEndian.Uint64(res.Value)); at < before || at > time.Now().UnixNano() {
		t.Errorf("sampled payment seen at %d, want between %d and now", at, before)
	}
	if at := binary.BigEndian.Uint64(res.Value[8:]); at != 0 {
		t.Errorf("a payment outside the sample seen at %d", at)
	}
	if res, _ := f.app.Query(context.Background(), &abci.RequestQuery{Path: "/seen", Data: []byte{1}}); res.Code != CodeMalformed {
		t.Errorf("a partial hash: code %d", res.Code)
	}
}

// Pre-loaded state (net up --state): the genesis writes N keyless accounts
// at their derived addresses, in batches; they receive payments, count in
// the supply and the audit, and survive a restart.
func TestPreloadedStateReceivesAndAudits(t *testing.T) {
	dir := t.TempDir()
	app, err := Open(dir, testChain)
	if err != nil {
		t.Fatal(err)
	}
	const state = 70_000 // past one write batch (65,536)
	g := Genesis{Seed: "unit", Accounts: 3, Balance: 1000, State: state}
	raw, _ := json.Marshal(g)
	if _, err := app.InitChain(context.Background(), &abci.RequestInitChain{ChainId: testChain, AppStateBytes: raw}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, app: app, dir: dir, keys: DeriveKeys(g.Seed, 3), g: g}
	last := StateAddress(g.Seed, state-1)
	tx := AppendPayment(nil, testChain, f.keys[0], last, 10, 0, 0)
	if codes := f.block(tx); codes[0] != CodeOK {
		t.Fatalf("a payment to a pre-loaded account: code %d", codes[0])
	}
	if a := f.audit(); a.Accounts != 3+state || a.GenesisSupply != (3+state)*1000 {
		t.Errorf("audit %+v, want %d accounts and their supply", a, 3+state)
	}
	if got := app.accounts[last].Balance; got != 1010 {
		t.Errorf("the pre-loaded account holds %d, want 1010", got)
	}
	app.Close()
	again, err := Open(dir, testChain)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if a := again.audit(); len(a.Problems) > 0 || a.Accounts != 3+state || again.accounts[last].Balance != 1010 {
		t.Errorf("after a restart: %+v, the account %d", a, again.accounts[last].Balance)
	}
	// Pinned: clients find these accounts by re-deriving the address.
	if got := StateAddress("tpslab", 0).String(); got != pinnedState0 {
		t.Errorf("pre-loaded account 0 = %s, want %s", got, pinnedState0)
	}
}

const pinnedState0 = "2EC70DBF14C933D7E9AC4550F314736416B14AF4"
