package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func point(tenantID string, start time.Time, requests, messagesIn, stored int64) tenant.UsagePoint {
	return tenant.UsagePoint{Tenant: tenantID, Start: start,
		Usage: tenant.Usage{Requests: requests, MessagesIn: messagesIn, StoredMessages: stored}}
}

func TestUsageUpsertReplacesAndSeriesSums(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	m0, m1 := hour, hour.Add(time.Minute)

	require.NoError(t, b.store.UsageUpsert(ctx, "r1", nil))
	require.NoError(t, b.store.UsageUpsert(ctx, "r1", []tenant.UsagePoint{point("acme", m0, 1, 1, 5)}))
	// A re-flush of the same replica's minute replaces it: never double counted.
	require.NoError(t, b.store.UsageUpsert(ctx, "r1", []tenant.UsagePoint{point("acme", m0, 3, 30, 7), point("acme", m1, 1, 10, 7)}))
	// Another replica's count of the same minute adds up; gauges take the maximum.
	require.NoError(t, b.store.UsageUpsert(ctx, "r2", []tenant.UsagePoint{point("acme", m0, 2, 20, 4), point("beta", m0, 9, 0, 0)}))

	minutes, err := b.store.UsageSeries(ctx, "acme", hour, hour.Add(time.Hour), tenant.GranularityMinute)
	require.NoError(t, err)
	require.Equal(t, []tenant.UsagePoint{point("acme", m0, 5, 50, 7), point("acme", m1, 1, 10, 7)}, minutes)

	all, err := b.store.UsageSeries(ctx, "", hour, hour.Add(time.Hour), tenant.GranularityMinute)
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Equal(t, "beta", all[2].Tenant, "ordered by tenant and start")

	none, err := b.store.UsageSeries(ctx, "acme", m1, m1.Add(-time.Minute).Add(time.Hour), tenant.GranularityMinute)
	require.NoError(t, err)
	require.Equal(t, []tenant.UsagePoint{point("acme", m1, 1, 10, 7)}, none, "from is inclusive, the minute before is out")

	// Hours before any rollup come from the minutes.
	hours, err := b.store.UsageSeries(ctx, "acme", hour, hour.Add(time.Hour), tenant.GranularityHour)
	require.NoError(t, err)
	require.Equal(t, []tenant.UsagePoint{point("acme", hour, 6, 60, 7)}, hours)

	ran, err := b.store.UsageRollup(ctx, time.Now())
	require.NoError(t, err)
	require.True(t, ran)
	var rolled int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT requests FROM queen_proxy.usage_hour WHERE tenant_id = 'acme' AND hour = $1`,
		hour).Scan(&rolled))
	require.Equal(t, int64(6), rolled)

	// Once rolled up, an hour is read from usage_hour, and not counted twice.
	hours, err = b.store.UsageSeries(ctx, "acme", hour, hour.Add(time.Hour), tenant.GranularityHour)
	require.NoError(t, err)
	require.Equal(t, []tenant.UsagePoint{point("acme", hour, 6, 60, 7)}, hours)

	days, err := b.store.UsageSeries(ctx, "acme", tenant.GranularityDay.Truncate(hour), tenant.GranularityDay.Truncate(hour).Add(24*time.Hour),
		tenant.GranularityDay)
	require.NoError(t, err)
	require.Len(t, days, 1)
	require.Equal(t, tenant.GranularityDay.Truncate(hour), days[0].Start)
	require.Equal(t, int64(6), days[0].Requests)
}

func TestUsageRollupDeletesOldRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	now := time.Now().UTC()
	old := now.Add(-31 * 24 * time.Hour).Truncate(time.Minute)
	require.NoError(t, b.store.UsageUpsert(ctx, "r1", []tenant.UsagePoint{point("acme", old, 1, 0, 0),
		point("acme", now.Truncate(time.Minute), 1, 0, 0)}))
	ran, err := b.store.UsageRollup(ctx, now)
	require.NoError(t, err)
	require.True(t, ran)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM queen_proxy.usage_minute`).Scan(&n))
	require.Equal(t, 1, n, "minutes older than 30 days are deleted, the others kept")

	// Another replica holding the rollup lock: this one skips, without error.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(0x51504A42), int32(1))
	require.NoError(t, err)
	ran, err = b.store.UsageRollup(ctx, now)
	require.NoError(t, err)
	require.False(t, ran)
}

func TestReplicasAndLimiterSync(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	require.NoError(t, b.store.ReplicaHeartbeat(ctx, "r1", "host-a", time.Minute))
	require.NoError(t, b.store.ReplicaHeartbeat(ctx, "r2", "host-b", time.Minute))
	require.NoError(t, b.store.ReplicaHeartbeat(ctx, "r1", "host-a", time.Minute), "a second heartbeat updates the row")
	list, err := b.store.ReplicaList(ctx, time.Minute)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "r1", list[0].ID)
	require.Equal(t, "host-a", list[0].Instance)
	require.False(t, list[0].HeartbeatAt.Before(list[0].StartedAt))

	sync, err := b.store.LimiterSync(ctx, "r1", []store.Demand{{Tenant: "acme", Requests: 2, Messages: 10}}, time.Minute, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 2, sync.Replicas)
	require.Equal(t, store.Demand{Tenant: "acme", Requests: 2, Messages: 10}, sync.Total["acme"])
	sync, err = b.store.LimiterSync(ctx, "r2", []store.Demand{{Tenant: "acme", Requests: 3, Messages: 1}, {Tenant: "beta", Requests: 1}},
		time.Minute, time.Minute)
	require.NoError(t, err)
	require.Equal(t, store.Demand{Tenant: "acme", Requests: 5, Messages: 11}, sync.Total["acme"], "summed over replicas")
	require.Equal(t, store.Demand{Tenant: "beta", Requests: 1}, sync.Total["beta"])
	// r1 again: its own row is replaced, not added to.
	sync, err = b.store.LimiterSync(ctx, "r1", []store.Demand{{Tenant: "acme", Requests: 1}}, time.Minute, time.Minute)
	require.NoError(t, err)
	require.Equal(t, store.Demand{Tenant: "acme", Requests: 4, Messages: 1}, sync.Total["acme"])

	require.NoError(t, b.store.ReplicaDelete(ctx, "r2"))
	list, err = b.store.ReplicaList(ctx, time.Minute)
	require.NoError(t, err)
	require.Len(t, list, 1)
	sync, err = b.store.LimiterSync(ctx, "r1", []store.Demand{{Tenant: "acme", Requests: 1}}, time.Minute, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 1, sync.Replicas, "this replica alone")
	require.Equal(t, store.Demand{Tenant: "acme", Requests: 1}, sync.Total["acme"], "the deleted replica's demand is gone")
	require.NotContains(t, sync.Total, "beta")

	// Rows older than stale are forgotten at the next heartbeat.
	_, err = b.pool.Exec(ctx, `UPDATE queen_proxy.replicas SET heartbeat_at = now() - interval '1 hour' WHERE id = 'r1'`)
	require.NoError(t, err)
	list, err = b.store.ReplicaList(ctx, time.Minute)
	require.NoError(t, err)
	require.Empty(t, list, "not heard from within fresh")
	require.NoError(t, b.store.ReplicaHeartbeat(ctx, "r3", "host-c", time.Minute))
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM queen_proxy.replicas WHERE id = 'r1'`).Scan(&n))
	require.Zero(t, n)
}
