package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/answerguard"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/testwait"
)

// TestTheListenerLeavesASilentServer: a quiet listener checks its server every
// ProbeEvery and keeps hearing notifications between checks; once the server goes
// silent (SIGSTOP) the check fails within the answer guard's limit, and the listener
// connects again when the server answers.
func TestTheListenerLeavesASilentServer(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	open := func() *Store {
		st, err := Open(Options{ConnString: cluster.URL(), MaxConns: 2, StatementTimeout: time.Second,
			AnswerDeadline: answerguard.Deadline(time.Second),
			ConnectTimeout: time.Second})
		require.NoError(t, err)
		t.Cleanup(st.Close)
		return st
	}
	self, other := open(), open()

	ctx, cancel := context.WithCancel(t.Context())
	heard := make(chan string, 16)
	connected := make(chan struct{}, 4)
	failed := make(chan error, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		self.Listen(ctx, ListenHandlers{
			NotifyFunc:    func(q string) { heard <- q },
			ConnectedFunc: func() { connected <- struct{}{} },
			ErrorFunc:     func(err error, _ time.Duration) { failed <- err },
			ProbeEvery:    100 * time.Millisecond,
		})
	}()
	t.Cleanup(func() { cluster.Thaw(); cancel(); <-done })
	receive := func(what string) {
		t.Helper()
		select {
		case <-connected:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
	receive("the listener did not connect")

	// The listener's last statement is the check once it has waited ProbeEvery.
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		var q string
		if err := other.pool.QueryRow(ctx, `SELECT query FROM pg_stat_activity WHERE pid = $1`,
			int32(self.listenerPID.Load())).Scan(&q); err != nil {
			return err
		}
		if q != "SELECT 1" {
			return fmt.Errorf("the listener's last statement is %q", q)
		}
		return nil
	})
	require.NoError(t, other.QueueNotify(ctx, []string{"after-checks"}))
	select {
	case q := <-heard:
		require.Equal(t, "after-checks", q)
	case <-time.After(10 * time.Second):
		t.Fatal("a notification after the checks never arrived")
	}
	require.Empty(t, failed)

	cluster.Freeze()
	select {
	case err := <-failed:
		require.ErrorIs(t, err, queue.ErrUnavailable, "%v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the listener stayed on a silent server")
	}
	cluster.Thaw()
	receive("the listener did not connect again")
}
