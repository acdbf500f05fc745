package evm

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/evm/erc20"
)

// ReadKey reads a funder's private key: from a file holding it in hex, or,
// written "env:NAME", from the environment variable NAME. Errors name the
// file or variable, never the key.
func ReadKey(spec string) (Wallet, error) {
	var text, where string
	if name, ok := strings.CutPrefix(spec, "env:"); ok {
		text, where = os.Getenv(name), "environment variable "+name
		if text == "" {
			return Wallet{}, fmt.Errorf("%s is empty", where)
		}
	} else {
		b, err := os.ReadFile(spec)
		if err != nil {
			return Wallet{}, err
		}
		text, where = string(b), spec
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(text), "0x"))
	if err != nil || len(raw) != 32 {
		return Wallet{}, fmt.Errorf("%s: expected a 64-digit hex private key", where)
	}
	k, err := crypto.ToECDSA(raw)
	if err != nil {
		return Wallet{}, fmt.Errorf("%s: not a valid secp256k1 key", where)
	}
	return Wallet{Key: k, Address: crypto.PubkeyToAddress(k.PublicKey)}, nil
}

// funding sends calls from one funder, nonce by nonce, and waits until all
// are mined.
type funding struct {
	c      *Codec
	sub    sut.Submitter
	funder Wallet
	nonce  uint64
	start  uint64     // the funder's nonce when funding began
	calls  []fundCall // calls[k] is sent with nonce start+k
	last   []byte     // the last transaction's hash
}

type fundCall struct {
	to    *common.Address
	value *big.Int
	data  []byte
	gas   uint64
}

func (f *funding) send(ctx context.Context, to *common.Address, value *big.Int, data []byte, gas uint64) error {
	f.calls = append(f.calls, fundCall{to, value, data, gas})
	return f.resend(ctx, f.nonce)
}

// sendNext signs and sends the call of f.nonce. again is true when the
// node turned out to expect an earlier nonce: f.nonce is set back to it.
func (f *funding) sendNext(ctx context.Context) (again bool, err error) {
	cl := f.calls[f.nonce-f.start]
	raw, err := f.c.SignCall(f.funder.Key, f.nonce, cl.to, cl.value, cl.data, cl.gas)
	if err != nil {
		return false, err
	}
	tx := sut.Tx{ID: f.c.ID(raw), Bytes: raw}
	r := f.sub.Submit(ctx, tx)
	// A node that has not yet seen the funder's earlier calls (4 Cosmos
	// EVM validators: "tx nonce: 613, account accountNonce: 478") refuses
	// this one as too high: it is sent again once they reach it, as the
	// load path does (issue 52). When the node still expects an earlier
	// nonce after fundingResync, calls it took were dropped (evmd on a busy
	// machine: "tx nonce: 208, account accountNonce: 108" for a minute):
	// they are signed and sent again from there.
	for waited := time.Duration(0); r.Status == sut.Rejected && r.Reason == "nonce_too_high" && waited < fundingNonceWait && ctx.Err() == nil; waited += fundingRetry {
		if waited >= fundingResync {
			if n, err := f.c.rpc.Nonce(ctx, f.funder.Address.Hex()); err == nil && n < f.nonce && n >= f.start {
				f.nonce = n
				return true, nil
			}
		}
		time.Sleep(fundingRetry)
		r = f.sub.Submit(ctx, tx)
	}
	if r.Status == sut.Rejected && r.Reason == "already_known" {
		r.Status = sut.Pending // an earlier try of these very bytes got in
	}
	if r.Status != sut.Pending {
		return false, fmt.Errorf("%s: %s", r.Reason, r.Detail)
	}
	f.last = crypto.Keccak256(raw)
	return false, nil
}

// fundingNonceWait bounds how long a funding call refused as nonce too
// high is sent again, every fundingRetry; after fundingResync the node's
// nonce is read, for calls it dropped.
const (
	fundingNonceWait = time.Minute
	fundingRetry     = 250 * time.Millisecond
)

var fundingResync = 10 * time.Second // a variable: the test waits less

