package chain

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tpslab/tpslab/internal/fanout"
	"math"
	"sync"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// Version is reported through ABCI Info.
const Version = "tpslab-ledger/1"

var (
	keyHeight  = []byte("m/height")
	keyDigest  = []byte("m/digest")
	keyGenesis = []byte("m/genesis")
	prefixAcct = []byte("a/")
)

// App is the bank-send ledger. CometBFT drives it through a connection-
// synchronised local client: CheckTx, FinalizeBlock/Commit and Query each run
// on their own connection, so the committed state is guarded by mu.
type App struct {
	abci.BaseApplication

	chainID string
	db      *leveldb.DB

	mu       sync.RWMutex // guards the committed state below
	accounts map[Address]Account
	digest   digest
	height   int64
	genesis  Genesis

	// Written by FinalizeBlock, made durable and visible by Commit.
	block       map[Address]Account
	blockDigest digest
	blockHeight int64

	checkMu sync.Mutex
	check   map[Address]Account // the mempool's view: committed state plus admitted payments

	sigs *sigCache
	seen *seenLog
}

// Open loads (or creates) the ledger kept in dir for chainID.
func Open(dir, chainID string) (*App, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{})
	if err != nil {
		return nil, fmt.Errorf("open ledger db %s: %w", dir, err)
	}
	a := &App{
		chainID:  chainID,
		db:       db,
		accounts: make(map[Address]Account),
		check:    make(map[Address]Account),
		sigs:     newSigCache(1 << 18),
		seen:     newSeenLog(),
	}
	if err := a.load(); err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

// Close releases the database.
func (a *App) Close() error { return a.db.Close() }

func (a *App) load() error {
	hb, err := a.db.Get(keyHeight, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil // fresh: InitChain will fill the state
	}
	if err != nil {
		return err
	}
	a.height = int64(binary.BigEndian.Uint64(hb))
	db, err := a.db.Get(keyDigest, nil)
	if err != nil {
		return fmt.Errorf("ledger db: digest: %w", err)
	}
	a.digest = digestFromBytes(db)
	gb, err := a.db.Get(keyGenesis, nil)
	if err != nil {
		return fmt.Errorf("ledger db: genesis: %w", err)
	}
	if a.genesis, err = ParseGenesis(gb); err != nil {
		return err
	}
	it := a.db.NewIterator(nil, nil)
	defer it.Release()
	for ok := it.Seek(prefixAcct); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(prefixAcct)+AddressSize || string(k[:len(prefixAcct)]) != string(prefixAcct) {
			break
		}
		var addr Address
		copy(addr[:], k[len(prefixAcct):])
		v := it.Value()
		a.accounts[addr] = Account{Balance: binary.BigEndian.Uint64(v), Sequence: binary.BigEndian.Uint64(v[8:])}
	}
	return it.Error()
}

func (a *App) Info(context.Context, *abci.RequestInfo) (*abci.ResponseInfo, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	res := &abci.ResponseInfo{Version: Version, AppVersion: 1, LastBlockHeight: a.height}
	if a.height > 0 {
		res.LastBlockAppHash = appHash(a.digest)
	}
	return res, nil
}

func (a *App) InitChain(_ context.Context, req *abci.RequestInitChain) (*abci.ResponseInitChain, error) {
	g, err := ParseGenesis(req.AppStateBytes)
	if err != nil {
		return nil, err
	}
	keys := DeriveKeys(g.Seed, int(g.Accounts))
	accounts := make(map[Address]Account, len(keys)+int(g.State))
	var d digest
	batch := new(leveldb.Batch)
	acc := Account{Balance: g.Balance}
	put := func(addr Address) error {
		accounts[addr] = acc
		d.add(accountHash(addr, acc))
		batch.Put(acctKey(addr), encodeAccount(acc))
		if batch.Len() < 1<<16 {
			return nil
		}
		// Pre-loaded state streams to disk a batch at a time: 10M accounts
		// never sit in one batch.
		err := a.db.Write(batch, nil)
		batch.Reset()
		return err
	}
	for _, k := range keys {
		if err := put(AddressOf(k[32:])); err != nil {
			return nil, err
		}
	}
	for i := uint64(0); i < g.State; i++ {
		if err := put(StateAddress(g.Seed, i)); err != nil {
			return nil, err
		}
	}
	gb, _ := json.Marshal(g)
	batch.Put(keyGenesis, gb)
	batch.Put(keyDigest, d.bytes())
	// The height key is written by the first Commit: until then a restart
	// sees a fresh ledger and CometBFT calls InitChain again.
	if err := a.db.Write(batch, &opt.WriteOptions{Sync: true}); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.accounts, a.digest, a.genesis = accounts, d, g
	a.mu.Unlock()
	return &abci.ResponseInitChain{AppHash: appHash(d)}, nil
}

