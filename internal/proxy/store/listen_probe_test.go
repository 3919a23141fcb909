package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/testwait"
)

// TestTheListenerLeavesAFrozenServer: a quiet auth listener checks its server every
// ProbeEvery and hears every notification between and during the checks; once the
// server goes silent (SIGSTOP) the check goes unanswered, the listener reports its
// connection lost (its revocations may be missed from then on) and connects again
// once the server answers.
func TestTheListenerLeavesAFrozenServer(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	// A connection attempt to the frozen postmaster fails instead of waiting for it.
	url := cluster.URL() + "&connect_timeout=2"
	// The listener's store has no statement timeout, hence no answer guard: the
	// check's own bound is what the test sees.
	listener, err := store.Open(store.Options{ConnString: url, MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(listener.Close)
	sender, err := store.Open(store.Options{ConnString: url, MaxConns: 2, StatementTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(sender.Close)
	require.NoError(t, sender.ApplySchema(t.Context()))
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	ctx, cancel := context.WithCancel(t.Context())
	heard := make(chan string, 64)
	connected := make(chan struct{}, 4)
	lost := make(chan error, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		listener.Listen(ctx, store.ListenHandlers{
			NotifyFunc:    func(p string) { heard <- p },
			ConnectedFunc: func() { connected <- struct{}{} },
			LostFunc: func(err error) {
				select { // reconnections to the frozen server fail too
				case lost <- err:
				default:
				}
			},
			ProbeEvery: 5 * time.Millisecond,
		})
	}()
	t.Cleanup(func() { cluster.Thaw(); cancel(); <-done })
	waitConnected := func(what string) {
		t.Helper()
		select {
		case <-connected:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
	waitConnected("the listener did not connect")

	// The listener's last statement is the check once it has waited ProbeEvery.
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		var q string
		if err := pool.QueryRow(ctx, `SELECT query FROM pg_stat_activity WHERE application_name = $1`,
			store.ListenerApplicationName).Scan(&q); err != nil {
			return err
		}
		if q != "SELECT 1" {
			return fmt.Errorf("the listener's last statement is %q", q)
		}
		return nil
	})
	// With a check every 5 ms, notifications arrive during checks too: pgx buffers
	// them, and none is lost or reordered.
	for i := range 20 {
		require.NoError(t, sender.SessionDelete(ctx, fmt.Sprint("s", i)))
	}
	for i := range 20 {
		expectHeard(t, heard, fmt.Sprint("session:s", i))
	}
	require.Empty(t, lost, "a live server's connection was reported lost")

	cluster.Freeze()
	frozen := time.Now()
	select {
	case err := <-lost:
		require.ErrorIs(t, err, tenant.ErrUnavailable)
		t.Logf("the frozen server's connection was reported lost after %s", time.Since(frozen).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("the listener stayed on a frozen server")
	}
	cluster.Thaw()
	waitConnected("the listener did not connect again")
	require.NoError(t, sender.SessionDelete(ctx, "after-thaw"))
	expectHeard(t, heard, "session:after-thaw")
}