// wait waits until the funder's last transaction is mined, and checks it
// succeeded (a reverted deploy or transfer is an error).
//
// A node may drop calls it had taken (evmd on a busy machine, twice in CI:
// the last call, accepted, never mined behind a gap): when the funder's
// mined nonce has not moved for fundingResync, the calls from it on are
// signed and sent again.
func (f *funding) wait(ctx context.Context) (*Receipt, error) {
	deadline := time.Now().Add(3 * time.Minute)
	var mined uint64
	moved := time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		hash := "0x" + hex.EncodeToString(f.last)
		r, err := f.c.rpc.Receipt(ctx, hash)
		if err == nil && r != nil {
			if r.Status != 1 {
				return r, fmt.Errorf("transaction %s reverted", hash)
			}
			return r, nil
		}
		if n, err := f.c.rpc.Mined(ctx, f.funder.Address.Hex()); err == nil && n != mined {
			mined, moved = n, time.Now()
		} else if end := f.start + uint64(len(f.calls)); err == nil && time.Since(moved) > fundingResync && n >= f.start && n < end {
			if err := f.resend(ctx, n); err != nil {
				return nil, err
			}
			moved = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("transaction %s not mined within 3 minutes", "0x"+hex.EncodeToString(f.last))
}

// resend signs and sends the calls from nonce from on (again, when the
// node dropped them).
func (f *funding) resend(ctx context.Context, from uint64) error {
	f.nonce = from
	for f.nonce < f.start+uint64(len(f.calls)) {
		again, err := f.sendNext(ctx)
		if err != nil {
			return err
		}
		if !again {
			f.nonce++
		}
	}
	return nil
}

func newFunding(ctx context.Context, c *Codec, sub sut.Submitter, funder Wallet) (*funding, error) {
	n, err := c.rpc.Nonce(ctx, funder.Address.Hex())
	if err != nil {
		return nil, err
	}
	return &funding{c: c, sub: sub, funder: funder, nonce: n, start: n}, nil
}

// Deploy deploys the ERC20 token from funder with supply (all to the
// funder), and returns its address.
func Deploy(ctx context.Context, c *Codec, sub sut.Submitter, funder Wallet, supply *big.Int) (common.Address, error) {
	f, err := newFunding(ctx, c, sub, funder)
	if err != nil {
		return common.Address{}, err
	}
	args := abi.Arguments{{Type: mustType("string")}, {Type: mustType("string")}, {Type: mustType("uint256")}}
	enc, err := args.Pack("tpslab token", "TPS", supply)
	if err != nil {
		return common.Address{}, err
	}
	addr := crypto.CreateAddress(funder.Address, f.nonce)
	if err := f.send(ctx, nil, new(big.Int), append(erc20.Bytecode(), enc...), 2_000_000); err != nil {
		return common.Address{}, fmt.Errorf("deploy the ERC20 token: %w", err)
	}
	if _, err := f.wait(ctx); err != nil {
		return common.Address{}, fmt.Errorf("deploy the ERC20 token: %w", err)
	}
	return addr, nil
}

func mustType(t string) abi.Type {
	ty, err := abi.NewType(t, "", nil)
	if err != nil {
		panic(err)
	}
	return ty
}

// Fund gives each wallet in to value wei (for gas and native transfers)
// and, when token is set, tokens of it, from funder; it waits until all is
// mined. The funder's key signs only; it is never printed.
func Fund(ctx context.Context, c *Codec, sub sut.Submitter, funder Wallet, to []int, value *big.Int, token *common.Address, tokens *big.Int) error {
	if len(to) == 0 {
		return nil
	}
	have, err := c.rpc.Balance(ctx, funder.Address.Hex())
	if err != nil {
		return fmt.Errorf("workload.funder_key: read the funder's balance: %w", err)
	}
	need := new(big.Int).Mul(value, big.NewInt(int64(len(to))))
	if have.Cmp(need) < 0 {
		return fmt.Errorf("workload.funder_key: the funder %s holds %s wei, and funding %d wallets with %s wei each needs %s", funder.Address.Hex(), have, len(to), value, need)
	}
	f, err := newFunding(ctx, c, sub, funder)
	if err != nil {
		return err
	}
	for _, w := range to {
		dest := c.wallets[w].Address
		if err := f.send(ctx, &dest, value, nil, 21_000); err != nil {
			return fmt.Errorf("funding wallet %d: %w", w, err)
		}
		if token != nil {
			if err := f.send(ctx, token, new(big.Int), TransferData(dest, tokens), 100_000); err != nil {
				return fmt.Errorf("funding wallet %d with tokens: %w", w, err)
			}
		}
	}
	_, err = f.wait(ctx)
	return err
}
