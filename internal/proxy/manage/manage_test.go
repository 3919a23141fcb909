package manage_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

const actor = "test"

type testBundle struct {
	dbURL   string
	store   *store.Store
	manager *manage.Manager
	now     time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dbURL := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 4, StatementTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.ApplySchema(t.Context()))
	b := &testBundle{dbURL: dbURL, store: st, now: time.Now()}
	b.manager = manage.New(st, func() time.Time { return b.now }, 4) // bcrypt's minimum cost: fast tests
	return b
}

// requireInvalid checks that err is a *tenant.ValidationError naming field.
func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var verr *tenant.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, field, verr.Field)
}

func TestCreateTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	tn, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.NoError(t, err)
	require.Equal(t, "acme", tn.Name, "the name defaults to the id")
	require.Equal(t, tenant.DefaultLimits(), tn.Limits)
	require.Equal(t, tenant.DefaultQuotas(), tn.Quotas)

	tn, err = b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "beta", Name: "Beta",
		Limits: json.RawMessage(`{"maxConcurrent": 3}`), Quotas: json.RawMessage(`{"maxQueues": 7}`)}, actor)
	require.NoError(t, err)
	want := tenant.DefaultLimits()
	want.MaxConcurrent = 3
	require.Equal(t, want, tn.Limits, "merged over the defaults")
	require.Equal(t, int64(7), tn.Quotas.MaxQueues)
	require.Equal(t, tenant.DefaultQuotas().MaxBytes, tn.Quotas.MaxBytes)

	for _, tc := range []struct {
		spec  manage.TenantSpec
		field string
	}{
		{manage.TenantSpec{ID: "Bad Id"}, "id"},
		{manage.TenantSpec{ID: "x"}, "id"},
		{manage.TenantSpec{ID: "gamma", Limits: json.RawMessage(`{"nope": 1}`)}, "limits.nope"},
		{manage.TenantSpec{ID: "gamma", Limits: json.RawMessage(`{"maxConcurrent": -1}`)}, "limits.maxConcurrent"},
		{manage.TenantSpec{ID: "gamma", Quotas: json.RawMessage(`{"maxBytes": -1}`)}, "quotas.maxBytes"},
	} {
		_, err := b.manager.CreateTenant(ctx, tc.spec, actor)
		requireInvalid(t, err, tc.field)
	}
	_, err = b.manager.Tenant(ctx, "gamma")
	require.ErrorIs(t, err, tenant.ErrNotFound, "a refused spec stores nothing")

	_, err = b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.ErrorIs(t, err, tenant.ErrAlreadyExists)
	_, err = b.manager.DeleteTenant(ctx, "acme", actor)
	require.NoError(t, err)
	_, err = b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.ErrorIs(t, err, tenant.ErrAlreadyExists, "ids are never reused")
}

func TestUpdateTenantAndStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme", Limits: json.RawMessage(`{"maxConcurrent": 3}`)}, actor)
	require.NoError(t, err)

	name := "Acme Inc"
	tn, err := b.manager.UpdateTenant(ctx, "acme", manage.TenantChange{Name: &name, Quotas: json.RawMessage(`{"maxQueues": 2}`)}, actor)
	require.NoError(t, err)
	require.Equal(t, "Acme Inc", tn.Name)
	require.Equal(t, 3, tn.Limits.MaxConcurrent, "limits not named stay")
	require.Equal(t, int64(2), tn.Quotas.MaxQueues)

	tn, err = b.manager.UpdateTenant(ctx, "acme", manage.TenantChange{Limits: json.RawMessage(`null`)}, actor)
	require.NoError(t, err)
	require.Equal(t, tenant.DefaultLimits(), tn.Limits, "null resets to the defaults")

	deleted := "deleted"
	_, err = b.manager.UpdateTenant(ctx, "acme", manage.TenantChange{Status: &deleted}, actor)
	requireInvalid(t, err, "status")
	_, err = b.manager.UpdateTenant(ctx, "acme", manage.TenantChange{Limits: json.RawMessage(`{"x": 1}`)}, actor)
	requireInvalid(t, err, "limits.x")

	tn, err = b.manager.SetStatus(ctx, "acme", tenant.StatusSuspended, actor)
	require.NoError(t, err)
	require.Equal(t, tenant.StatusSuspended, tn.Status)
	tn, err = b.manager.SetStatus(ctx, "acme", tenant.StatusActive, actor)
	require.NoError(t, err)
	require.Equal(t, tenant.StatusActive, tn.Status)

	_, err = b.manager.SetStatus(ctx, "nobody", tenant.StatusSuspended, actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)
}

func TestListTenantsBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ts, total, err := b.manager.ListTenants(ctx, "", manage.DefaultPageSize, 0)
	require.NoError(t, err)
	require.NotNil(t, ts, "an empty page is a list, never nil")
	require.Empty(t, ts)
	require.Zero(t, total)

	for _, id := range []string{"alpha", "bravo"} {
		_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: id}, actor)
		require.NoError(t, err)
	}
	ts, total, err = b.manager.ListTenants(ctx, "active", 1, 1)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.Equal(t, "bravo", ts[0].ID)
	require.Equal(t, 2, total)

	_, _, err = b.manager.ListTenants(ctx, "gone", 10, 0)
	requireInvalid(t, err, "status")
	_, _, err = b.manager.ListTenants(ctx, "", 0, 0)
	requireInvalid(t, err, "limit")
	_, _, err = b.manager.ListTenants(ctx, "", manage.MaxPageSize+1, 0)
	requireInvalid(t, err, "limit")
	_, _, err = b.manager.ListTenants(ctx, "", 10, -1)
	requireInvalid(t, err, "offset")
}

func TestPurgeTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.NoError(t, err)

	called := 0
	purge := func(n int, err error) manage.PurgeFunc {
		return func(_ context.Context, id string) (int, error) {
			called++
			require.Equal(t, "acme", id)
			return n, err
		}
	}
	_, err = b.manager.PurgeTenant(ctx, "acme", purge(1, nil), actor)
	require.ErrorIs(t, err, manage.ErrTenantActive)
	require.ErrorIs(t, err, tenant.ErrConflict)
	require.Zero(t, called, "an active tenant is never purged")
	_, err = b.manager.PurgeTenant(ctx, "nobody", purge(1, nil), actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	_, err = b.manager.SetStatus(ctx, "acme", tenant.StatusSuspended, actor)
	require.NoError(t, err)
	n, err := b.manager.PurgeTenant(ctx, "acme", purge(3, nil), actor)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	broken := errors.New("broker down")
	n, err = b.manager.PurgeTenant(ctx, "acme", purge(2, broken), actor)
	require.ErrorIs(t, err, broken, "a purge failing midway returns its error")
	require.Equal(t, 2, n, "… and what it deleted")
	n, err = b.manager.PurgeTenant(ctx, "acme", purge(0, broken), actor)
	require.ErrorIs(t, err, broken)
	require.Zero(t, n)
	require.Equal(t, 3, called)

	// Only the purges that deleted something are in the audit log.
	_, err = b.manager.DeleteTenant(ctx, "acme", actor)
	require.NoError(t, err)
	n, err = b.manager.PurgeTenant(ctx, "acme", purge(1, nil), actor)
	require.NoError(t, err, "a deleted tenant can be purged")
	require.Equal(t, 1, n)
	require.Equal(t, 3, auditCount(t, b, "tenant.purge"))
}

