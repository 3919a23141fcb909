package manage_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func TestParseUsageSpan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 30, 15, 0, time.UTC)

	sp, err := manage.ParseUsageSpan("", "", "", now)
	require.NoError(t, err)
	require.Equal(t, tenant.GranularityHour, sp.Granularity, "hour by default")
	require.Equal(t, now.Add(time.Minute), sp.To, "up to a minute from now")
	require.Equal(t, time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC), sp.From, "24 h back, truncated to the bucket")

	sp, err = manage.ParseUsageSpan("2026-01-01T10:00:00Z", "2026-01-03T00:00:00Z", "day", now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), sp.From)
	require.Equal(t, time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), sp.To)

	for _, tc := range []struct{ from, to, g, field string }{
		{"", "", "week", "granularity"},
		{"", "yesterday", "", "to"},
		{"noon", "", "", "from"},
		{"2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z", "hour", "from"},
		{"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "hour", "from"},
		{"2026-01-01T00:00:00Z", "2026-01-02T00:00:01Z", "minute", "from"},
		{"2026-01-01T00:00:00Z", "2026-02-02T00:00:00Z", "hour", "from"},
	} {
		_, err := manage.ParseUsageSpan(tc.from, tc.to, tc.g, now)
		requireInvalid(t, err, tc.field)
	}
}

func TestUsageReports(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for _, id := range []string{"acme", "beta"} {
		_, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: id}, actor)
		require.NoError(t, err)
	}
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	require.NoError(t, b.store.UsageUpsert(ctx, "r1", []tenant.UsagePoint{
		{Tenant: "acme", Start: hour, Usage: tenant.Usage{Requests: 2, StoredMessages: 5}},
		{Tenant: "acme", Start: hour.Add(time.Hour), Usage: tenant.Usage{Requests: 3, StoredMessages: 4}},
		{Tenant: "beta", Start: hour, Usage: tenant.Usage{Requests: 7}},
	}))
	sp := manage.UsageSpan{From: hour, To: hour.Add(3 * time.Hour), Granularity: tenant.GranularityHour}

	r, err := b.manager.TenantUsage(ctx, "acme", sp)
	require.NoError(t, err)
	require.Len(t, r.Series, 2)
	require.Equal(t, hour, r.Series[0].Start)
	require.Equal(t, tenant.Usage{Requests: 5, StoredMessages: 5}, r.Totals, "counters summed, gauges at their maximum")

	_, err = b.manager.TenantUsage(ctx, "nobody", sp)
	require.ErrorIs(t, err, tenant.ErrNotFound)
	r, err = b.manager.TenantUsage(ctx, "beta", manage.UsageSpan{From: hour.Add(time.Hour), To: hour.Add(2 * time.Hour),
		Granularity: tenant.GranularityHour})
	require.NoError(t, err)
	require.NotNil(t, r.Series, "an empty series is a list, never nil")
	require.Empty(t, r.Series)

	all, err := b.manager.AllUsage(ctx, sp)
	require.NoError(t, err)
	require.Equal(t, []manage.TenantTotal{
		{Tenant: "acme", Totals: tenant.Usage{Requests: 5, StoredMessages: 5}},
		{Tenant: "beta", Totals: tenant.Usage{Requests: 7}},
	}, all.Tenants)
}
