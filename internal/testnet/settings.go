package testnet

import (
	"fmt"
	"time"
)

// Settings are the consensus and mempool knobs a performance engineer tunes.
// Defaults aim at throughput on a laptop-sized machine.
type Settings struct {
	TimeoutCommit     time.Duration `json:"timeout_commit"`
	TimeoutPropose    time.Duration `json:"timeout_propose"`
	MempoolSize       int           `json:"mempool_size"`
	MempoolMaxBytes   int64         `json:"mempool_max_bytes"`
	MempoolCacheSize  int           `json:"mempool_cache_size"`
	MaxBlockBytes     int64         `json:"max_block_bytes"`
	MaxBlockGas       int64         `json:"max_block_gas"` // each payment wants 1 gas, so this caps payments per block; -1 = no cap
	CreateEmptyBlocks bool          `json:"create_empty_blocks"`
	LogLevel          string        `json:"log_level"`
	// MempoolLog: the nodes log every transaction gossiped to them (SDK
	// daemons), for the gossiped stage.
	MempoolLog bool `json:"mempool_log,omitempty"`
}

// DefaultSettings are the values `tpslab net up` uses unless told otherwise.
func DefaultSettings() Settings {
	return Settings{
		TimeoutCommit:     500 * time.Millisecond,
		TimeoutPropose:    3 * time.Second,
		MempoolSize:       50000,
		MempoolMaxBytes:   1 << 30,
		MempoolCacheSize:  200000,
		MaxBlockBytes:     8 << 20,
		MaxBlockGas:       -1,
		CreateEmptyBlocks: true,
		LogLevel:          "info",
	}
}

// Validate names the first setting that cannot work.
func (s Settings) Validate() error {
	switch {
	case s.TimeoutCommit < 0:
		return fmt.Errorf("timeout-commit: %s is negative, expected a duration >= 0", s.TimeoutCommit)
	case s.TimeoutPropose <= 0:
		return fmt.Errorf("timeout-propose: %s, expected a duration > 0", s.TimeoutPropose)
	case s.MempoolSize < 1:
		return fmt.Errorf("mempool-size: %d, expected at least 1", s.MempoolSize)
	case s.MempoolMaxBytes < 1:
		return fmt.Errorf("mempool-max-bytes: %d, expected at least 1", s.MempoolMaxBytes)
	case s.MaxBlockBytes < 1024 || s.MaxBlockBytes > 100<<20:
		return fmt.Errorf("max-block-bytes: %d, expected 1024..104857600", s.MaxBlockBytes)
	case s.MaxBlockGas == 0 || s.MaxBlockGas < -1:
		return fmt.Errorf("max-block-gas: %d, expected -1 (no cap) or at least 1", s.MaxBlockGas)
	}
	return nil
}

func (s Settings) String() string {
	return fmt.Sprintf("timeout_commit=%s timeout_propose=%s mempool_size=%d mempool_max_bytes=%d max_block_bytes=%d max_block_gas=%d create_empty_blocks=%t",
		s.TimeoutCommit, s.TimeoutPropose, s.MempoolSize, s.MempoolMaxBytes, s.MaxBlockBytes, s.MaxBlockGas, s.CreateEmptyBlocks)
}
