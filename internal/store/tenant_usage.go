package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlTenantUsageRefresh recomputes queen.tenant_usage at $1 in one statement: the
// queues whose stored name starts with a tenant (a tenant id or a 1.x client's UUID,
// queen.tenant_of_q1) and ':', grouped by that tenant, with their partitions and one scan of their
// messages. A scheduled timer counts as the message it becomes (its payload's bytes),
// and the queue it names as one of the tenant's, so that timers are under the same
// quotas as pushes. Tenants with neither a queue nor a timer lose their row. It
// returns the number of tenants.
const sqlTenantUsageRefresh = `
WITH tq AS (
    SELECT q.id, queen.tenant_of_q1(q.name::text) AS tenant, queen.relative_name_q1(q.name::text) AS rel
    FROM queen.queues q
    WHERE queen.tenant_of_q1(q.name::text) IS NOT NULL
), tt AS (
    SELECT queen.tenant_of_q1(t.queue_name) AS tenant, queen.relative_name_q1(t.queue_name) AS rel,
           octet_length(t.payload) AS b
    FROM queen.message_timers t
    WHERE queen.tenant_of_q1(t.queue_name) IS NOT NULL
), tp AS (
    SELECT tq.tenant, p.id FROM tq JOIN queen.partitions p ON p.queue_id = tq.id
), tm AS (
    SELECT s.tenant, sum(s.n)::bigint AS n, sum(s.b)::bigint AS b FROM (
        SELECT tp.tenant, count(*) AS n, coalesce(sum(pg_column_size(m.payload)), 0) AS b
        FROM tp JOIN queen.messages m ON m.partition_id = tp.id
        GROUP BY tp.tenant
        UNION ALL
        SELECT tt.tenant, count(*), coalesce(sum(tt.b), 0) FROM tt GROUP BY tt.tenant) s
    GROUP BY s.tenant
), tc AS (
    SELECT tp.tenant, count(*) AS n FROM tp GROUP BY tp.tenant
), fresh AS (
    SELECT n.tenant, array_agg(DISTINCT n.rel ORDER BY n.rel) AS queues
    FROM (SELECT tq.tenant, tq.rel FROM tq UNION ALL SELECT tt.tenant, tt.rel FROM tt) n
    GROUP BY n.tenant
), gone AS (
    DELETE FROM queen.tenant_usage u WHERE NOT EXISTS (SELECT 1 FROM fresh WHERE fresh.tenant = u.tenant)
), stamp AS (
    INSERT INTO queen.tenant_usage_state (id, computed_at) VALUES (true, $1)
    ON CONFLICT (id) DO UPDATE SET computed_at = excluded.computed_at
), up AS (
    INSERT INTO queen.tenant_usage AS u (tenant, queues, partitions, messages, bytes, computed_at)
    SELECT fresh.tenant, fresh.queues, coalesce(tc.n, 0), coalesce(tm.n, 0), coalesce(tm.b, 0), $1
    FROM fresh LEFT JOIN tc ON tc.tenant = fresh.tenant LEFT JOIN tm ON tm.tenant = fresh.tenant
    ON CONFLICT (tenant) DO UPDATE SET queues = excluded.queues, partitions = excluded.partitions,
        messages = excluded.messages, bytes = excluded.bytes, computed_at = excluded.computed_at
    RETURNING 1
)
SELECT count(*) FROM up`

// TenantUsageRefresh recomputes every tenant's usage as of now and returns the number
// of tenants. Its cost is one scan of the tenants' stored messages.
func (s *Store) TenantUsageRefresh(ctx context.Context, now time.Time) (int64, error) {
	return s.countRow(ctx, "tenant usage refresh", sqlTenantUsageRefresh, now)
}

// TenantUsageGet returns the usage last computed by TenantUsageRefresh, tenants by id;
// queue.ErrNotFound when it was never computed.
func (s *Store) TenantUsageGet(ctx context.Context) (queue.TenantUsageReport, error) {
	var rep queue.TenantUsageReport
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			err := tx.QueryRow(ctx, `SELECT computed_at FROM queen.tenant_usage_state WHERE id`).Scan(&rep.ComputedAt)
			if err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `SELECT tenant, queues, partitions, messages, bytes FROM queen.tenant_usage ORDER BY tenant`)
			if err != nil {
				return err
			}
			rep.Tenants, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.TenantUsage, error) {
				var u queue.TenantUsage
				return u, row.Scan(&u.Tenant, &u.Queues, &u.Partitions, &u.Messages, &u.Bytes)
			})
			return err
		})
	if err != nil {
		return queue.TenantUsageReport{}, fmt.Errorf("tenant usage: %w", interpretError(err))
	}
	rep.ComputedAt = rep.ComputedAt.UTC()
	return rep, nil
}