func acctKey(a Address) []byte { return append(append(make([]byte, 0, 22), prefixAcct...), a[:]...) }

func encodeAccount(acc Account) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, acc.Balance)
	binary.BigEndian.PutUint64(b[8:], acc.Sequence)
	return b
}

// view reads accounts through an overlay of pending changes.
type view struct {
	overlay map[Address]Account
	base    map[Address]Account
}

func (v view) get(addr Address) Account {
	if acc, ok := v.overlay[addr]; ok {
		return acc
	}
	return v.base[addr]
}

// execute applies one payment whose signature is already known to be good.
// It changes nothing unless it returns CodeOK. A batch pays each of its
// outputs in order, all or nothing.
func (a *App) execute(v view, p *Payment) (uint32, string) {
	from := AddressOf(p.Sender)
	s := v.get(from)
	switch {
	case p.Sequence < s.Sequence:
		return CodeSequenceTooLow, fmt.Sprintf("sequence too low: got %d, expected %d", p.Sequence, s.Sequence)
	case p.Sequence > s.Sequence:
		return CodeSequenceTooHigh, fmt.Sprintf("sequence too high: got %d, expected %d", p.Sequence, s.Sequence)
	}
	var total uint64
	for i := range p.Outputs() {
		_, amt := p.Output(i)
		if amt == 0 {
			return CodeInvalidAmount, "invalid amount: must be at least 1"
		}
		if total > math.MaxUint64-amt {
			return CodeBalanceOverflow, "balance overflow: the batch's amounts add up past 2^64"
		}
		total += amt
	}
	switch {
	case s.Balance < total:
		return CodeInsufficientFunds, fmt.Sprintf("insufficient funds: balance %d < amount %d", s.Balance, total)
	}
	if !p.Batch() && from == p.Recipient { // the common case: no overlay copy
		s.Sequence++
		v.overlay[from] = s
		return CodeOK, ""
	}
	if !p.Batch() {
		r := v.get(p.Recipient)
		if r.Balance > math.MaxUint64-p.Amount {
			return CodeBalanceOverflow, fmt.Sprintf("balance overflow: recipient %d + amount %d", r.Balance, p.Amount)
		}
		s.Balance -= p.Amount
		s.Sequence++
		r.Balance += p.Amount
		v.overlay[from] = s
		v.overlay[p.Recipient] = r
		return CodeOK, ""
	}
	// A batch: credit into a scratch overlay first so a failing output
	// leaves nothing behind (balances fit in a uint64 by genesis, so this
	// cannot fail today; the check stays honest if that changes).
	s.Balance -= total
	s.Sequence++
	changed := map[Address]Account{from: s}
	get := func(a Address) Account {
		if acc, ok := changed[a]; ok {
			return acc
		}
		return v.get(a)
	}
	for i := range p.Outputs() {
		to, amt := p.Output(i)
		r := get(to)
		if r.Balance > math.MaxUint64-amt {
			return CodeBalanceOverflow, fmt.Sprintf("balance overflow: recipient %d + amount %d", r.Balance, amt)
		}
		r.Balance += amt
		changed[to] = r
	}
	for addr, acc := range changed {
		v.overlay[addr] = acc
	}
	return CodeOK, ""
}

