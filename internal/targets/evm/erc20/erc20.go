// Package erc20 holds the ERC20 token tpslab deploys on EVM chains: its
// source (Token.sol), and the bytecode and ABI solc 0.8.28 made of it
// (build.sh rebuilds them).
package erc20

import (
	_ "embed"
	"encoding/hex"
	"strings"
)

//go:embed Token.bin
var bin string

// Bytecode is the token's creation code.
func Bytecode() []byte {
	b, err := hex.DecodeString(strings.TrimSpace(bin))
	if err != nil {
		panic(err) // Token.bin is committed hex
	}
	return b
}
