package maintenance_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/queue"
)

// TestTenancyUsageJob: the job exists only with an interval; a run counts each
// tenant's queues, partitions, stored messages (consumed ones included) and payload
// bytes, leaves global queues out, and drops a tenant whose queues are gone.
func TestTenancyUsageJob(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, j := range maintenance.Jobs(tb.st, tb.settings()) {
		require.NotEqual(t, maintenance.JobTenancyUsage, j.Name(), "no job without an interval")
	}
	s := tb.settings()
	s.TenancyUsageInterval = 30 * time.Second
	j := job(t, maintenance.Jobs(tb.st, s), maintenance.JobTenancyUsage)
	require.Equal(t, 30*time.Second, j.Interval())

	_, err := tb.st.TenantUsageGet(t.Context())
	require.ErrorIs(t, err, queue.ErrNotFound, "never computed")

	tb.push(t, "acme:orders", 3)
	tb.push(t, "acme:billing", 2)
	tb.push(t, "bob:orders", 1)
	tb.push(t, "plain", 4)
	tb.consume(t, "acme:orders", "", 2, queue.AckCompleted)

	res, err := j.RunOnce(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Rows, "two tenants")
	rep, err := tb.st.TenantUsageGet(t.Context())
	require.NoError(t, err)
	require.WithinDuration(t, tb.clock(), rep.ComputedAt, time.Millisecond)
	require.Len(t, rep.Tenants, 2)
	acme, bob := rep.Tenants[0], rep.Tenants[1]
	require.Equal(t, "acme", acme.Tenant)
	require.Equal(t, []string{"billing", "orders"}, acme.Queues)
	require.EqualValues(t, 2, acme.Partitions)
	require.EqualValues(t, 5, acme.Messages, "consumed messages still count until retention deletes them")
	var bytes int64
	require.NoError(t, tb.pool.QueryRow(t.Context(), `SELECT sum(pg_column_size(m.payload)) FROM queen.messages m
JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name LIKE 'acme:%'`).Scan(&bytes))
	require.Equal(t, bytes, acme.Bytes)
	require.Positive(t, acme.Bytes)
	require.Equal(t, "bob", bob.Tenant)
	require.EqualValues(t, 1, bob.Messages)

	_, err = tb.b.QueueDelete(t.Context(), "bob:orders")
	require.NoError(t, err)
	tb.advance(time.Minute)
	_, err = j.RunOnce(t.Context())
	require.NoError(t, err)
	rep, err = tb.st.TenantUsageGet(t.Context())
	require.NoError(t, err)
	require.Len(t, rep.Tenants, 1)
	require.Equal(t, "acme", rep.Tenants[0].Tenant)
	require.WithinDuration(t, tb.clock(), rep.ComputedAt, time.Millisecond)
}
