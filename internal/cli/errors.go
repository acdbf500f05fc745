package cli

import "github.com/tpslab/tpslab/internal/chain"

func chainGenesis(seed string, accounts, balance uint64) chain.Genesis {
	return chain.Genesis{Seed: seed, Accounts: accounts, Balance: balance}
}
