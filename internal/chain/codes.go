package chain

// Result codes of CheckTx and FinalizeBlock. They are a public interface: the
// load generator classifies rejections by them (docs/ledger.md, "Result codes").
const (
	CodeOK                uint32 = 0
	CodeMalformed         uint32 = 1
	CodeWrongChain        uint32 = 2
	CodeBadSignature      uint32 = 3
	CodeSequenceTooLow    uint32 = 4
	CodeSequenceTooHigh   uint32 = 5
	CodeInsufficientFunds uint32 = 6
	CodeInvalidAmount     uint32 = 7
	CodeBalanceOverflow   uint32 = 8
	CodeTooLarge          uint32 = 9
)

// MaxTxBytes is the largest payment the ledger takes: a chain refuses
// oversized transactions, and tpslab's invalid share (sort oversized)
// checks that it does.
const MaxTxBytes = 16 << 10

// Codespace is set on every non-zero result so clients can tell our codes from
// other applications'.
const Codespace = "tpslab"

var codeNames = map[uint32]string{
	CodeOK:                "ok",
	CodeMalformed:         "malformed",
	CodeWrongChain:        "wrong_chain",
	CodeBadSignature:      "bad_signature",
	CodeSequenceTooLow:    "sequence_too_low",
	CodeSequenceTooHigh:   "sequence_too_high",
	CodeInsufficientFunds: "insufficient_funds",
	CodeInvalidAmount:     "invalid_amount",
	CodeBalanceOverflow:   "balance_overflow",
	CodeTooLarge:          "tx_too_large",
}

// CodeName is the stable, snake_case name of a result code.
func CodeName(code uint32) string {
	if n, ok := codeNames[code]; ok {
		return n
	}
	return "unknown"
}
