package evm

import "testing"

// Test wallets never change between versions: wallets funded by one tpslab
// are spent by the next.
func TestDeriveWalletVector(t *testing.T) {
	if a := DeriveWallet("tpslab", 7).Address.Hex(); a != "0x2d3cadCDdE7Cdf118e9ABb31475841F255881d57" {
		t.Errorf("wallet 7 of seed tpslab: %s", a)
	}
	if w := DeriveWallets("tpslab", 9); w[7].Address.Hex() != "0x2d3cadCDdE7Cdf118e9ABb31475841F255881d57" {
		t.Error("DeriveWallets differs from DeriveWallet")
	}
}
