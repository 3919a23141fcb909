package authcache_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/authcache"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/testclock"
	"github.com/queenmq/queen/internal/testwait"
)

const (
	ttl   = 30 * time.Second
	actor = "test"
)

// testBundle is a cache over a store on a fresh proxy database, and a pool of its
// own to change rows behind the cache's back (no notification).
type testBundle struct {
	dbURL string
	clock *testclock.Clock
	store *store.Store
	pool  *pgxpool.Pool
	cache *authcache.Cache
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{dbURL: pgtest.NewDBURL(t), clock: testclock.New(time.Now())}
	var err error
	b.store, err = store.Open(store.Options{ConnString: b.dbURL, MaxConns: 4, StatementTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(b.store.Close)
	require.NoError(t, b.store.ApplySchema(t.Context()))
	b.pool, err = pgxpool.New(t.Context(), b.dbURL)
	require.NoError(t, err)
	t.Cleanup(b.pool.Close)
	b.cache = authcache.New(b.store, ttl, b.clock.Now)
	return b
}

func (b *testBundle) createTenant(t *testing.T, id string) {
	t.Helper()
	_, err := b.store.TenantCreate(t.Context(), &tenant.Tenant{ID: id, Name: id, Limits: tenant.DefaultLimits(),
		Quotas: tenant.DefaultQuotas()}, actor)
	require.NoError(t, err)
}

func (b *testBundle) createKey(t *testing.T, tenantID string) string {
	t.Helper()
	id, text := tenant.NewKey()
	_, err := b.store.KeyCreate(t.Context(), store.NewKey{Hash: tenant.HashKey(text),
		Key: tenant.Key{ID: id, Tenant: tenantID, Scope: tenant.ScopeRead}}, actor)
	require.NoError(t, err)
	return id
}

// renameKey changes the key's name in the database only: a cached answer keeps the
// old name, a fresh one has the new.
func (b *testBundle) renameKey(t *testing.T, id, name string) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), `UPDATE queen_proxy.api_keys SET name = $2 WHERE id = $1`, id, name)
	require.NoError(t, err)
}

func (b *testBundle) keyName(t *testing.T, id string) string {
	t.Helper()
	cred, err := b.cache.Lookup(t.Context(), id)
	require.NoError(t, err)
	return cred.Key.Name
}

func TestLookupCachesForTheTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createTenant(t, "acme")
	id := b.createKey(t, "acme")

	b.renameKey(t, id, "one")
	require.Equal(t, "one", b.keyName(t, id))
	b.renameKey(t, id, "two")
	require.Equal(t, "one", b.keyName(t, id), "a hit within the TTL")
	b.clock.Advance(ttl - time.Second)
	require.Equal(t, "one", b.keyName(t, id))
	b.clock.Advance(time.Second)
	require.Equal(t, "two", b.keyName(t, id), "asked again at the TTL")
}

func TestLookupCachesMisses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createTenant(t, "acme")
	ctx := t.Context()

	id, text := tenant.NewKey()
	_, err := b.cache.Lookup(ctx, id)
	require.ErrorIs(t, err, tenant.ErrNotFound)
	_, err = b.store.KeyCreate(ctx, store.NewKey{Hash: tenant.HashKey(text),
		Key: tenant.Key{ID: id, Tenant: "acme", Scope: tenant.ScopeRead}}, actor)
	require.NoError(t, err)
	_, err = b.cache.Lookup(ctx, id)
	require.ErrorIs(t, err, tenant.ErrNotFound, "the miss is remembered")
	b.cache.Evict("key:" + id)
	cred, err := b.cache.Lookup(ctx, id)
	require.NoError(t, err, "evicted, the key is found")
	require.True(t, tenant.HashMatches(text, cred.Hash))
}

func TestEvict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createTenant(t, "acme")
	b.createTenant(t, "beta")
	a1, a2, b1 := b.createKey(t, "acme"), b.createKey(t, "acme"), b.createKey(t, "beta")
	all := []string{a1, a2, b1}

	// prime caches every key as "old" and renames it "new" in the database.
	prime := func() {
		for _, id := range all {
			b.renameKey(t, id, "old")
			b.cache.Evict("key:" + id)
			require.Equal(t, "old", b.keyName(t, id))
			b.renameKey(t, id, "new")
		}
	}
	names := func() []string {
		var out []string
		for _, id := range all {
			out = append(out, b.keyName(t, id))
		}
		return out
	}

	prime()
	b.cache.Evict("key:" + a2)
	require.Equal(t, []string{"old", "new", "old"}, names())

	prime()
	b.cache.Evict("tenant:acme")
	require.Equal(t, []string{"new", "new", "old"}, names())

	prime()
	b.cache.Evict("session:whatever")
	b.cache.Evict("user:whoever")
	require.Equal(t, []string{"old", "old", "old"}, names(), "session and user payloads leave keys alone")

	prime()
	b.cache.Evict("unknown-payload")
	require.Equal(t, []string{"new", "new", "new"}, names(), "a payload not understood clears everything")

	prime()
	b.cache.ExpireAll()
	require.Equal(t, []string{"new", "new", "new"}, names())
}

