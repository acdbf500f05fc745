package cosmos

import "testing"

// Test wallets never change between versions: wallets funded by one tpslab
// are spent by the next.
func TestDeriveWalletVector(t *testing.T) {
	if a := DeriveWallet("tpslab", 7, "cosmos").Address; a != "cosmos1ra0u2yet44gru6v9jvkp5hwnlqqz52mskq3kwz" {
		t.Errorf("wallet 7 of seed tpslab: %s", a)
	}
	if w := DeriveWallets("tpslab", 9, "cosmos"); w[7].Address != "cosmos1ra0u2yet44gru6v9jvkp5hwnlqqz52mskq3kwz" {
		t.Error("DeriveWallets differs from DeriveWallet")
	}
}
