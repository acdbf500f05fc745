package cometbft_test

import (
	"context"
	"fmt"
	"github.com/tpslab/tpslab/internal/testnet/chainnet"
	"net"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/chain"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/targets/ledgerclient"
	"github.com/tpslab/tpslab/internal/targets/suttest"
	"github.com/tpslab/tpslab/internal/testbin"
	"github.com/tpslab/tpslab/internal/testnet"
)

func rawTx(i int) sut.Tx {
	b := []byte(fmt.Sprintf("contract-%d=%d", i, i))
	return sut.Tx{ID: cometbft.TxID(b), Bytes: b}
}

func TestContractAgainstTheSink(t *testing.T) {
	srv := httptest.NewServer(sink.NewSink("sink-chain", testnet.DefaultGenesis()))
	defer srv.Close()
	tgt, err := cometbft.New(cometbft.Options{Endpoints: []string{srv.URL}, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	suttest.Run(t, suttest.Case{Target: tgt, Valid: rawTx})
}

// The same contract against the sink's own lean server (tpslab sink).
func TestContractAgainstTheLeanSink(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go sink.NewSink("sink-chain", testnet.DefaultGenesis()).Serve(l)
	tgt, err := cometbft.New(cometbft.Options{Endpoints: []string{"http://" + l.Addr().String()}, Connections: 4})
	if err != nil {
		t.Fatal(err)
	}
	suttest.Run(t, suttest.Case{Target: tgt, Valid: rawTx})
}

// The reference ledger on a real validator: payments commit, a payment with
// a bad signature is refused by name.
func TestContractAgainstTheLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator")
	}
	g := chain.Genesis{Seed: "contract", Accounts: 100, Balance: 1_000_000}
	n, err := chainnet.Up(context.Background(), chainnet.Options{Validators: 1, Home: filepath.Join(t.TempDir(), "net"), ChainID: "contract",
		Genesis: g, Settings: testnet.DefaultSettings(), Binary: testbin.Path(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Down()
	tgt, err := cometbft.New(cometbft.Options{Endpoints: n.RPCEndpoints(), Connections: 4, Reason: chain.Reason})
	if err != nil {
		t.Fatal(err)
	}
	client := ledgerclient.NewClient("contract", g, 0, tgt.ABCIQuery)
	valid := func(i int) sut.Tx {
		b := client.Sign(nil, i, (i+1)%100, 1, 0)
		return sut.Tx{ID: client.ID(b), Bytes: b}
	}
	bad := client.Sign(nil, 50, 51, 1, 0)
	bad[len(bad)-1] ^= 0xff
	invalid := sut.Tx{ID: client.ID(bad), Bytes: bad}
	suttest.Run(t, suttest.Case{Target: tgt, Valid: valid, Invalid: &invalid, Commits: true})
}
