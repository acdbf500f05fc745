package sdknet

import (
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tpslab/tpslab/internal/sut"
	"github.com/tpslab/tpslab/internal/targets/cometbft"
	"github.com/tpslab/tpslab/internal/testnet"
)

// logLevel is the nodes' log level: with the mempool log on, CometBFT's
// mempool at debug, which writes a line with every transaction a peer
// gossips to the node, and the rest at level: the gossiped stage is read
// from those lines. A level that names modules already is the user's, and
// kept as given.
func logLevel(s testnet.Settings) string {
	if !s.MempoolLog || strings.Contains(s.LogLevel, ":") {
		return s.LogLevel
	}
	return "mempool:debug,*:" + s.LogLevel
}

// MempoolLogs are the nodes' logs for the gossiped stage, when tpslab
// started them on this machine with the mempool's lines on
// (network.gossip_stage); nil otherwise.
// One transaction in 16 (by hash) is timed, as on the built-in network.
func MempoolLogs(n *testnet.Net) *cometbft.MempoolLogs {
	if n.Kubernetes != nil || !strings.Contains(logLevel(n.Settings), "mempool:debug") {
		return nil
	}
	m := &cometbft.MempoolLogs{Sample: func(id sut.TxID) bool { return id[0] < 16 }}
	for _, nd := range n.Nodes {
		if nd.Log != "" {
			m.Paths = append(m.Paths, nd.Log)
		}
	}
	return m
}

// EthTxIDs name a Cosmos EVM node's gossiped transaction as the load did:
// by the Ethereum transaction its MsgEthereumTx carries. Each bytes field
// of the message that reads as a signed Ethereum transaction (a typed
// envelope, 0x01..0x04, or an RLP list) gives its Keccak-256; field
// numbers differ between Cosmos EVM versions, so none is assumed.
func EthTxIDs(tx []byte) []sut.TxID {
	var out []sut.TxID
	body := field(tx, 1)                     // TxRaw.body_bytes
	eachField(body, 1, func(anyMsg []byte) { // TxBody.messages
		if !strings.Contains(string(field(anyMsg, 1)), "MsgEthereumTx") {
			return
		}
		eachBytes(field(anyMsg, 2), func(_ protowire.Number, v []byte) {
			if len(v) > 60 && (v[0] >= 1 && v[0] <= 4 || v[0] >= 0xc0) {
				out = append(out, sut.TxID(crypto.Keccak256Hash(v)))
			}
		})
	})
	return out
}

// field is the first length-delimited field num of a protobuf message.
func field(msg []byte, num protowire.Number) []byte {
	var got []byte
	eachField(msg, num, func(v []byte) {
		if got == nil {
			got = v
		}
	})
	return got
}

// eachField calls f with every length-delimited field num of msg.
func eachField(msg []byte, num protowire.Number, f func([]byte)) {
	eachBytes(msg, func(n protowire.Number, v []byte) {
		if n == num {
			f(v)
		}
	})
}

// eachBytes calls f with every length-delimited field of msg and its
// number, skipping the others.
func eachBytes(msg []byte, f func(protowire.Number, []byte)) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return
		}
		msg = msg[l:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(msg)
			if m < 0 {
				return
			}
			f(n, v)
			msg = msg[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(n, typ, msg)
		if m < 0 {
			return
		}
		msg = msg[m:]
	}
}
