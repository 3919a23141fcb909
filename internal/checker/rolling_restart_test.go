package checker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/checker"
	"github.com/queenmq/queen/internal/pgtest"
)

// rollingBrokers is the size of TestRollingRestart's cluster: the most replicas
// queen supports on one database.
const rollingBrokers = 3

// rollingConfig is TestRollingRestart's run for n brokers: one rolling restart in a
// few seconds of traffic, every stop graceful. Two producers and three consumers
// call each broker first.
func rollingConfig(n int) checker.Config {
	c := checker.DefaultConfig()
	c.Queue = "rolling"
	c.Producers = 2 * n
	c.Messages = 1500
	c.Duration = 10 * time.Second
	c.ConsumersPerGroup = n
	c.Rolling = true
	c.Restarts = n
	return c
}

// rollingLongConfig is the preset of make check-ha: minutes of traffic, three rolling
// restarts of every broker, every fourth stop abrupt instead (SIGKILL for a child).
func rollingLongConfig(n int) checker.Config {
	c := longConfig()
	c.Queue = "rolling"
	c.Producers = 3 * n
	c.ConsumersPerGroup = 2 * n
	c.Rolling = true
	c.Restarts = 3 * n
	c.KillEvery = 4
	return c
}

// TestRollingRestart proves the high-availability claim: three brokers on one
// database, restarted one at a time as a rolling upgrade does (each stopped
// gracefully, down for a moment, back on the same address) while producers and
// consumers use all of them, lose no message, duplicate none beyond what leases
// allow, and keep every partition's order. It also requires that every broker was
// restarted and served pushes and pops both before and after each of its restarts,
// so the run cannot pass without the restarts having met traffic. With
// -checker.long (make check-ha) the run is minutes long, rolls three times and kills
// some brokers instead of stopping them.
func TestRollingRestart(t *testing.T) {
	t.Parallel()

	n := rollingBrokers
	if *flagBrokers > 0 {
		n = *flagBrokers
	}
	cfg := rollingConfig(n)
	if *flagLong {
		cfg = rollingLongConfig(n)
	}
	cfg = withFlags(cfg)
	dbURL := pgtest.NewDBURL(t)
	rep := runChecker(t, cfg, startClusterN(t, dbURL, n))

	require.Equal(t, cfg.Messages, rep.Pushed, "every message was pushed")
	require.Equal(t, n, rep.Brokers)
	require.Equal(t, cfg.Restarts, rep.Restarts, "every restart happened")
	require.Len(t, rep.RestartLog, cfg.Restarts)
	restarted, abrupt := make([]int, n), 0
	for k, rs := range rep.RestartLog {
		t.Logf("checker: %s", rs)
		restarted[rs.Broker]++
		if !rs.Graceful {
			abrupt++
		}
		require.Greater(t, rs.Ready, rs.Stopping, "restart %d: %s", k, rs)
		if k > 0 {
			require.GreaterOrEqual(t, rs.Stopping, rep.RestartLog[k-1].Ready, "restart %d began before the previous broker was back: %s", k, rs)
		}
		require.Positive(t, rs.PushesBefore, "restart %d: no push served by the broker before it stopped: %s", k, rs)
		require.Positive(t, rs.PopsBefore, "restart %d: no pop served by the broker before it stopped: %s", k, rs)
		require.Positive(t, rs.PushesAfter, "restart %d: no push served by the broker once it was back: %s", k, rs)
		require.Positive(t, rs.PopsAfter, "restart %d: no pop served by the broker once it was back: %s", k, rs)
	}
	for b, k := range restarted {
		require.GreaterOrEqual(t, k, 1, "broker %d was never restarted", b)
	}
	if cfg.KillEvery > 0 {
		require.Equal(t, cfg.Restarts/cfg.KillEvery, abrupt, "abrupt restarts")
	} else {
		require.Zero(t, abrupt, "abrupt restarts")
	}
	require.Positive(t, rep.PushRetries+rep.PopErrors, "clients never met a stopped broker")
	require.Positive(t, rep.Redelivered, "the run redelivered messages")
	if cfg.FailProbability > 0 {
		require.Positive(t, rep.FailedAcks, "the run retried failed messages")
		require.Positive(t, rep.DeadLettered, "poison messages reached the dead-letter queue")
	}
}
