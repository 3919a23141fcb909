package store

import (
	"context"
	"fmt"
	"time"
)

// The maintenance jobs' statements (docs/retention.md). Each deletes or updates at
// most limit rows and returns how many it touched; the caller loops while batches
// come back full. They take now from the caller so tests can pin time, and compare
// cursors as (created_at, id) tuples, never ids alone (ids from brokers with skewed clocks misorder).

// minCursor is the lateral subquery giving a partition's lowest consumer-group
// cursor (NULL first: a group that never consumed holds everything back).
const minCursor = `
    SELECT pc.last_consumed_created_at AS cts, pc.last_consumed_id AS cid
    FROM queen.partition_consumers pc
    WHERE pc.partition_id = p.id
    ORDER BY pc.last_consumed_created_at ASC NULLS FIRST, pc.last_consumed_id ASC
    LIMIT 1`

// deleteVictims deletes the messages of the victims CTE (id column), records one
// retention_history row per partition with type $3, and returns the count.
const deleteVictims = `
del AS (
    DELETE FROM queen.messages m USING victims v WHERE m.id = v.id
    RETURNING m.partition_id
),
hist AS (
    INSERT INTO queen.retention_history (partition_id, messages_deleted, retention_type, executed_at)
    SELECT d.partition_id, count(*), $3, $1::timestamptz FROM del d GROUP BY d.partition_id
    RETURNING messages_deleted
)
SELECT coalesce(sum(messages_deleted), 0)::bigint FROM hist`

// sqlRetentionDelete: messages older than their queue's retentionSeconds, pending or
// not (queues with retentionEnabled). $1 now, $2 limit, $3 history type.
const sqlRetentionDelete = `
WITH parts AS (
    SELECT p.id AS pid, $1::timestamptz - make_interval(secs => q.retention_seconds) AS cutoff
    FROM queen.queues q
    JOIN queen.partitions p ON p.queue_id = q.id
    WHERE q.retention_enabled AND q.retention_seconds > 0
),
victims AS (
    SELECT v.id FROM parts CROSS JOIN LATERAL (
        SELECT m.id FROM queen.messages m
        WHERE m.partition_id = parts.pid AND m.created_at < parts.cutoff
        ORDER BY m.created_at, m.id
        LIMIT $2) v
    LIMIT $2
),` + deleteVictims

// sqlCompletedRetentionDelete: messages older than completedRetentionSeconds that
// every consumer group of their partition has consumed (at or before the lowest
// cursor); a partition no group touched, or one with a group that never consumed,
// is left alone, and so is one that a group registered on the queue (its wildcard
// pops) has no cursor on yet: that group will consume its messages. With $4 (a DLQ
// keep interval) set, a message with a dead-letter entry younger than it stays, so
// the DLQ remains readable. $1 now, $2 limit, $3 type.
const sqlCompletedRetentionDelete = `
WITH parts AS (
    SELECT p.id AS pid, $1::timestamptz - make_interval(secs => q.completed_retention_seconds) AS cutoff,
           c.cts, c.cid
    FROM queen.queues q
    JOIN queen.partitions p ON p.queue_id = q.id
    CROSS JOIN LATERAL (` + minCursor + `) c
    WHERE q.retention_enabled AND q.completed_retention_seconds > 0 AND c.cts IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM queen.queue_consumers r
                      WHERE r.queue_id = q.id
                        AND NOT EXISTS (SELECT 1 FROM queen.partition_consumers pc
                                        WHERE pc.partition_id = p.id AND pc.consumer_group = r.consumer_group))
),
victims AS (
    SELECT v.id FROM parts CROSS JOIN LATERAL (
        SELECT m.id FROM queen.messages m
        WHERE m.partition_id = parts.pid AND m.created_at < parts.cutoff
          AND (m.created_at, m.id) <= (parts.cts, parts.cid)
          AND ($4::interval IS NULL OR NOT EXISTS (
                SELECT 1 FROM queen.dead_letter_queue d
                WHERE d.message_id = m.id AND d.failed_at > $1::timestamptz - $4::interval))
        ORDER BY m.created_at, m.id
        LIMIT $2) v
    LIMIT $2
),` + deleteVictims

