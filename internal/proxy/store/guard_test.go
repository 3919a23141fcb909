package store_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/testlog"
)

// TestAFrozenDatabaseIsUnavailable: with the proxy's PostgreSQL stopped (SIGSTOP), a
// lookup on an open connection fails as unavailable once the statement timeout + 5 s
// have passed, instead of waiting for the server to resume.
func TestAFrozenDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	var logs testlog.Buffer
	// Should a connection attempt meet the frozen postmaster, it fails in 2 s rather
	// than waiting for it (URL has a query already: sslmode).
	url := cluster.URL() + "&connect_timeout=2"
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 1, StatementTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.ApplySchema(t.Context()))
	_, err = st.TenantCreate(t.Context(), &tenant.Tenant{ID: "acme", Name: "Acme",
		Limits: tenant.DefaultLimits(), Quotas: tenant.DefaultQuotas()}, actor)
	require.NoError(t, err)

	require.Zero(t, st.PoolStats().Unanswered)

	// Lookups run back to back from before the freeze until one fails, so the one
	// that meets the frozen server runs on a connection just used. The pool pings a
	// connection idle for more than a second before handing it out: a lookup after
	// such a pause would have that ping, not the lookup, meet the freeze.
	done := make(chan error, 1)
	running := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			_, err := st.TenantGet(context.WithoutCancel(t.Context()), "acme")
			if i == 0 {
				close(running)
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	<-running
	cluster.Freeze()
	select {
	case err := <-done:
		require.ErrorIs(t, err, tenant.ErrUnavailable)
	case <-time.After(60 * time.Second):
		t.Fatal("a lookup on a frozen database was never answered")
	}
	require.Contains(t, logs.String(), "PostgreSQL left a statement unanswered")
	require.EqualValues(t, 1, st.PoolStats().Unanswered, "the connection closed for want of an answer is counted")

	cluster.Thaw()
	got, err := st.TenantGet(t.Context(), "acme")
	require.NoError(t, err)
	require.Equal(t, "Acme", got.Name)
}
