package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/queue"
)

func TestDefaultConfigIsTheSettingsDefaults(t *testing.T) {
	t.Parallel()
	cfg := broker.DefaultConfig()
	require.Equal(t, broker.SettingsConfig(config.Defaults()), cfg)
	require.Equal(t, 30*time.Second, cfg.DefaultTimeout, "DEFAULT_TIMEOUT")
	require.Equal(t, 100*time.Millisecond, cfg.SpoolFlushInterval, "FILE_BUFFER_FLUSH_MS")
	require.Equal(t, 2, cfg.Push.MaxConcurrent, "QUEEN_PUSH_MAX_CONCURRENT")
	require.NotEmpty(t, cfg.Instance, "QUEEN_INSTANCE unset: the host name")
	require.Nil(t, cfg.Spool)
	require.Nil(t, cfg.Sealer)
}

func TestSettingsConfigMapsSettings(t *testing.T) {
	t.Parallel()
	s, err := config.Load([]string{"QUEEN_INSTANCE=queen-2", "QUEEN_MAX_POP_BATCH=7",
		"QUEEN_PUSH_MAX_CONCURRENT=0", "FILE_BUFFER_MAX_BATCH=9"})
	require.NoError(t, err)
	cfg := broker.SettingsConfig(s)
	require.Equal(t, "queen-2", cfg.Instance)
	require.Equal(t, 7, cfg.MaxPopBatch)
	require.Equal(t, 9, cfg.SpoolMaxBatch)
	require.Equal(t, 1, cfg.Push.MaxConcurrent, "0 counts as 1, as upstream")
}

func TestNewPanicsOnAMissingRequiredField(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*broker.Config){
		"Config.MaxPopTimeout":      func(c *broker.Config) { c.MaxPopTimeout = 0 },
		"Config.MaxPopBatch":        func(c *broker.Config) { c.MaxPopBatch = -1 },
		"Config.SpoolFlushInterval": func(c *broker.Config) { c.SpoolFlushInterval = 0 },
		"Config.Push.MaxBatch":      func(c *broker.Config) { c.Push.MaxBatch = 0 },
		"Config.Instance":           func(c *broker.Config) { c.Instance = "" },
	}
	for field, breakIt := range cases {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			cfg := withConfig(breakIt)
			require.PanicsWithValue(t, panicMessage(field), func() { broker.New(cfg, nil, nil) })
		})
	}
	require.PanicsWithValue(t, "broker: Config.DefaultTimeout and PopWaitBackoffThreshold must not be negative",
		func() { broker.New(withConfig(func(c *broker.Config) { c.DefaultTimeout = -1 }), nil, nil) })
	require.Panics(t, func() { broker.New(broker.Config{}, nil, nil) }, "a zero Config")
	require.NotPanics(t, func() { broker.New(broker.DefaultConfig(), nil, nil) })
}

func panicMessage(field string) string {
	if field == "Config.Instance" {
		return "broker: Config.Instance must not be empty (start from DefaultConfig or SettingsConfig)"
	}
	return "broker: " + field + " must be positive (start from DefaultConfig or SettingsConfig)"
}

// Zero is a valid DEFAULT_TIMEOUT and POP_WAIT_BACKOFF_THRESHOLD (config accepts it, as
// upstream does): a broker starts with both, and a waiting pop that gives no timeout
// looks once and answers.
func TestZeroDefaultTimeoutAndBackoffThreshold(t *testing.T) {
	t.Parallel()
	s, err := config.Load([]string{"DEFAULT_TIMEOUT=0", "POP_WAIT_BACKOFF_THRESHOLD=0"})
	require.NoError(t, err)
	cfg := broker.SettingsConfig(s)
	require.Zero(t, cfg.DefaultTimeout)
	require.Zero(t, cfg.PopWaitBackoffThreshold)
	tb := setup(t, func(c *broker.Config) { *c = cfg })
	tb.push(t, queue.PushItem{Queue: "zero-timeout", Payload: []byte(`{}`)})
	first := tb.pop(t, queue.PopRequest{Queue: "zero-timeout", Batch: 1, Wait: true})
	require.Len(t, first.Messages, 1)
	start := time.Now()
	res := tb.pop(t, queue.PopRequest{Queue: "zero-timeout", Batch: 1, Wait: true})
	require.Empty(t, res.Messages, "the only message is leased")
	// Parked, it would wait for the lease (5 minutes) or for ever: well under the
	// 30 s default is "looked once".
	require.Less(t, time.Since(start), 10*time.Second, "a pop with no time to wait did not park")
}