// History types written to retention_history (read by /analytics/retention).
const (
	historyRetention          = "retention"
	historyCompletedRetention = "completed_retention"
	historyEviction           = "max_wait_time_eviction"
)

// RetentionDeleteBatch deletes up to limit messages older than their queue's
// retentionSeconds (retentionEnabled queues), whether consumed or not.
func (s *Store) RetentionDeleteBatch(ctx context.Context, now time.Time, limit int) (int64, error) {
	return s.countRow(ctx, "retention delete", sqlRetentionDelete, now, limit, historyRetention)
}

// CompletedRetentionDeleteBatch deletes up to limit messages older than their
// queue's completedRetentionSeconds that every consumer group has consumed.
// dlqKeep > 0 keeps messages with a dead-letter entry younger than it.
func (s *Store) CompletedRetentionDeleteBatch(ctx context.Context, now time.Time, limit int, dlqKeep time.Duration) (int64, error) {
	var keep any
	if dlqKeep > 0 {
		keep = dlqKeep
	}
	return s.countRow(ctx, "completed retention delete", sqlCompletedRetentionDelete, now, limit, historyCompletedRetention, keep)
}

// EvictionDeleteBatch deletes up to limit messages that waited longer than their
// queue's maxWaitTimeSeconds without being consumed by every group.
// A partition a pop is claiming, or one with a live lease, is skipped (queen.evict_q1).
func (s *Store) EvictionDeleteBatch(ctx context.Context, now time.Time, limit int) (int64, error) {
	return s.countRow(ctx, "eviction delete", `SELECT queen.evict_q1($1, $2, $3)`, now, limit, historyEviction)
}

// DLQDeleteBatch deletes up to limit dead-letter entries that failed before
// before. The messages stay (retention decides about them).
func (s *Store) DLQDeleteBatch(ctx context.Context, before time.Time, limit int) (int64, error) {
	return s.countRow(ctx, "dlq delete", `
WITH v AS (SELECT d.id FROM queen.dead_letter_queue d WHERE d.failed_at < $1 ORDER BY d.failed_at LIMIT $2),
del AS (DELETE FROM queen.dead_letter_queue d USING v WHERE d.id = v.id RETURNING 1)
SELECT count(*) FROM del`, before, limit)
}

// PartitionCleanupBatch deletes up to limit partitions without messages and without
// activity since before (see queen.partition_cleanup_q1).
func (s *Store) PartitionCleanupBatch(ctx context.Context, before time.Time, limit int) (int64, error) {
	return s.countRow(ctx, "partition cleanup", `SELECT queen.partition_cleanup_q1($1, $2)`, before, limit)
}

// ConsumerStateCleanupBatch deletes up to limit watermarks and up to limit
// subscription rows that name a queue that no longer exists (an upstream broker's
// queue deletion leaves them behind), and up to limit registrations of wildcard
// consumers that have not popped their queue for an hour (queen.ready_expire_q1).
func (s *Store) ConsumerStateCleanupBatch(ctx context.Context, limit int) (int64, error) {
	return s.countRow(ctx, "consumer state cleanup", `
WITH w AS (
    DELETE FROM queen.consumer_watermarks cw
    WHERE (cw.queue_name, cw.consumer_group) IN (
        SELECT x.queue_name, x.consumer_group FROM queen.consumer_watermarks x
        WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.name = x.queue_name)
        LIMIT $1)
    RETURNING 1
),
m AS (
    DELETE FROM queen.consumer_groups_metadata g
    WHERE g.id IN (
        SELECT x.id FROM queen.consumer_groups_metadata x
        WHERE x.queue_name <> '' AND NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.name = x.queue_name)
        LIMIT $1)
    RETURNING 1
),
r AS (
    SELECT queen.ready_expire_q1(now() - interval '1 hour', $1::integer) AS n
)
SELECT (SELECT count(*) FROM w) + (SELECT count(*) FROM m) + (SELECT n FROM r)`, limit)
}