// precheck decodes a payment and checks what needs no state.
func (a *App) precheck(tx []byte, p *Payment) (uint32, string) {
	var err error
	if len(tx) > MaxTxBytes {
		return CodeTooLarge, fmt.Sprintf("tx too large: %d bytes, expected at most %d", len(tx), MaxTxBytes)
	}
	if *p, err = Decode(tx); err != nil {
		return CodeMalformed, "malformed: " + err.Error()
	}
	if string(p.ChainID) != a.chainID {
		return CodeWrongChain, fmt.Sprintf("wrong chain: got %q, expected %q", p.ChainID, a.chainID)
	}
	return CodeOK, ""
}

func badSignature() (uint32, string) { return CodeBadSignature, "bad signature" }

func (a *App) CheckTx(_ context.Context, req *abci.RequestCheckTx) (*abci.ResponseCheckTx, error) {
	var p Payment
	code, log := a.precheck(req.Tx, &p)
	if code == CodeOK {
		h := sha256.Sum256(req.Tx)
		if SeenSample(h) && req.Type == abci.CheckTxType_New {
			a.seen.add(h)
		}
		if !a.sigs.has(h) {
			if !p.VerifySignature() {
				code, log = badSignature()
			} else {
				a.sigs.add(h)
			}
		}
	}
	if code == CodeOK {
		a.checkMu.Lock()
		a.mu.RLock()
		code, log = a.execute(view{overlay: a.check, base: a.accounts}, &p)
		a.mu.RUnlock()
		a.checkMu.Unlock()
	}
	res := &abci.ResponseCheckTx{Code: code, Log: log, GasWanted: 1}
	if code != CodeOK {
		res.Codespace = Codespace
	}
	return res, nil
}

func (a *App) FinalizeBlock(_ context.Context, req *abci.RequestFinalizeBlock) (*abci.ResponseFinalizeBlock, error) {
	n := len(req.Txs)
	payments := make([]Payment, n)
	codes := make([]uint32, n)
	logs := make([]string, n)
	for i, tx := range req.Txs {
		codes[i], logs[i] = a.precheck(tx, &payments[i])
	}
	a.verifyAll(req.Txs, payments, codes, logs)

	a.block = make(map[Address]Account, 2*n)
	v := view{overlay: a.block, base: a.accounts} // only Commit writes accounts, on this same connection
	results := make([]*abci.ExecTxResult, n)
	for i := range req.Txs {
		if codes[i] == CodeOK {
			codes[i], logs[i] = a.execute(v, &payments[i])
		}
		r := &abci.ExecTxResult{Code: codes[i], Log: logs[i], GasWanted: 1}
		if codes[i] == CodeOK {
			r.GasUsed = 1
		} else {
			r.Codespace = Codespace
		}
		results[i] = r
	}
	d := a.digest
	for addr, acc := range a.block {
		if old, ok := a.accounts[addr]; ok {
			d.sub(accountHash(addr, old))
		}
		d.add(accountHash(addr, acc))
	}
	a.blockDigest, a.blockHeight = d, req.Height
	return &abci.ResponseFinalizeBlock{TxResults: results, AppHash: appHash(d)}, nil
}

// verifyAll checks on all cores the signatures that CheckTx has not already
// verified; a cache hit means these exact bytes carried a valid signature.
func (a *App) verifyAll(txs [][]byte, ps []Payment, codes []uint32, logs []string) {
	var todo []int
	for i, tx := range txs {
		if codes[i] == CodeOK && !a.sigs.has(sha256.Sum256(tx)) {
			todo = append(todo, i)
		}
	}
	fanout.Each(len(todo), func(_, j int) {
		if i := todo[j]; !ps[i].VerifySignature() {
			codes[i], logs[i] = badSignature()
		}
	})
}

