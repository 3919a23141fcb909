package checker_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/checker"
	"github.com/queenmq/queen/internal/pgtest"
)

// Sizes of TestSemanticsChecker and TestRollingRestart; zero keeps the test's default
// (or its -checker.long preset).
// Example: go test -run TestSemanticsChecker ./internal/checker/ -args -checker.messages=200000
var (
	flagLong       = flag.Bool("checker.long", false, "use the long preset (make check-semantics, make check-ha)")
	flagMessages   = flag.Int("checker.messages", 0, "messages to push")
	flagProducers  = flag.Int("checker.producers", 0, "concurrent producers")
	flagPartitions = flag.Int("checker.partitions", 0, "partitions of the queue")
	flagGroups     = flag.Int("checker.groups", 0, "named consumer groups (queue mode comes on top)")
	flagConsumers  = flag.Int("checker.consumers", 0, "consumers per group")
	flagBatch      = flag.Int("checker.batch", 0, "largest pop batch")
	flagRestarts   = flag.Int("checker.restarts", -1, "broker restarts while producing")
	flagRetries    = flag.Int("checker.retrylimit", -1, "retryLimit of the queue")
	flagDuration   = flag.Duration("checker.duration", 0, "how long the producers push")
	flagLease      = flag.Duration("checker.lease", 0, "leaseTime of the queue (whole seconds)")
	flagFail       = flag.Float64("checker.fail", -1, "probability of a failed ack")
	flagAbandon    = flag.Float64("checker.abandon", -1, "probability of abandoning a lease")
	flagSeed       = flag.Uint64("checker.seed", 0, "seed of the random choices")
	flagBrokers    = flag.Int("checker.brokers", 0, "brokers of TestRollingRestart (default 3)")
	flagHistory    = flag.String("checker.history", "", "write the recorded history to this file (default: a temporary file when the run fails)")
)

// longConfig is the preset of make check-semantics: minutes of traffic.
func longConfig() checker.Config {
	c := checker.DefaultConfig()
	c.Messages = 50000
	c.Producers = 8
	c.Partitions = 16
	c.PushBatch = 6
	c.Duration = 3 * time.Minute
	c.Groups = 3
	c.ConsumersPerGroup = 6
	c.MaxBatch = 10
	c.MaxPartitions = 4
	c.Restarts = 6
	c.DrainTimeout = 10 * time.Minute
	return c
}

func configFromFlags() checker.Config {
	if *flagLong {
		return withFlags(longConfig())
	}
	return withFlags(checker.DefaultConfig())
}

// withFlags overrides c with the sizes given on the command line. Every run of these
// tests also requires that no request was answered with a 5xx other than 503.
func withFlags(c checker.Config) checker.Config {
	c.Only503 = true
	setInt := func(dst *int, v, unset int) {
		if v != unset {
			*dst = v
		}
	}
	setInt(&c.Messages, *flagMessages, 0)
	setInt(&c.Producers, *flagProducers, 0)
	setInt(&c.Partitions, *flagPartitions, 0)
	setInt(&c.Groups, *flagGroups, 0)
	setInt(&c.ConsumersPerGroup, *flagConsumers, 0)
	setInt(&c.MaxBatch, *flagBatch, 0)
	setInt(&c.Restarts, *flagRestarts, -1)
	setInt(&c.RetryLimit, *flagRetries, -1)
	if *flagDuration > 0 {
		c.Duration = *flagDuration
	}
	if *flagLease > 0 {
		c.LeaseTime = *flagLease
	}
	if *flagFail >= 0 {
		c.FailProbability = *flagFail
	}
	if *flagAbandon >= 0 {
		c.AbandonProbability = *flagAbandon
	}
	if *flagSeed != 0 {
		c.Seed = *flagSeed
	}
	return c
}

// TestSemanticsChecker runs the concurrency checker against two brokers on one
// database, one of them killed and restarted mid-run, and requires no violation. It
// also requires that the run exercised what it claims to: restarts, redeliveries,
// failed acks, expired leases and dead letters. The second broker's pops commit
// without waiting for their flush (QUEEN_POP_SYNCHRONOUS_COMMIT=false), which must
// change nothing while PostgreSQL stays up; its sessions commit with synchronous_commit
// on otherwise (PGOPTIONS), so that the setting takes effect whatever the test
// cluster's default.
func TestSemanticsChecker(t *testing.T) {
	t.Parallel()

	cfg := configFromFlags()
	dbURL := pgtest.NewDBURL(t)
	rep := runChecker(t, cfg, startClusterEnv(t, brokerEnv(t, dbURL), 2,
		"QUEEN_POP_SYNCHRONOUS_COMMIT=false", "PGOPTIONS=-c synchronous_commit=on"))

	require.Equal(t, cfg.Messages, rep.Pushed, "every message was pushed")
	require.Equal(t, cfg.Restarts, rep.Restarts, "every restart happened")
	require.Positive(t, rep.Redelivered, "the run redelivered messages")
	if cfg.FailProbability > 0 {
		require.Positive(t, rep.FailedAcks, "the run retried failed messages")
		require.Positive(t, rep.DeadLettered, "poison messages reached the dead-letter queue")
	}
	if cfg.AbandonProbability > 0 {
		require.Positive(t, rep.ExpiredLeases, "the run let leases expire")
	}
}

// runChecker runs the checker with cfg on cl and requires a run without violations.
func runChecker(t *testing.T, cfg checker.Config, cl checker.Cluster) *checker.Report {
	t.Helper()
	cfg.Logf = t.Logf
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+cfg.DrainTimeout+2*time.Minute)
	defer cancel()
	rep, err := checker.Run(ctx, cfg, cl)
	require.NoError(t, err)
	t.Log(rep.Summary())
	t.Logf("checker: pushRetries=%d popErrors=%d", rep.PushRetries, rep.PopErrors)
	for _, v := range rep.Violations {
		t.Errorf("checker violation: %s", v)
	}
	if !rep.OK() || *flagHistory != "" {
		writeHistory(t, rep.History)
	}
	if c, ok := cl.(*cluster); ok && !rep.OK() {
		for _, line := range c.errorLines(20) {
			t.Logf("checker: %s", line)
		}
	}
	require.True(t, rep.OK(), rep.Summary())
	return rep
}

// writeHistory saves the recorded history for reading violations in context.
func writeHistory(t *testing.T, h *checker.History) {
	t.Helper()
	path := *flagHistory
	if path == "" {
		f, err := os.CreateTemp("", "checker-history-*.txt")
		require.NoError(t, err)
		path = f.Name()
		require.NoError(t, f.Close())
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = h.WriteTo(f)
	require.NoError(t, errors.Join(err, f.Close()))
	t.Logf("checker: history written to %s", path)
}
