package store

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

// TestAPrimaryOnAnEarlierTimelineIsReported: a store whose hosts are a promoted copy of
// a database (timeline 2) and the former primary it was copied from (timeline 1)
// reaches the copy first; once the copy stops, its next connection reaches the former
// primary, an earlier timeline: counted and logged once, however many connections
// reach it afterwards, while the gauge follows the newest connection.
func TestAPrimaryOnAnEarlierTimelineIsReported(t *testing.T) {
	t.Parallel()
	former := pgtest.StartCluster(t)
	promoted := former.Fork()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		promoted.Port(), former.Port())
	var logs testlog.Buffer
	st, err := Open(Options{ConnString: url, MaxConns: 2, ConnectTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	ctx := t.Context()

	require.NoError(t, st.Ping(ctx))
	require.Equal(t, int64(2), st.Stats().Timeline, "the promoted copy is on the next timeline")
	require.Zero(t, st.Stats().TimelineRegressions)
	require.NotContains(t, logs.String(), "earlier timeline")

	promoted.Stop()
	testwait.For(t, 30*time.Second, 100*time.Millisecond, func() error {
		if err := st.Ping(ctx); err != nil {
			return err // the connection to the stopped copy fails once; the next is made anew
		}
		if tl := st.Stats().Timeline; tl != 1 {
			return fmt.Errorf("timeline %d, want the former primary's 1", tl)
		}
		return nil
	})
	require.Equal(t, uint64(1), st.Stats().TimelineRegressions)
	log := logs.String()
	require.Equal(t, 1, strings.Count(log, "earlier timeline"), log)
	require.Contains(t, log, "level=ERROR")
	require.Contains(t, log, "timeline=1 latest_seen=2")
	require.Contains(t, log, fmt.Sprintf("server=127.0.0.1:%d", former.Port()))

	// More connections to the same former primary: nothing more is counted or logged.
	st.pool.Reset()
	conns := make([]func(), 0, 2)
	for range 2 {
		c, err := st.pool.Acquire(ctx)
		require.NoError(t, err)
		conns = append(conns, c.Release)
	}
	for _, release := range conns {
		release()
	}
	require.Equal(t, uint64(1), st.Stats().TimelineRegressions)
	require.Equal(t, 1, strings.Count(logs.String(), "earlier timeline"))
	require.Equal(t, int64(1), st.Stats().Timeline)
}