func TestOutageServesWhatWorked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createTenant(t, "acme")
	ctx := t.Context()
	known := b.createKey(t, "acme")
	b.renameKey(t, known, "cached")
	require.Equal(t, "cached", b.keyName(t, known))
	missing, _ := tenant.NewKey()
	_, err := b.cache.Lookup(ctx, missing)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	restore := pgtest.CutOff(t, b.dbURL)
	b.clock.Advance(2 * ttl)
	require.Equal(t, "cached", b.keyName(t, known), "an expired entry answers while the store is down")
	_, err = b.cache.Lookup(ctx, missing)
	require.ErrorIs(t, err, tenant.ErrNotFound, "so does an expired miss")
	b.cache.ExpireAll()
	require.Equal(t, "cached", b.keyName(t, known), "expired by a lost listener, still answering")
	never, _ := tenant.NewKey()
	_, err = b.cache.Lookup(ctx, never)
	require.ErrorIs(t, err, tenant.ErrUnavailable, "nothing to answer from")

	restore()
	// The connections cut off fail once more each: poll until the store answers.
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		_, err := b.pool.Exec(ctx, `UPDATE queen_proxy.api_keys SET name = 'fresh' WHERE id = $1`, known)
		return err
	})
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		cred, err := b.cache.Lookup(ctx, known)
		if err != nil {
			return err
		}
		if cred.Key.Name != "fresh" {
			return fmt.Errorf("still the stale answer %q", cred.Key.Name)
		}
		return nil
	})
}

func TestSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createTenant(t, "acme")
	b.createTenant(t, "beta")
	acme, beta := "acme", "beta"
	users := map[string]*string{"alice": &acme, "bob": &beta, "root": nil}
	for name, tn := range users {
		u, err := b.store.UserCreate(ctx, store.NewUser{PasswordHash: "h",
			User: tenant.User{Username: name, Role: tenant.RoleReadOnly, Tenant: tn}}, actor)
		require.NoError(t, err)
		require.NoError(t, b.store.SessionCreate(ctx, "s-"+name, u.ID, b.clock.Now().Add(time.Hour)))
	}
	// live reports, for each session, whether the cache still answers it; the rows
	// are gone from the database, so only cached entries answer.
	sessions := []string{"s-alice", "s-bob", "s-root"}
	prime := func() {
		for _, id := range sessions {
			b.cache.Evict("session:" + id)
		}
		_, err := b.pool.Exec(ctx, `UPDATE queen_proxy.sessions SET expires_at = $1`, b.clock.Now().Add(time.Hour))
		require.NoError(t, err)
		for _, id := range sessions {
			ses, err := b.cache.LookupSession(ctx, id)
			require.NoError(t, err, id)
			require.Equal(t, id, ses.ID)
		}
		// Expired by the cache's clock (an injected one, which need not follow the
		// database's: on a loaded machine it fell more than a second behind).
		_, err = b.pool.Exec(ctx, `UPDATE queen_proxy.sessions SET expires_at = $1`, b.clock.Now().Add(-time.Second))
		require.NoError(t, err)
	}
	live := func() []bool {
		var out []bool
		for _, id := range sessions {
			_, err := b.cache.LookupSession(ctx, id)
			if err != nil {
				require.ErrorIs(t, err, tenant.ErrNotFound)
			}
			out = append(out, err == nil)
		}
		return out
	}

	prime()
	require.Equal(t, []bool{true, true, true}, live(), "cached within the TTL")

	prime()
	b.cache.ForgetSession("s-bob")
	require.Equal(t, []bool{true, false, true}, live())

	prime()
	b.cache.Evict("session:s-root")
	require.Equal(t, []bool{true, true, false}, live())

	prime()
	b.cache.Evict("user:alice")
	require.Equal(t, []bool{false, true, true}, live())

	prime()
	b.cache.Evict("tenant:beta")
	require.Equal(t, []bool{true, false, true}, live(), "a tenant's users' sessions")

	prime()
	b.cache.ExpireAll()
	require.Equal(t, []bool{false, false, false}, live())

	prime()
	b.clock.Advance(ttl)
	require.Equal(t, []bool{false, false, false}, live(), "asked again at the TTL")
}

func TestSessionNeverOutlivesItsExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	u, err := b.store.UserCreate(ctx, store.NewUser{PasswordHash: "h",
		User: tenant.User{Username: "root", Role: tenant.RoleAdmin}}, actor)
	require.NoError(t, err)
	require.NoError(t, b.store.SessionCreate(ctx, "s1", u.ID, b.clock.Now().Add(10*time.Second)))
	ses, err := b.cache.LookupSession(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, "root", ses.User.Username)

	// Through an outage the cached session answers, but not past its own expiry.
	pgtest.CutOff(t, b.dbURL)
	b.clock.Advance(5 * time.Second)
	_, err = b.cache.LookupSession(ctx, "s1")
	require.NoError(t, err, "within the TTL and the session's life")
	b.cache.ExpireAll()
	_, err = b.cache.LookupSession(ctx, "s1")
	require.NoError(t, err, "expired entry, store down: still served")
	b.clock.Advance(5 * time.Second)
	_, err = b.cache.LookupSession(ctx, "s1")
	require.ErrorIs(t, err, tenant.ErrNotFound, "never past the session's expiry, even cached")
	_, err = b.cache.LookupSession(ctx, "unknown")
	require.ErrorIs(t, err, tenant.ErrUnavailable)
}

func TestTakeUsed(t *testing.T) {
	t.Parallel()
	c := authcache.New(nil, ttl, time.Now)
	require.Empty(t, c.TakeUsed())
	var wg sync.WaitGroup
	for _, id := range []string{"k1", "k2", "k1", "k3", "k2"} {
		wg.Go(func() { c.MarkUsed(id) })
	}
	wg.Wait()
	used := c.TakeUsed()
	slices.Sort(used)
	require.Equal(t, []string{"k1", "k2", "k3"}, used, "each key once")
	require.Empty(t, c.TakeUsed(), "taken keys are forgotten")
	c.MarkUsed("k4")
	require.Equal(t, []string{"k4"}, c.TakeUsed())
}
