package chainnet

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	cfg "github.com/cometbft/cometbft/config"
	cmtflags "github.com/cometbft/cometbft/libs/cli/flags"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/proxy"
	"github.com/cometbft/cometbft/types"
	"github.com/spf13/viper"

	"github.com/tpslab/tpslab/internal/chain"
)

// LoadConfig reads home/config/config.toml over CometBFT's defaults.
func LoadConfig(home string) (*cfg.Config, error) {
	conf := cfg.DefaultConfig()
	v := viper.New()
	v.SetConfigFile(filepath.Join(home, "config", "config.toml"))
	if err := v.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("node home %s: %w", home, err)
	}
	if err := v.Unmarshal(conf); err != nil {
		return nil, fmt.Errorf("node home %s: config.toml: %w", home, err)
	}
	conf.SetRoot(home)
	if err := conf.ValidateBasic(); err != nil {
		return nil, fmt.Errorf("node home %s: config.toml: %w", home, err)
	}
	return conf, nil
}

// RunNode runs one validator of the reference ledger in this process until
// ctx ends or SIGINT/SIGTERM arrives, then stops it cleanly.
func RunNode(ctx context.Context, home string) error { return RunNodeWith(ctx, home, "", nil) }

// RunNodeWith is RunNode for a node handed its files: when home has no
// config yet, from (a folder of flat files: a Kubernetes secret) gives it
// config.toml, genesis.json, node_key.json, priv_validator_key.json and
// priv_validator_state.json; peers, when set, replaces its persistent
// peers (a pod learns its peers' addresses only when it starts).
func RunNodeWith(ctx context.Context, home, from string, peers *string) error {
	if from != "" {
		if err := seedHome(home, from); err != nil {
			return err
		}
	}
	conf, err := LoadConfig(home)
	if err != nil {
		return err
	}
	if peers != nil {
		conf.P2P.PersistentPeers = *peers
	}
	genDoc, err := types.GenesisDocFromFile(conf.GenesisFile())
	if err != nil {
		return fmt.Errorf("node home %s: %w", home, err)
	}
	app, err := chain.Open(filepath.Join(conf.DBDir(), "ledger"), genDoc.ChainID)
	if err != nil {
		return err
	}
	defer app.Close()
	pv := privval.LoadFilePV(conf.PrivValidatorKeyFile(), conf.PrivValidatorStateFile())
	nodeKey, err := p2p.LoadNodeKey(conf.NodeKeyFile())
	if err != nil {
		return fmt.Errorf("node home %s: %w", home, err)
	}
	logger := cmtlog.NewTMLogger(cmtlog.NewSyncWriter(os.Stdout))
	if logger, err = cmtflags.ParseLogLevel(conf.LogLevel, logger, cfg.DefaultLogLevel); err != nil {
		return fmt.Errorf("node home %s: log_level: %w", home, err)
	}
	n, err := node.NewNode(conf, pv, nodeKey,
		proxy.NewConnSyncLocalClientCreator(app),
		func() (*types.GenesisDoc, error) { return genDoc, nil },
		cfg.DefaultDBProvider,
		node.DefaultMetricsProvider(conf.Instrumentation),
		logger)
	if err != nil {
		return fmt.Errorf("node home %s: %w", home, err)
	}
	if err := n.Start(); err != nil {
		return fmt.Errorf("node home %s: start: %w", home, err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-ctx.Done():
	case <-sig:
	case <-n.Quit():
	}
	if n.IsRunning() {
		if err := n.Stop(); err != nil {
			return err
		}
	}
	n.Wait()
	return nil
}

// seedHome copies a node's files from a flat folder into home, once.
func seedHome(home, from string) error {
	if _, err := os.Stat(filepath.Join(home, "config", "config.toml")); err == nil {
		return nil // started before: its own state wins
	}
	for _, f := range []struct{ name, dir string }{{"config.toml", "config"}, {"genesis.json", "config"}, {"node_key.json", "config"},
		{"priv_validator_key.json", "config"}, {"priv_validator_state.json", "data"}} {
		b, err := os.ReadFile(filepath.Join(from, f.name))
		if err != nil {
			return fmt.Errorf("node --from: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(home, f.dir), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(home, f.dir, f.name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
