package heartbeat_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/heartbeat"
	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

type testBundle struct {
	url string
	st  *store.Store
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewDBURL(t)
	return &testBundle{url: url, st: openStore(t, url)}
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}

// row returns the replica row of instance, waiting until ok accepts it.
func row(t *testing.T, st *store.Store, instance string, ok func(store.Replica) bool) store.Replica {
	t.Helper()
	var got store.Replica
	require.Eventually(t, func() bool {
		rows, err := st.ReplicaList(t.Context())
		require.NoError(t, err)
		for _, r := range rows {
			if r.Instance == instance && ok(r) {
				got = r
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	return got
}

// start runs a heartbeat of a broker named instance on st; it stops when the test
// ends or stop is called.
func start(t *testing.T, st *store.Store, instance string, opts heartbeat.Options) (stop func()) {
	t.Helper()
	opts.Store = st
	cfg := broker.DefaultConfig()
	cfg.Instance = instance
	opts.Broker = broker.New(cfg, st, slog.New(slog.DiscardHandler))
	if opts.Interval == 0 {
		opts.Interval = 20 * time.Millisecond
	}
	h := heartbeat.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	return stop
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()

	t.Run("WritesItsRowThenDrainsThenLeavesALastRow", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		runner, err := maintenance.New(tb.st, maintenance.Jobs(tb.st, maintenance.Settings{
			RetentionInterval: time.Hour, EvictionInterval: time.Hour, BatchSize: 1000, EvictionBatchSize: 1000}), prometheus.NewRegistry(),
			maintenance.Options{Instance: "a"})
		require.NoError(t, err)
		draining := make(chan struct{})
		started := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
		stop := start(t, tb.st, "a", heartbeat.Options{Runner: runner, Version: "v9", StartedAt: started,
			Draining: draining, SocketActivated: true, WatchdogInterval: 30 * time.Second})

		r := row(t, tb.st, "a", func(r store.Replica) bool { return r.Ready })
		require.False(t, r.Draining)
		require.False(t, r.Stale)
		require.Equal(t, "v9", r.Version)
		require.Equal(t, started, r.StartedAt)
		require.Equal(t, 60*time.Millisecond, r.StaleAfter, "three intervals")
		require.Equal(t, 4, r.PoolMax)
		require.True(t, r.SocketActivated)
		require.Equal(t, 30*time.Second, r.WatchdogInterval)
		require.False(t, r.SpoolHealthy, "a broker without a spool")
		require.Len(t, r.Jobs, len(runner.Jobs()))
		require.Equal(t, maintenance.JobRetention, r.Jobs[0].Name)
		require.Empty(t, r.Jobs[0].LastResult, "no cycle yet")

		close(draining)
		r = row(t, tb.st, "a", func(r store.Replica) bool { return r.Draining })
		require.False(t, r.Ready, "a draining replica is not ready")
		stop()
		last := row(t, tb.st, "a", func(store.Replica) bool { return true })
		require.True(t, last.Draining)
		require.False(t, last.Ready)
		require.False(t, last.LastSeenAt.Before(r.LastSeenAt), "the last row is written on the way out")
	})

	t.Run("ReadyFollowsTheReplica", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		start(t, tb.st, "b", heartbeat.Options{ReadyFunc: func() bool { return false }})
		r := row(t, tb.st, "b", func(store.Replica) bool { return true })
		require.False(t, r.Ready)
		require.False(t, r.Draining)
	})

	t.Run("WarnsOnceAboutANamesake", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		var logs testlog.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		start(t, tb.st, "same", heartbeat.Options{Logger: logger})
		start(t, openStore(t, tb.url), "same", heartbeat.Options{})
		require.Eventually(t, func() bool {
			return len(logs.String()) > 0
		}, 10*time.Second, 10*time.Millisecond)
		const warning = "another broker process writes the heartbeat of this instance name"
		require.Contains(t, logs.String(), "heartbeat_name=same")
		// Both keep writing; the warning stays one line however many beats follow.
		seen := row(t, tb.st, "same", func(store.Replica) bool { return true }).LastSeenAt
		row(t, tb.st, "same", func(r store.Replica) bool { return r.LastSeenAt.After(seen.Add(100 * time.Millisecond)) })
		require.Equal(t, 1, strings.Count(logs.String(), warning))
	})
}
