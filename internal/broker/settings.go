package broker

import (
	"cmp"
	"fmt"
	"os"

	"github.com/queenmq/queen/internal/config"
)

// SettingsConfig maps the settings (config.Load) to the broker's Config: the one
// place a setting becomes a broker tunable. The parts that are not settings, Sealer
// and Spool, are left for the caller (the daemon) to set. QUEEN_INSTANCE unset names
// the broker after the host.
func SettingsConfig(s *config.Config) Config {
	return Config{
		DefaultTimeout:          s.DefaultTimeout,
		MaxPopTimeout:           s.MaxPopTimeout,
		DefaultBatchSize:        s.DefaultBatchSize,
		MaxPopBatch:             s.MaxPopBatch,
		MaxPushItems:            s.MaxPushItems,
		MaxAckItems:             s.MaxAckItems,
		DefaultSubscriptionMode: s.DefaultSubscriptionMode,
		PopWaitInitialInterval:  s.PopWaitInitialInterval,
		PopWaitBackoffThreshold: s.PopWaitBackoffThreshold,
		PopWaitBackoffMultiple:  s.PopWaitBackoffMultiplier,
		PopWaitMaxInterval:      s.PopWaitMaxInterval,
		Instance:                cmp.Or(s.Instance, hostname()),
		SpoolFlushInterval:      s.FileBufferFlushInterval,
		SpoolMaxBatch:           s.FileBufferMaxBatch,
		AnalyticsFlushInterval:  s.AnalyticsFlushInterval,
		AnalyticsBucket:         s.AnalyticsBucket,
		PopAutopilotBatch:       s.PopAutopilotBatch,
		ClaimAhead:              s.PopClaimAhead,
		// 0 counts as 1, as upstream.
		Push: PushBatching{MaxConcurrent: max(s.PushMaxConcurrent, 1), MaxBatch: max(s.PushMaxBatchSize, 1),
			Preferred: s.PushPreferredBatch, Hold: s.PushMaxHold, ParallelMin: s.PushParallelMin},
	}
}

// DefaultConfig is the broker's Config under default settings (an empty
// environment), with no Sealer and no Spool. Tests start from it and override.
func DefaultConfig() Config { return SettingsConfig(config.Defaults()) }

// hostname is the host's name, or "queen" if the system will not tell.
func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "queen"
}

// mustValidate panics, naming the field, on a Config that New cannot run with: a
// zero or negative required value is a programming error (SettingsConfig and
// DefaultConfig never produce one).
func (c *Config) mustValidate() {
	positive := []struct {
		name string
		ok   bool
	}{
		{"MaxPopTimeout", c.MaxPopTimeout > 0},
		{"DefaultBatchSize", c.DefaultBatchSize > 0},
		{"MaxPopBatch", c.MaxPopBatch > 0},
		{"MaxPushItems", c.MaxPushItems > 0},
		{"MaxAckItems", c.MaxAckItems > 0},
		{"PopWaitInitialInterval", c.PopWaitInitialInterval > 0},
		{"PopWaitBackoffMultiple", c.PopWaitBackoffMultiple > 0},
		{"PopWaitMaxInterval", c.PopWaitMaxInterval > 0},
		{"SpoolFlushInterval", c.SpoolFlushInterval > 0},
		{"SpoolMaxBatch", c.SpoolMaxBatch > 0},
		{"Push.MaxConcurrent", c.Push.MaxConcurrent > 0},
		{"Push.MaxBatch", c.Push.MaxBatch > 0},
	}
	// A zero default timeout makes a waiting pop without timeout look once; a zero
	// threshold backs off from the first re-check.
	if c.DefaultTimeout < 0 || c.PopWaitBackoffThreshold < 0 {
		panic("broker: Config.DefaultTimeout and PopWaitBackoffThreshold must not be negative")
	}
	for _, f := range positive {
		if !f.ok {
			panic(fmt.Sprintf("broker: Config.%s must be positive (start from DefaultConfig or SettingsConfig)", f.name))
		}
	}
	if c.Instance == "" {
		panic("broker: Config.Instance must not be empty (start from DefaultConfig or SettingsConfig)")
	}
}
