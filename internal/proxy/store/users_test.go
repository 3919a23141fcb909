package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func (b *testBundle) createUser(t *testing.T, name string, tenantID *string) *tenant.User {
	t.Helper()
	u, err := b.store.UserCreate(t.Context(), store.NewUser{PasswordHash: "hash-" + name,
		User: tenant.User{Username: name, Role: tenant.RoleReadWrite, Tenant: tenantID}}, actor)
	require.NoError(t, err)
	return u
}

func TestUsers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	acme := b.createTenant(t, "acme").ID

	op := b.createUser(t, "root", nil)
	require.Nil(t, op.Tenant)
	require.NotZero(t, op.ID)
	alice := b.createUser(t, "alice", &acme)
	require.Equal(t, "acme", *alice.Tenant)

	_, err := b.store.UserCreate(ctx, store.NewUser{PasswordHash: "h", User: tenant.User{Username: "alice", Role: tenant.RoleReadWrite}}, actor)
	require.ErrorIs(t, err, tenant.ErrAlreadyExists)
	nobody := "nobody"
	_, err = b.store.UserCreate(ctx, store.NewUser{PasswordHash: "h", User: tenant.User{Username: "bob", Role: tenant.RoleReadWrite, Tenant: &nobody}}, actor)
	require.ErrorIs(t, err, tenant.ErrNotFound, "a user of no tenant")

	got, err := b.store.UserGet(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, alice.ID, got.ID)
	_, err = b.store.UserGet(ctx, "bob")
	require.ErrorIs(t, err, tenant.ErrNotFound)

	all, err := b.store.UserList(ctx, "")
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "alice", all[0].Username, "ordered by name")
	mine, err := b.store.UserList(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, mine, 1)
	none, err := b.store.UserList(ctx, "other")
	require.NoError(t, err)
	require.NotNil(t, none)
	require.Empty(t, none)

	cred, err := b.store.UserLookup(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, "hash-alice", cred.PasswordHash)
	require.Equal(t, "acme", cred.Tenant.ID)
	cred, err = b.store.UserLookup(ctx, "root")
	require.NoError(t, err)
	require.Nil(t, cred.Tenant, "an operator has no tenant")
	_, err = b.store.UserLookup(ctx, "bob")
	require.ErrorIs(t, err, tenant.ErrNotFound)

	_, err = b.store.UserSetPassword(ctx, "alice", "hash-2", actor)
	require.NoError(t, err)
	cred, err = b.store.UserLookup(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, "hash-2", cred.PasswordHash)
	_, err = b.store.UserSetPassword(ctx, "bob", "h", actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	require.NoError(t, b.store.UserDelete(ctx, "alice", actor))
	require.ErrorIs(t, b.store.UserDelete(ctx, "alice", actor), tenant.ErrNotFound)
	require.Equal(t, []string{"user.create", "user.passwd", "user.delete"}, b.auditActions(t, "alice"))
}

func TestSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	acme := b.createTenant(t, "acme").ID
	alice := b.createUser(t, "alice", &acme)
	root := b.createUser(t, "root", nil)
	now := time.Now()

	require.NoError(t, b.store.SessionCreate(ctx, "s1", alice.ID, now.Add(time.Hour)))
	require.NoError(t, b.store.SessionCreate(ctx, "s2", alice.ID, now.Add(time.Hour)))
	require.NoError(t, b.store.SessionCreate(ctx, "s3", root.ID, now.Add(time.Hour)))
	require.ErrorIs(t, b.store.SessionCreate(ctx, "s1", root.ID, now.Add(time.Hour)), tenant.ErrAlreadyExists)

	ses, err := b.store.SessionLookup(ctx, "s1", now)
	require.NoError(t, err)
	require.Equal(t, "alice", ses.User.Username)
	require.Equal(t, "acme", ses.Tenant.ID)
	require.WithinDuration(t, now.Add(time.Hour), ses.ExpiresAt, time.Millisecond)
	ses, err = b.store.SessionLookup(ctx, "s3", now)
	require.NoError(t, err)
	require.Nil(t, ses.Tenant)

	_, err = b.store.SessionLookup(ctx, "s1", now.Add(time.Hour))
	require.ErrorIs(t, err, tenant.ErrNotFound, "expired at its expiry")
	_, err = b.store.SessionLookup(ctx, "nope", now)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	require.NoError(t, b.store.SessionDelete(ctx, "s2"))
	require.NoError(t, b.store.SessionDelete(ctx, "s2"), "deleting a gone session is not an error")
	_, err = b.store.SessionLookup(ctx, "s2", now)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	_, err = b.store.UserSetPassword(ctx, "alice", "h2", actor)
	require.NoError(t, err)
	_, err = b.store.SessionLookup(ctx, "s1", now)
	require.ErrorIs(t, err, tenant.ErrNotFound, "a new password ends the user's sessions")
	_, err = b.store.SessionLookup(ctx, "s3", now)
	require.NoError(t, err, "… and no one else's")

	require.NoError(t, b.store.UserDelete(ctx, "root", actor))
	_, err = b.store.SessionLookup(ctx, "s3", now)
	require.ErrorIs(t, err, tenant.ErrNotFound, "a deleted user's sessions go with it")

	// Creating a session sweeps expired ones.
	require.NoError(t, b.store.SessionCreate(ctx, "old", alice.ID, now.Add(-time.Hour)))
	require.NoError(t, b.store.SessionCreate(ctx, "s4", alice.ID, now.Add(time.Hour)))
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM queen_proxy.sessions WHERE id = 'old'`).Scan(&n))
	require.Zero(t, n)
}

// TestListenHearsAuthChanges checks that every change affecting authentication
// reaches the listener once committed, with the payload the auth cache evicts by.
func TestListenHearsAuthChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	acme := b.createTenant(t, "acme").ID
	key := b.createKey(t, "acme", tenant.ScopeRead)
	b.createUser(t, "alice", &acme)

	heard := make(chan string, 32)
	connected := make(chan struct{}, 4)
	lost := make(chan error, 4)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.store.Listen(lctx, store.ListenHandlers{
			NotifyFunc:    func(p string) { heard <- p },
			ConnectedFunc: func() { connected <- struct{}{} },
			LostFunc:      func(err error) { lost <- err },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener never connected")
	}

	_, err := b.store.KeyRevoke(ctx, key.ID, actor)
	require.NoError(t, err)
	expectHeard(t, heard, "key:"+key.ID)
	_, err = b.store.TenantUpdate(ctx, "acme", func(*tenant.Tenant) error { return nil }, actor)
	require.NoError(t, err)
	expectHeard(t, heard, "tenant:acme")
	require.NoError(t, b.store.SessionDelete(ctx, "s1"))
	expectHeard(t, heard, "session:s1")
	_, err = b.store.UserSetPassword(ctx, "alice", "h", actor)
	require.NoError(t, err)
	expectHeard(t, heard, "user:alice")
	require.NoError(t, b.store.UserDelete(ctx, "alice", actor))
	expectHeard(t, heard, "user:alice")

	// A refused change notifies nothing: the next payload is the next change's.
	_, err = b.store.TenantUpdate(ctx, "acme", func(*tenant.Tenant) error { return tenant.ErrConflict }, actor)
	require.ErrorIs(t, err, tenant.ErrConflict)
	k2 := b.createKey(t, "acme", tenant.ScopeRead)
	_, err = b.store.TenantDelete(ctx, "acme", actor)
	require.NoError(t, err)
	expectHeard(t, heard, "key:"+k2.ID)
	expectHeard(t, heard, "tenant:acme")

	// The listener's connection shows in pg_stat_activity under its name.
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1
		AND datname = current_database()`, store.ListenerApplicationName).Scan(&n))
	require.Equal(t, 1, n)

	// A lost connection is reported as the database unavailable, and the listener
	// connects again by itself.
	_, err = b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1
		AND datname = current_database()`, store.ListenerApplicationName)
	require.NoError(t, err)
	select {
	case err := <-lost:
		require.ErrorIs(t, err, tenant.ErrUnavailable)
	case <-time.After(10 * time.Second):
		t.Fatal("the lost connection was never reported")
	}
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener never reconnected")
	}
	require.NoError(t, b.store.SessionDelete(ctx, "s2"))
	expectHeard(t, heard, "session:s2")
}
