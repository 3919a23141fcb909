package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func TestTenantCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	created := b.createTenant(t, "acme")
	require.Equal(t, tenant.StatusActive, created.Status)
	require.Equal(t, tenant.DefaultLimits(), created.Limits)
	require.False(t, created.CreatedAt.IsZero())

	got, err := b.store.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, created.Name, got.Name)
	require.Equal(t, created.Quotas, got.Quotas)

	_, err = b.store.TenantGet(ctx, "nobody")
	require.ErrorIs(t, err, tenant.ErrNotFound)

	_, err = b.store.TenantCreate(ctx, &tenant.Tenant{ID: "acme", Name: "again"}, actor)
	require.ErrorIs(t, err, tenant.ErrAlreadyExists)

	updated, err := b.store.TenantUpdate(ctx, "acme", func(tn *tenant.Tenant) error {
		tn.Name, tn.Status, tn.Limits.MaxConcurrent = "Acme Inc", tenant.StatusSuspended, 7
		return nil
	}, actor)
	require.NoError(t, err)
	require.Equal(t, "Acme Inc", updated.Name)
	require.Equal(t, tenant.StatusSuspended, updated.Status)
	got, err = b.store.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 7, got.Limits.MaxConcurrent, "the change is stored")

	// The change function's refusal comes back as is, and nothing is stored.
	refusal := &tenant.ValidationError{Field: "status", Msg: "no"}
	_, err = b.store.TenantUpdate(ctx, "acme", func(tn *tenant.Tenant) error {
		tn.Name = "not stored"
		return refusal
	}, actor)
	var verr *tenant.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "status", verr.Field)
	got, err = b.store.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "Acme Inc", got.Name)

	_, err = b.store.TenantUpdate(ctx, "nobody", func(*tenant.Tenant) error { return nil }, actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	require.Equal(t, []string{"tenant.create", "tenant.update"}, b.auditActions(t, "acme"))
}