func (a *App) Commit(context.Context, *abci.RequestCommit) (*abci.ResponseCommit, error) {
	batch := new(leveldb.Batch)
	for addr, acc := range a.block {
		batch.Put(acctKey(addr), encodeAccount(acc))
	}
	var hb [8]byte
	binary.BigEndian.PutUint64(hb[:], uint64(a.blockHeight))
	batch.Put(keyHeight, hb[:])
	batch.Put(keyDigest, a.blockDigest.bytes())
	if err := a.db.Write(batch, &opt.WriteOptions{Sync: true}); err != nil {
		return nil, fmt.Errorf("commit height %d: %w", a.blockHeight, err)
	}
	a.mu.Lock()
	for addr, acc := range a.block {
		a.accounts[addr] = acc
	}
	a.digest, a.height = a.blockDigest, a.blockHeight
	a.mu.Unlock()
	a.block = nil
	// CometBFT rechecks the mempool after Commit, rebuilding this view.
	a.checkMu.Lock()
	a.check = make(map[Address]Account)
	a.checkMu.Unlock()
	return &abci.ResponseCommit{}, nil
}

// AccountInfo answers the /account query.
type AccountInfo struct {
	Address      string `json:"address"`
	Height       int64  `json:"height"`
	Balance      uint64 `json:"balance"`
	Sequence     uint64 `json:"sequence"`      // committed
	NextSequence uint64 `json:"next_sequence"` // the one the mempool admits next
}

// Query paths: /account (data: the 20-byte address), /audit, /genesis,
// /seen (data: sha256 hashes; docs/ledger.md).
func (a *App) Query(_ context.Context, req *abci.RequestQuery) (*abci.ResponseQuery, error) {
	var v any
	switch req.Path {
	case "/account":
		if len(req.Data) != AddressSize {
			return &abci.ResponseQuery{Code: CodeMalformed, Codespace: Codespace, Log: fmt.Sprintf("account query: data is %d bytes, expected a %d-byte address", len(req.Data), AddressSize)}, nil
		}
		var addr Address
		copy(addr[:], req.Data)
		a.checkMu.Lock()
		a.mu.RLock()
		acc := a.accounts[addr]
		next := view{overlay: a.check, base: a.accounts}.get(addr).Sequence
		h := a.height
		a.mu.RUnlock()
		a.checkMu.Unlock()
		v = AccountInfo{Address: addr.String(), Height: h, Balance: acc.Balance, Sequence: acc.Sequence, NextSequence: next}
	case "/audit":
		v = a.audit()
	case "/genesis":
		a.mu.RLock()
		v = a.genesis
		a.mu.RUnlock()
	case "/seen":
		if len(req.Data)%32 != 0 {
			return &abci.ResponseQuery{Code: CodeMalformed, Codespace: Codespace, Log: fmt.Sprintf("seen query: data is %d bytes, expected sha256 hashes of 32 bytes each", len(req.Data))}, nil
		}
		return &abci.ResponseQuery{Value: a.seen.query(req.Data)}, nil
	default:
		return &abci.ResponseQuery{Code: CodeMalformed, Codespace: Codespace, Log: fmt.Sprintf("unknown query path %q, expected /account, /audit, /genesis or /seen", req.Path)}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	a.mu.RLock()
	h := a.height
	a.mu.RUnlock()
	return &abci.ResponseQuery{Value: b, Height: h}, nil
}

// audit recounts the committed state from scratch.
func (a *App) audit() Audit {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var sum u128
	var d digest
	au := Audit{Height: a.height, AppHash: fmt.Sprintf("%X", appHash(a.digest)), Accounts: uint64(len(a.accounts)), GenesisSupply: a.genesis.Supply()}
	for addr, acc := range a.accounts {
		sum.add(acc.Balance)
		d.add(accountHash(addr, acc))
		if acc.Balance > au.MaxBalance {
			au.MaxBalance = acc.Balance
		}
	}
	au.Supply = sum.String()
	au.DigestOK = d == a.digest
	if !au.DigestOK {
		au.Problems = append(au.Problems, "state digest recomputed from the accounts differs from the running digest")
	}
	if sum.hi != 0 || sum.lo != au.GenesisSupply {
		au.Problems = append(au.Problems, fmt.Sprintf("supply is %s, genesis supply was %d", au.Supply, au.GenesisSupply))
	}
	if au.MaxBalance > au.GenesisSupply {
		au.Problems = append(au.Problems, fmt.Sprintf("a balance of %d exceeds the supply %d (overflow)", au.MaxBalance, au.GenesisSupply))
	}
	return au
}
