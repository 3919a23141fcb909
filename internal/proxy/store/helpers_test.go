package store_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

const actor = "test-operator"

// testBundle is a store on a fresh database with the proxy schema applied, and a
// pool of its own on the same database to look at what the store wrote.
type testBundle struct {
	dbURL string
	store *store.Store
	pool  *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{dbURL: pgtest.NewDBURL(t)}
	st, err := store.Open(store.Options{ConnString: b.dbURL, MaxConns: 4, StatementTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.ApplySchema(t.Context()))
	b.store = st
	b.pool, err = pgxpool.New(t.Context(), b.dbURL)
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	return b
}

// createTenant stores an active tenant with the default limits and quotas.
func (b *testBundle) createTenant(t *testing.T, id string) *tenant.Tenant {
	t.Helper()
	tn, err := b.store.TenantCreate(t.Context(), &tenant.Tenant{ID: id, Name: "Tenant " + id,
		Limits: tenant.DefaultLimits(), Quotas: tenant.DefaultQuotas()}, actor)
	require.NoError(t, err)
	return tn
}

// createKey stores a key of the tenant with the given scope and allowlist.
func (b *testBundle) createKey(t *testing.T, tenantID string, scope tenant.Scope, queues ...string) *tenant.Key {
	t.Helper()
	id, text := tenant.NewKey()
	k, err := b.store.KeyCreate(t.Context(), store.NewKey{Hash: tenant.HashKey(text),
		Key: tenant.Key{ID: id, Tenant: tenantID, Name: "k-" + id, Scope: scope, Queues: queues}}, actor)
	require.NoError(t, err)
	return k
}

// auditActions is the audit log's actions on target, oldest first.
func (b *testBundle) auditActions(t *testing.T, target string) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT action FROM queen_proxy.audit_log WHERE target = $1 ORDER BY id`, target)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

// expectHeard requires that the listener's next notification, within 10 s, is want.
func expectHeard(t *testing.T, heard <-chan string, want string) {
	t.Helper()
	select {
	case got := <-heard:
		require.Equal(t, want, got)
	case <-time.After(10 * time.Second):
		t.Fatalf("never heard %q", want)
	}
}