// auditCount counts the audit log's entries of action, read on a pool of its own.
func auditCount(t *testing.T, b *testBundle, action string) int {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), b.dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM queen_proxy.audit_log WHERE action = $1`, action).Scan(&n))
	return n
}

func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.NoError(t, err)

	_, err = b.manager.CreateKey(ctx, "acme", manage.KeySpec{Scope: "root"}, actor)
	requireInvalid(t, err, "scope")
	past := b.now.Add(-time.Second)
	_, err = b.manager.CreateKey(ctx, "acme", manage.KeySpec{Scope: "read", ExpiresAt: &past}, actor)
	requireInvalid(t, err, "expiresAt")
	_, err = b.manager.CreateKey(ctx, "nobody", manage.KeySpec{Scope: "read"}, actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	k, err := b.manager.CreateKey(ctx, "acme", manage.KeySpec{Name: "ci", Scope: "write", Queues: []string{"orders.*"}}, actor)
	require.NoError(t, err)
	id, ok := tenant.ParseKey(k.Secret)
	require.True(t, ok, "the secret is a key text")
	require.Equal(t, k.ID, id)
	cred, err := b.store.KeyLookup(ctx, k.ID)
	require.NoError(t, err)
	require.True(t, tenant.HashMatches(k.Secret, cred.Hash), "only the hash of the secret is stored")

	tooLong := manage.MaxGrace + time.Second
	_, err = b.manager.RotateKey(ctx, k.ID, &tooLong, actor)
	requireInvalid(t, err, "graceSeconds")
	negative := -time.Second
	_, err = b.manager.RotateKey(ctx, k.ID, &negative, actor)
	requireInvalid(t, err, "graceSeconds")

	rotated, err := b.manager.RotateKey(ctx, k.ID, nil, actor)
	require.NoError(t, err)
	require.NotEqual(t, k.ID, rotated.ID)
	require.NotEqual(t, k.Secret, rotated.Secret)
	require.Equal(t, []string{"orders.*"}, rotated.Queues)
	old, err := b.store.KeyLookup(ctx, k.ID)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(manage.DefaultGrace), *old.Key.ExpiresAt, time.Minute, "the default grace")

	keys, err := b.manager.Keys(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, keys, 2)
	_, err = b.manager.Keys(ctx, "nobody")
	require.ErrorIs(t, err, tenant.ErrNotFound, "keys of no tenant are not an empty list")

	revoked, err := b.manager.RevokeKey(ctx, rotated.ID, actor)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
}

// A push key is stored, listed and rotated with its scope.
func TestPushKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.NoError(t, err)

	k, err := b.manager.CreateKey(ctx, "acme", manage.KeySpec{Name: "producer", Scope: "push"}, actor)
	require.NoError(t, err)
	require.Equal(t, tenant.ScopePush, k.Scope)
	cred, err := b.store.KeyLookup(ctx, k.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.ScopePush, cred.Key.Scope)
	rotated, err := b.manager.RotateKey(ctx, k.ID, nil, actor)
	require.NoError(t, err)
	require.Equal(t, tenant.ScopePush, rotated.Scope, "a rotation keeps the scope")
	keys, err := b.manager.Keys(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, keys, 2)
	for _, key := range keys {
		require.Equal(t, tenant.ScopePush, key.Scope)
	}
}

func TestUsers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme"}, actor)
	require.NoError(t, err)

	acme, empty := "acme", ""
	for _, tc := range []struct {
		spec  manage.UserSpec
		field string
	}{
		{manage.UserSpec{Username: " bad", Password: "long enough", Role: tenant.RoleReadOnly}, "username"},
		{manage.UserSpec{Username: "alice", Password: "short", Role: tenant.RoleReadOnly}, "password"},
	} {
		_, err := b.manager.CreateUser(ctx, tc.spec, actor)
		requireInvalid(t, err, tc.field)
	}
	_, err = b.manager.CreateUser(ctx, manage.UserSpec{Username: "alice", Password: "long enough", Role: "king"}, actor)
	require.Error(t, err, "an unknown role")

	u, err := b.manager.CreateUser(ctx, manage.UserSpec{Username: "alice", Password: "long enough", Role: tenant.RoleReadWrite,
		Tenant: &acme}, actor)
	require.NoError(t, err)
	require.Equal(t, "acme", *u.Tenant)
	root, err := b.manager.CreateUser(ctx, manage.UserSpec{Username: "root", Password: "long enough", Role: tenant.RoleAdmin,
		Tenant: &empty}, actor)
	require.NoError(t, err)
	require.Nil(t, root.Tenant, `tenant "" is an operator`)

	cred, err := b.store.UserLookup(ctx, "alice")
	require.NoError(t, err)
	require.NotEqual(t, "long enough", cred.PasswordHash, "never the password itself")
	require.Contains(t, cred.PasswordHash, "$2a$04$", "bcrypt at the cost given")

	_, err = b.manager.SetPassword(ctx, "alice", "short", actor)
	requireInvalid(t, err, "password")
	_, err = b.manager.SetPassword(ctx, "alice", "another long one", actor)
	require.NoError(t, err)
	after, err := b.store.UserLookup(ctx, "alice")
	require.NoError(t, err)
	require.NotEqual(t, cred.PasswordHash, after.PasswordHash)

	users, err := b.manager.Users(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, users, 1)
	got, err := b.manager.User(ctx, "root")
	require.NoError(t, err)
	require.Equal(t, tenant.RoleAdmin, got.Role)
	require.NoError(t, b.manager.DeleteUser(ctx, "root", actor))
	_, err = b.manager.User(ctx, "root")
	require.ErrorIs(t, err, tenant.ErrNotFound)
}