func TestTenantDeleteIsATombstone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createTenant(t, "acme")
	k1 := b.createKey(t, "acme", tenant.ScopeRead)
	k2 := b.createKey(t, "acme", tenant.ScopeWrite)
	_, err := b.store.KeyRevoke(ctx, k2.ID, actor)
	require.NoError(t, err)
	b.createTenant(t, "other")
	other := b.createKey(t, "other", tenant.ScopeRead)

	revoked, err := b.store.TenantDelete(ctx, "acme", actor)
	require.NoError(t, err)
	require.Equal(t, 1, revoked, "only the key not yet revoked counts")

	got, err := b.store.TenantGet(ctx, "acme")
	require.NoError(t, err, "a tombstone is still found")
	require.Equal(t, tenant.StatusDeleted, got.Status)
	cred, err := b.store.KeyLookup(ctx, k1.ID)
	require.NoError(t, err)
	require.NotNil(t, cred.Key.RevokedAt)
	cred, err = b.store.KeyLookup(ctx, other.ID)
	require.NoError(t, err)
	require.Nil(t, cred.Key.RevokedAt, "another tenant's keys are untouched")

	_, err = b.store.TenantDelete(ctx, "acme", actor)
	require.ErrorIs(t, err, tenant.ErrNotFound, "deleting a deleted tenant")
	_, err = b.store.TenantDelete(ctx, "nobody", actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	_, err = b.store.TenantUpdate(ctx, "acme", func(*tenant.Tenant) error { return nil }, actor)
	require.ErrorIs(t, err, store.ErrTenantDeleted)
	require.ErrorIs(t, err, tenant.ErrConflict)

	_, err = b.store.TenantCreate(ctx, &tenant.Tenant{ID: "acme", Name: "reborn"}, actor)
	require.ErrorIs(t, err, tenant.ErrIDNeverReused, "an id once used is never reused")
	require.ErrorIs(t, err, tenant.ErrAlreadyExists)

	_, err = b.store.KeyCreate(ctx, store.NewKey{Key: tenant.Key{ID: "qk_x", Tenant: "acme", Scope: tenant.ScopeRead},
		Hash: []byte{1}}, actor)
	require.ErrorIs(t, err, store.ErrTenantDeleted, "no new key for a deleted tenant")

	require.NoError(t, b.store.TenantPurged(ctx, "acme", actor, 3, false))
	require.Equal(t, []string{"tenant.create", "tenant.delete", "tenant.purge"}, b.auditActions(t, "acme"))
	var detail map[string]any
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT detail FROM queen_proxy.audit_log WHERE target = 'acme'
		AND action = 'tenant.purge'`).Scan(&detail))
	require.Equal(t, map[string]any{"queuesDeleted": float64(3), "complete": false}, detail)
}

func TestTenantListPagesAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for _, id := range []string{"delta", "alpha", "charlie", "bravo", "echo"} {
		b.createTenant(t, id)
	}
	_, err := b.store.TenantDelete(ctx, "echo", actor)
	require.NoError(t, err)
	_, err = b.store.TenantUpdate(ctx, "charlie", func(tn *tenant.Tenant) error {
		tn.Status = tenant.StatusSuspended
		return nil
	}, actor)
	require.NoError(t, err)

	ids := func(ts []*tenant.Tenant) []string {
		out := []string{}
		for _, tn := range ts {
			out = append(out, tn.ID)
		}
		return out
	}

	page, total, err := b.store.TenantList(ctx, "", 2, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"alpha", "bravo"}, ids(page))
	require.Equal(t, 4, total, "every status but deleted")
	page, total, err = b.store.TenantList(ctx, "", 2, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"charlie", "delta"}, ids(page))
	require.Equal(t, 4, total)
	page, total, err = b.store.TenantList(ctx, "", 2, 10)
	require.NoError(t, err)
	require.Empty(t, page)
	require.Equal(t, 4, total, "a page past the end still counts")

	for status, want := range map[string][]string{
		"deleted": {"echo"}, "suspended": {"charlie"}, "active": {"alpha", "bravo", "delta"},
	} {
		page, total, err = b.store.TenantList(ctx, status, 10, 0)
		require.NoError(t, err)
		require.Equal(t, want, ids(page), status)
		require.Equal(t, len(want), total, status)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createTenant(t, "acme")

	_, err := b.store.KeyCreate(ctx, store.NewKey{Key: tenant.Key{ID: "qk_none", Tenant: "nobody", Scope: tenant.ScopeRead},
		Hash: []byte{1}}, actor)
	require.ErrorIs(t, err, tenant.ErrNotFound, "a key of no tenant")

	id, text := tenant.NewKey()
	k, err := b.store.KeyCreate(ctx, store.NewKey{Hash: tenant.HashKey(text),
		Key: tenant.Key{ID: id, Tenant: "acme", Name: "first", Scope: tenant.ScopeWrite}}, actor)
	require.NoError(t, err)
	require.Equal(t, []string{"*"}, k.Queues, "no allowlist is every queue")
	require.Nil(t, k.RevokedAt)
	require.Nil(t, k.ExpiresAt)

	_, err = b.store.KeyCreate(ctx, store.NewKey{Hash: []byte{1}, Key: tenant.Key{ID: id, Tenant: "acme", Scope: tenant.ScopeRead}}, actor)
	require.ErrorIs(t, err, tenant.ErrAlreadyExists)

	cred, err := b.store.KeyLookup(ctx, id)
	require.NoError(t, err)
	require.True(t, tenant.HashMatches(text, cred.Hash))
	require.Equal(t, "acme", cred.Tenant.ID)
	require.Equal(t, tenant.StatusActive, cred.Tenant.Status)
	require.Equal(t, tenant.DefaultLimits(), cred.Tenant.Limits)
	require.Equal(t, tenant.ScopeWrite, cred.Key.Scope)
	_, err = b.store.KeyLookup(ctx, "qk_missing")
	require.ErrorIs(t, err, tenant.ErrNotFound)

	second := b.createKey(t, "acme", tenant.ScopeRead, "orders.*", "audit")
	list, err := b.store.KeyList(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, second.ID, list[0].ID, "newest first")
	require.Equal(t, []string{"orders.*", "audit"}, list[0].Queues)
	list, err = b.store.KeyList(ctx, "nobody")
	require.NoError(t, err)
	require.Empty(t, list)
	require.NotNil(t, list, "an empty list, never nil")

	// Touch only moves last_used_at forward.
	at := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, b.store.KeyTouch(ctx, []string{id, second.ID}, at))
	require.NoError(t, b.store.KeyTouch(ctx, []string{id}, at.Add(-time.Hour)))
	require.NoError(t, b.store.KeyTouch(ctx, nil, at))
	cred, err = b.store.KeyLookup(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, cred.Key.LastUsedAt)
	require.True(t, at.Equal(*cred.Key.LastUsedAt), "%v", cred.Key.LastUsedAt)

	revoked, err := b.store.KeyRevoke(ctx, id, actor)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	again, err := b.store.KeyRevoke(ctx, id, actor)
	require.NoError(t, err, "revoking twice is not an error")
	require.True(t, revoked.RevokedAt.Equal(*again.RevokedAt), "the first revocation time is kept")
	_, err = b.store.KeyRevoke(ctx, "qk_missing", actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)

	require.Equal(t, []string{"key.create", "key.revoke", "key.revoke"}, b.auditActions(t, id))
}

func TestKeyRotate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createTenant(t, "acme")
	old := b.createKey(t, "acme", tenant.ScopeWrite, "orders.*")

	newID, text := tenant.NewKey()
	before := time.Now()
	rotated, err := b.store.KeyRotate(ctx, old.ID, time.Hour, store.NewKey{Hash: tenant.HashKey(text),
		Key: tenant.Key{ID: newID, Tenant: "ignored", Scope: tenant.ScopeAdmin, Queues: []string{"ignored"}}}, actor)
	require.NoError(t, err)
	require.Equal(t, newID, rotated.ID)
	require.Equal(t, "acme", rotated.Tenant, "the successor inherits the tenant")
	require.Equal(t, tenant.ScopeWrite, rotated.Scope, "… the scope")
	require.Equal(t, []string{"orders.*"}, rotated.Queues, "… the allowlist")
	require.Equal(t, old.Name, rotated.Name, "… and the name when none is given")

	cred, err := b.store.KeyLookup(ctx, old.ID)
	require.NoError(t, err)
	require.NotNil(t, cred.Key.ExpiresAt, "the old key now expires")
	require.WithinRange(t, *cred.Key.ExpiresAt, before.Add(time.Hour-time.Minute), time.Now().Add(time.Hour+time.Minute))
	require.Nil(t, cred.Key.RevokedAt)
	var from string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT rotated_from FROM queen_proxy.api_keys WHERE id = $1`, newID).Scan(&from))
	require.Equal(t, old.ID, from)

	// A grace of zero expires the old key at once: it cannot be rotated again.
	newer, text2 := tenant.NewKey()
	_, err = b.store.KeyRotate(ctx, newID, 0, store.NewKey{Hash: tenant.HashKey(text2), Key: tenant.Key{ID: newer}}, actor)
	require.NoError(t, err)
	_, err = b.store.KeyRotate(ctx, newID, time.Hour, store.NewKey{Hash: []byte{1}, Key: tenant.Key{ID: "qk_x1"}}, actor)
	require.ErrorIs(t, err, tenant.ErrConflict, "rotating an expired key")

	_, err = b.store.KeyRevoke(ctx, newer, actor)
	require.NoError(t, err)
	_, err = b.store.KeyRotate(ctx, newer, time.Hour, store.NewKey{Hash: []byte{1}, Key: tenant.Key{ID: "qk_x2"}}, actor)
	require.ErrorIs(t, err, tenant.ErrConflict, "rotating a revoked key")

	_, err = b.store.KeyRotate(ctx, "qk_missing", time.Hour, store.NewKey{Hash: []byte{1}, Key: tenant.Key{ID: "qk_x3"}}, actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)
	for _, id := range []string{"qk_x1", "qk_x2", "qk_x3"} {
		_, err = b.store.KeyLookup(ctx, id)
		require.ErrorIs(t, err, tenant.ErrNotFound, "a refused rotation stores nothing: %s", id)
	}
}

// TestUnavailable checks that a database that does not answer is ErrUnavailable,
// whatever the operation, and that the store works again once it is back.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createTenant(t, "acme")

	restore := pgtest.CutOff(t, b.dbURL)
	err := b.store.Ping(ctx)
	require.ErrorIs(t, err, tenant.ErrUnavailable)
	_, err = b.store.TenantGet(ctx, "acme")
	require.ErrorIs(t, err, tenant.ErrUnavailable)
	require.False(t, errors.Is(err, tenant.ErrNotFound))
	_, err = b.store.TenantCreate(ctx, &tenant.Tenant{ID: "other"}, actor)
	require.ErrorIs(t, err, tenant.ErrUnavailable)
	_, err = b.store.KeyLookup(ctx, "qk_any")
	require.ErrorIs(t, err, tenant.ErrUnavailable)

	restore()
	got, err := b.store.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "acme", got.ID)

	b.store.Close()
	_, err = b.store.TenantGet(ctx, "acme")
	require.ErrorIs(t, err, tenant.ErrUnavailable, "a closed pool")
}
