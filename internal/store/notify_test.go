package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// A replica's listener hears other replicas' wake-ups and skips its own: its pushes
// already woke its waiters in-process. PostgreSQL delivers notifications in commit
// order, so once the other store's announcement arrives, the own one sent before it
// would have arrived first.
func TestListenSkipsOwnNotifications(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	open := func() *store.Store {
		st, err := store.Open(store.Options{ConnString: url, MaxConns: 4})
		require.NoError(t, err)
		t.Cleanup(st.Close)
		return st
	}
	self, other := open(), open()

	ctx, cancel := context.WithCancel(t.Context())
	heard := make(chan string, 16)
	connected := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		self.Listen(ctx, store.ListenHandlers{
			NotifyFunc:    func(q string) { heard <- q },
			ConnectedFunc: func() { connected <- struct{}{} },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not connect")
	}

	require.NoError(t, self.QueueNotify(ctx, []string{"from-self"}))
	require.NoError(t, other.QueueNotify(ctx, []string{"from-other"}))
	select {
	case q := <-heard:
		require.Equal(t, "from-other", q, "the listener heard its own store's notification")
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica's notification never arrived")
	}
	require.Empty(t, heard)
}
