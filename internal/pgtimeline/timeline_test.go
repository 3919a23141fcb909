package pgtimeline_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/pgtimeline"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

// TestAPrimaryOnAnEarlierTimelineIsReported: a pool whose hosts are a promoted copy of
// a database (timeline 2) and the former primary it was copied from (timeline 1)
// reaches the copy first; once the copy stops, its next connection reaches the former
// primary, an earlier timeline: behind, counted and logged once, however many
// connections reach it afterwards, while Current follows the newest connection.
func TestAPrimaryOnAnEarlierTimelineIsReported(t *testing.T) {
	t.Parallel()
	former := pgtest.StartCluster(t)
	promoted := former.Fork()
	pool, w, logs := watchedPool(t, promoted.Port(), former.Port())
	ctx := t.Context()

	require.NoError(t, pool.Ping(ctx))
	require.Equal(t, int64(2), w.Current(), "the promoted copy is on the next timeline")
	require.False(t, w.Behind())
	require.Zero(t, w.Regressions())
	require.NotContains(t, logs.String(), "earlier timeline")

	promoted.Stop()
	waitForTimeline(t, pool, w, 1)
	require.True(t, w.Behind())
	require.Equal(t, uint64(1), w.Regressions())
	log := logs.String()
	require.Equal(t, 1, strings.Count(log, "earlier timeline"), log)
	require.Contains(t, log, "level=ERROR")
	require.Contains(t, log, "timeline=1 latest_seen=2")
	require.Contains(t, log, fmt.Sprintf("server=127.0.0.1:%d", former.Port()))

	// More connections to the same former primary: nothing more is counted or logged.
	pool.Reset()
	var release []func()
	for range 2 {
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		release = append(release, c.Release)
	}
	for _, r := range release {
		r()
	}
	require.Equal(t, uint64(1), w.Regressions())
	require.Equal(t, 1, strings.Count(logs.String(), "earlier timeline"))
	require.Equal(t, int64(1), w.Current())
	require.True(t, w.Behind())
}

// TestAnotherClusterIsNotAnEarlierTimeline: a pool that reaches a promoted copy of a
// database (timeline 2) and then another database cluster on timeline 1 (a move to a
// new cluster behind the same address) finds no earlier timeline: timelines of
// different clusters are not compared. The move is logged as a warning.
func TestAnotherClusterIsNotAnEarlierTimeline(t *testing.T) {
	t.Parallel()
	promoted := pgtest.StartCluster(t).Fork()
	other := pgtest.StartCluster(t)
	pool, w, logs := watchedPool(t, promoted.Port(), other.Port())
	ctx := t.Context()

	require.NoError(t, pool.Ping(ctx))
	require.Equal(t, int64(2), w.Current())
	promoted.Stop()
	waitForTimeline(t, pool, w, 1)
	require.False(t, w.Behind())
	require.Zero(t, w.Regressions())
	log := logs.String()
	require.NotContains(t, log, "earlier timeline")
	require.Contains(t, log, "level=WARN")
	require.Contains(t, log, "another database cluster")
}

// watchedPool is a pool of at most two connections with a Watch, on the hosts of ports
// in order (the first writable one), and the Watch's log.
func watchedPool(t *testing.T, ports ...int) (*pgxpool.Pool, *pgtimeline.Watch, *testlog.Buffer) {
	t.Helper()
	hosts := make([]string, len(ports))
	for i, p := range ports {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	cfg, err := pgxpool.ParseConfig("postgres://postgres@" + strings.Join(hosts, ",") +
		"/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5")
	require.NoError(t, err)
	cfg.MaxConns = 2
	logs := &testlog.Buffer{}
	w := pgtimeline.Install(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, w, logs
}

// waitForTimeline pings through pool until a new connection has found timeline want:
// the connection to a stopped server fails once, and the next is made anew.
func waitForTimeline(t *testing.T, pool *pgxpool.Pool, w *pgtimeline.Watch, want int64) {
	t.Helper()
	testwait.For(t, 30*time.Second, 100*time.Millisecond, func() error {
		if err := pool.Ping(t.Context()); err != nil {
			return err
		}
		if tl := w.Current(); tl != want {
			return fmt.Errorf("timeline %d, want %d", tl, want)
		}
		return nil
	})
}

// TestInstallChainsTheAfterConnectBeforeIt: the hook cfg had runs first, and its
// error refuses the connection.
func TestInstallChainsTheAfterConnectBeforeIt(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	require.NoError(t, err)
	ran := 0
	cfg.AfterConnect = func(context.Context, *pgx.Conn) error {
		ran++
		return nil
	}
	w := pgtimeline.Install(cfg, nil)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pool.Ping(t.Context()))
	require.Equal(t, 1, ran)
	require.Positive(t, w.Current())
	require.Zero(t, w.Regressions())

	refused, err := pgxpool.ParseConfig(pgtest.URL(t))
	require.NoError(t, err)
	refused.AfterConnect = func(context.Context, *pgx.Conn) error { return errors.New("refused") }
	w = pgtimeline.Install(refused, nil)
	pool, err = pgxpool.NewWithConfig(t.Context(), refused)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.ErrorContains(t, pool.Ping(t.Context()), "refused")
	require.Zero(t, w.Current(), "no timeline read on a refused connection")
}
