package tenant_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

func TestKeyFormat(t *testing.T) {
	t.Parallel()
	id, key := tenant.NewKey()
	require.Len(t, key, 65)
	got, ok := tenant.ParseKey(key)
	require.True(t, ok)
	require.Equal(t, id, got)
	require.True(t, tenant.HashMatches(key, tenant.HashKey(key)))
	require.False(t, tenant.HashMatches(key, nil))
	// One changed character fails the check digits.
	bad := []byte(key)
	bad[30] ^= 1
	_, ok = tenant.ParseKey(string(bad))
	require.False(t, ok)
	_, ok = tenant.ParseKey("qk_short")
	require.False(t, ok)
}

func TestValidateID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"acme", "a1", "bob-2"} {
		require.NoError(t, tenant.ValidateID(ok), ok)
	}
	for _, bad := range []string{"a", "1abc", "acme-", "Acme", "admin", "proxy", "a:b"} {
		require.Error(t, tenant.ValidateID(bad), bad)
	}
}

func TestAllowlist(t *testing.T) {
	t.Parallel()
	k := &tenant.Key{Queues: []string{"orders*", "billing"}}
	require.True(t, k.AllowsQueue("orders-eu"))
	require.True(t, k.AllowsQueue("billing"))
	require.False(t, k.AllowsQueue("billing-2"))
	require.False(t, k.AllQueues())
	require.True(t, (&tenant.Key{Queues: []string{"*"}}).AllQueues())
	require.True(t, tenant.ScopeAdmin.Allows(tenant.ScopeRead))
	require.False(t, tenant.ScopeRead.Allows(tenant.ScopeWrite))
}

// Scopes are a set: push and read do not include each other, write and admin pass
// both, and nothing passes an unknown need.
func TestScopeAllows(t *testing.T) {
	t.Parallel()
	scopes := []tenant.Scope{tenant.ScopePush, tenant.ScopeRead, tenant.ScopeWrite, tenant.ScopeAdmin, "owner"}
	passes := map[tenant.Scope][]tenant.Scope{
		tenant.ScopePush:  {tenant.ScopePush, tenant.ScopeWrite, tenant.ScopeAdmin},
		tenant.ScopeRead:  {tenant.ScopeRead, tenant.ScopeWrite, tenant.ScopeAdmin},
		tenant.ScopeWrite: {tenant.ScopeWrite, tenant.ScopeAdmin},
		tenant.ScopeAdmin: {tenant.ScopeAdmin},
		"owner":           nil,
		"":                nil,
	}
	for need, held := range passes {
		for _, s := range scopes {
			require.Equal(t, slices.Contains(held, s), s.Allows(need), "scope %q on a route needing %q", s, need)
		}
	}
}

func TestParseScope(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"push", "read", "write", "admin"} {
		s, err := tenant.ParseScope(ok)
		require.NoError(t, err)
		require.Equal(t, tenant.Scope(ok), s)
	}
	_, err := tenant.ParseScope("produce")
	var ve *tenant.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "scope", ve.Field)
	require.Contains(t, ve.Msg, "push", "the refusal names every scope")
}
