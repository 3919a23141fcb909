package store

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/answerguard"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/testlog"
)

// TestTheAnswerGuard: a statement PostgreSQL leaves unanswered fails once its deadline
// (here statement_timeout + 5 s) has passed, as on a connection lost under it, while a
// server that runs keeps enforcing statement_timeout itself, and a batch of n
// statements has n deadlines. The pool's check of a connection idle for more than a
// second is bounded too.
func TestTheAnswerGuard(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	var logs testlog.Buffer
	st, err := Open(Options{ConnString: cluster.URL(), MaxConns: 2, StatementTimeout: time.Second,
		AnswerDeadline: answerguard.Deadline(time.Second),
		ConnectTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	ctx := t.Context()
	busy, err := st.pool.Acquire(ctx)
	require.NoError(t, err)
	idle, err := st.pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = idle.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	idle.Release() // idle from here on: the pool pings it before its next use

	_, err = busy.Exec(ctx, "SELECT pg_sleep(0.5)")
	require.NoError(t, err, "a statement within statement_timeout")
	_, err = busy.Exec(ctx, "SELECT pg_sleep(3)")
	err = interpretError(err)
	require.ErrorIs(t, err, queue.ErrTimeout, "the server's statement_timeout answers first")
	require.NotErrorIs(t, err, queue.ErrUnavailable)

	// Eight statements of 0.9 s in one batch: 7.2 s, past one statement's 6 s, and
	// PostgreSQL answers a pipeline at its end.
	b := &pgx.Batch{}
	for range 8 {
		b.Queue("SELECT pg_sleep(0.9)")
	}
	require.NoError(t, busy.SendBatch(ctx, b).Close(), "a batch of statements each within the limit")
	require.Zero(t, st.Stats().Unanswered)

	cluster.Freeze()
	began := time.Now()
	_, err = busy.Exec(ctx, "SELECT 1")
	waited := time.Since(began)
	busy.Release()
	err = interpretError(err)
	require.ErrorIs(t, err, queue.ErrUnavailable, "%v", err)
	require.ErrorIs(t, err, queue.ErrOutcomeUnknown, "%v", err)
	require.GreaterOrEqual(t, waited, 6*time.Second, "the guard fired early")
	require.EqualValues(t, 1, st.Stats().Unanswered)
	require.Contains(t, logs.String(), "PostgreSQL left a statement unanswered")
	require.Contains(t, logs.String(), "waited=6s")

	// The idle connection's ping goes unanswered too; the pool drops it after 5 s and
	// cannot connect anew (connect timeout).
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = st.pool.Exec(bounded, "SELECT 1")
	err = interpretError(err)
	require.ErrorIs(t, err, queue.ErrUnavailable, "%v", err)
	require.NotErrorIs(t, err, queue.ErrOutcomeUnknown, "%v", err)

	cluster.Thaw()
	var one int
	require.NoError(t, st.pool.QueryRow(ctx, "SELECT 1").Scan(&one), "the pool replaced the closed connections")
}