// LeaseReclaimBatch clears up to limit leases that expired before before: holder,
// expiry and batch bookkeeping go back to "no lease", so the consumer-group views show
// no stale worker. The cursor and the retry counter are untouched: the next pop
// redelivers from the cursor exactly as it would take over the expired lease.
func (s *Store) LeaseReclaimBatch(ctx context.Context, before time.Time, limit int) (int64, error) {
	return s.countRow(ctx, "lease reclaim", `
WITH v AS (
    SELECT pc.id FROM queen.partition_consumers pc
    WHERE pc.worker_id IS NOT NULL AND pc.lease_expires_at < $1
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
u AS (
    UPDATE queen.partition_consumers pc
       SET `+sqlLeaseCleared+`
      FROM v
     WHERE pc.id = v.id AND pc.worker_id IS NOT NULL AND pc.lease_expires_at < $1
    RETURNING pc.partition_id, pc.consumer_group
),`+sqlLeasesReleased, before, limit)
}

// sqlLeaseCleared is the SET list of a cursor row whose lease is cleared: holder,
// expiry and batch bookkeeping back to "no lease"; cursor and retry counter untouched.
const sqlLeaseCleared = `lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL, batch_size = 0, acked_count = 0`

// sqlLeasesReleased ends a statement whose CTE u cleared leases (returning partition_id,
// consumer_group): the ready rows that waited for them are claimable now (the broker's
// clock may run ahead of the database's), and it returns how many it cleared.
const sqlLeasesReleased = `
r AS (
    UPDATE queen.partition_ready r SET ready_at = now()
      FROM u
     WHERE r.partition_id = u.partition_id AND r.consumer_group = u.consumer_group AND r.ready_at > now()
)
SELECT count(*) FROM u`

// metricsTables are the per-minute analytics tables and the retention history, with
// their time column: queen's own activity tables and consumer-lag samples, then
// upstream's analytics tables, which an adopted database keeps (upstream's partition
// triggers still add to queue_lag_metrics; messages_consumed holds upstream's acks) and
// which upstream's own cleanup trims only in part. Each time column is indexed.
var metricsTables = []struct{ table, column string }{
	{"queue_activity", "bucket_time"},
	{"worker_activity", "bucket_time"},
	{"queue_parked_activity", "bucket_time"},
	{"system_activity", "bucket_time"},
	{"retention_history", "executed_at"},
	{"consumer_lag_history", "bucket_time"},
	{"queue_lag_metrics", "bucket_time"},
	{"worker_metrics", "bucket_time"},
	{"queue_parked_replica", "bucket_time"},
	{"system_metrics", `"timestamp"`},
	{"messages_consumed", "acked_at"},
}

// MetricsTables names the tables MetricsDeleteBatch cleans, in its order.
func MetricsTables() []string {
	names := make([]string, len(metricsTables))
	for i, t := range metricsTables {
		names[i] = t.table
	}
	return names
}

// MetricsDeleteBatch deletes up to limit rows older than before from table (one of
// MetricsTables).
func (s *Store) MetricsDeleteBatch(ctx context.Context, table string, before time.Time, limit int) (int64, error) {
	for _, t := range metricsTables {
		if t.table == table {
			sql := fmt.Sprintf(`
WITH del AS (
    DELETE FROM queen.%[1]s WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM queen.%[1]s WHERE %[2]s < $1 LIMIT $2))
    RETURNING 1
)
SELECT count(*) FROM del`, t.table, t.column)
			return s.countRow(ctx, "metrics cleanup "+table, sql, before, limit)
		}
	}
	return 0, fmt.Errorf("store: metrics cleanup: unknown table %q", table)
}

// countRow runs sql, which returns one count.
func (s *Store) countRow(ctx context.Context, what, sql string, args ...any) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: %s: %w", what, interpretError(err))
	}
	return n, nil
}
