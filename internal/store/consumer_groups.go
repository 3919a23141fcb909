package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlCursorLag selects the cursor rows of group $1 (NULL = every group) on the queues
// of the scope prefix $2 ("" = every queue) with their lag.
// A cursor's unconsumed messages are those after it or, when it is NULL, after the
// group's subscription timestamp (queen.subscription_stored_q1: a partition-specific
// subscription wins over the queue-wide one), or all of them for
// queue mode and groups without a subscription. Messages past the queue's ttl are left
// out when pop applies that ttl (queen.enforced_option_q1): pop never delivers them.
// The count is one range scan of idx_messages_partition_created per cursor, as long
// as the backlog.
const sqlCursorLag = `
SELECT pc.consumer_group::text AS grp, q.name::text AS qname, p.name::text AS pname, p.id AS pid,
       -- A lease a dead letter released keeps its holder, expiring at its start
       -- (queen.ack_dead_release_q1): it is no one's any more.
       CASE WHEN pc.lease_expires_at = pc.lease_acquired_at THEN '' ELSE coalesce(pc.worker_id, '') END AS worker_id,
       (pc.worker_id IS NOT NULL AND pc.lease_expires_at > now()) AS lease_active,
       pc.last_consumed_at, coalesce(pc.total_messages_consumed, 0) AS total_consumed,
       l.lag, l.oldest
FROM queen.partition_consumers pc
JOIN queen.partitions p ON p.id = pc.partition_id
JOIN queen.queues q ON q.id = p.queue_id
CROSS JOIN LATERAL (
    SELECT coalesce(pc.last_consumed_created_at,
                    CASE WHEN pc.consumer_group <> '__QUEUE_MODE__'
                         THEN queen.subscription_stored_q1(q.name, p.name, pc.consumer_group, NULL) END,
                    '-infinity') AS ts,
           CASE WHEN pc.last_consumed_created_at IS NULL THEN '00000000-0000-0000-0000-000000000000'::uuid
                ELSE pc.last_consumed_id END AS id,
           CASE WHEN queen.enforced_option_q1(q.ttl, q.queen_options, 'ttl') > 0
                THEN now() - make_interval(secs => q.ttl) ELSE '-infinity' END AS ttl_cut
) s
CROSS JOIN LATERAL (
    SELECT count(*) AS lag, min(m.created_at) AS oldest
    FROM queen.messages m
    WHERE m.partition_id = pc.partition_id
      AND (m.created_at, m.id) > (s.ts, s.id)
      AND m.created_at > s.ttl_cut
) l
WHERE ($1::text IS NULL OR pc.consumer_group = $1::text)
  AND ($2::text = '' OR starts_with(q.name::text, $2::text))
  -- A tenant sees its own groups and queue mode, not a global group reading its queue.
  AND ($2::text = '' OR pc.consumer_group = '__QUEUE_MODE__' OR starts_with(pc.consumer_group::text, $2::text))`

// sqlCursorLagList selects sqlCursorLag rows with their time lag in seconds.
const sqlCursorLagList = `
WITH c AS (` + sqlCursorLag + `)
SELECT c.grp, c.qname, c.pname, c.pid::text, c.worker_id, c.lease_active, c.last_consumed_at,
       c.total_consumed, c.lag, c.oldest, coalesce(extract(epoch FROM now() - c.oldest), 0)::float8 AS time_lag
FROM c`

// sqlCursorLagging selects the cursors whose oldest unconsumed message is more than $3
// seconds old, most lagging first; $4 caps the rows.
const sqlCursorLagging = sqlCursorLagList + `
WHERE c.oldest < now() - make_interval(secs => $3::float8)
ORDER BY c.oldest, c.lag DESC, c.grp, c.qname, c.pname
LIMIT $4`

// ConsumerGroupLagging returns the cursors (of every group, on the scope's queues)
// whose oldest unconsumed message is older than minLag, most lagging first, at most
// limit.
func (s *Store) ConsumerGroupLagging(ctx context.Context, sc queue.Scope, minLag time.Duration, limit int) ([]queue.ConsumerGroupCursor, error) {
	rows, err := s.pool.Query(ctx, sqlCursorLagging, nil, sc.Prefix(), minLag.Seconds(), limit)
	if err != nil {
		return nil, interpretError(err)
	}
	return collectCursorLag(rows)
}

// sqlGroupCursors selects the cursors of group $1 by queue and partition name; $3 caps
// the rows.
const sqlGroupCursors = sqlCursorLagList + `
ORDER BY c.qname, c.pname
LIMIT $3`

// sqlGroupSubscribedQueues lists the queues of the scope prefix $2 group $1 has a
// subscription or a wildcard registration (its pops of the queue, also before any
// claimed a partition) on; $3 caps the rows.
const sqlGroupSubscribedQueues = `
SELECT n FROM (
    SELECT md.queue_name::text AS n FROM queen.consumer_groups_metadata md
    WHERE md.consumer_group = $1 AND md.queue_name <> ''
    UNION
    SELECT q.name::text FROM queen.queue_consumers qc JOIN queen.queues q ON q.id = qc.queue_id
    WHERE qc.consumer_group = $1
) s
WHERE ($2::text = '' OR starts_with(s.n, $2::text))
ORDER BY 1
LIMIT $3`

// ConsumerGroupCursors returns one group's cursors on the scope's queues by queue (at
// most limit cursors), plus an empty entry for each such queue it is subscribed to
// without a cursor. An unknown group yields an empty map.
func (s *Store) ConsumerGroupCursors(ctx context.Context, sc queue.Scope, group string, limit int) (queue.ConsumerGroupDetail, error) {
	batch := &pgx.Batch{}
	batch.Queue(sqlGroupCursors, group, sc.Prefix(), limit)
	batch.Queue(sqlGroupSubscribedQueues, group, sc.Prefix(), limit)
	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()

	rows, err := br.Query()
	if err != nil {
		return nil, interpretError(err)
	}
	cursors, err := collectCursorLag(rows)
	if err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, interpretError(err)
	}
	subscribed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, interpretError(err)
	}
	out := make(queue.ConsumerGroupDetail)
	for _, name := range subscribed {
		out[name] = nil
	}
	for _, c := range cursors {
		out[c.Queue] = append(out[c.Queue], c)
	}
	return out, nil
}

func collectCursorLag(rows pgx.Rows) ([]queue.ConsumerGroupCursor, error) {
	defer rows.Close()
	var out []queue.ConsumerGroupCursor
	for rows.Next() {
		var c queue.ConsumerGroupCursor
		var lastConsumed, oldest *time.Time
		var lagSeconds float64
		if err := rows.Scan(&c.Group, &c.Queue, &c.Partition, &c.PartitionID, &c.WorkerID, &c.LeaseActive,
			&lastConsumed, &c.TotalConsumed, &c.OffsetLag, &oldest, &lagSeconds); err != nil {
			return nil, interpretError(err)
		}
		c.LastConsumedAt, c.OldestUnconsumedAt = utcPtr(lastConsumed), utcPtr(oldest)
		c.TimeLag = secondsDuration(lagSeconds)
		out = append(out, c)
	}
	return out, interpretError(rows.Err())
}

// secondsDuration converts a non-negative number of seconds from SQL into a Duration.
func secondsDuration(s float64) time.Duration {
	return time.Duration(max(s, 0) * float64(time.Second))
}

// sqlGroupDelete deletes group $1's cursors (and leases) on queue $2 (NULL = every
// queue) of the scope prefix $4 ("" = every queue), its watermarks, its registrations
// as a wildcard consumer with their ready rows, its conflation policies, and its
// subscriptions when $3.
// Returns the number of cursors deleted.
const sqlGroupDelete = `
WITH d AS (
    DELETE FROM queen.partition_consumers pc
    WHERE pc.consumer_group = $1::text
      AND (($2::text IS NULL AND $4::text = '') OR pc.partition_id IN (
           SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
           WHERE ($2::text IS NULL OR q.name = $2::text) AND starts_with(q.name::text, $4::text)))
    RETURNING 1
), w AS (
    DELETE FROM queen.consumer_watermarks w
    WHERE w.consumer_group = $1::text AND ($2::text IS NULL OR w.queue_name = $2::text)
      AND starts_with(w.queue_name::text, $4::text)
), md AS (
    DELETE FROM queen.consumer_groups_metadata md
    WHERE $3::boolean AND md.consumer_group = $1::text AND ($2::text IS NULL OR md.queue_name = $2::text)
      AND starts_with(md.queue_name::text, $4::text)
), qc AS (
    -- Without cursors the group starts over: its next wildcard pop registers it again
    -- and seeds its ready rows from scratch.
    DELETE FROM queen.queue_consumers c
    WHERE c.consumer_group = $1::text
      AND (($2::text IS NULL AND $4::text = '') OR c.queue_id IN (SELECT q.id FROM queen.queues q
           WHERE ($2::text IS NULL OR q.name = $2::text) AND starts_with(q.name::text, $4::text)))
), rd AS (
    DELETE FROM queen.partition_ready r
    WHERE r.consumer_group = $1::text
      AND (($2::text IS NULL AND $4::text = '') OR r.queue_id IN (SELECT q.id FROM queen.queues q
           WHERE ($2::text IS NULL OR q.name = $2::text) AND starts_with(q.name::text, $4::text)))
), gp AS (
    -- The group's policy goes with it: its next first pop stores what it asks.
    DELETE FROM queen.consumer_group_policies g
    WHERE g.consumer_group = $1::text
      AND (($2::text IS NULL AND $4::text = '') OR g.queue_id IN (SELECT q.id FROM queen.queues q
           WHERE ($2::text IS NULL OR q.name = $2::text) AND starts_with(q.name::text, $4::text)))
)
SELECT count(*)::int FROM d`

// ConsumerGroupDelete deletes a consumer group's cursors on queueName ("" = every
// queue of the scope), its watermarks and, with deleteMetadata, its subscriptions; it
// returns the number of cursors deleted.
func (s *Store) ConsumerGroupDelete(ctx context.Context, sc queue.Scope, group, queueName string, deleteMetadata bool) (int, error) {
	var q *string
	if queueName != "" {
		q = &queueName
	}
	var n int
	err := retryRaced(ctx, func() error {
		return s.pool.QueryRow(ctx, sqlGroupDelete, group, q, deleteMetadata, sc.Prefix()).Scan(&n)
	})
	return n, interpretError(err)
}

// sqlGroupSubscriptionUpdate sets the subscription timestamp of every subscription of
// group $1 on the queues of the scope prefix $3 ("" = every queue) to $2, deletes its
// watermarks and unregisters it as a wildcard consumer there (with its ready rows,
// which nothing keeps up to date meanwhile). Returns the number of subscriptions.
const sqlGroupSubscriptionUpdate = `
WITH u AS (
    UPDATE queen.consumer_groups_metadata md SET subscription_timestamp = $2
    WHERE md.consumer_group = $1 AND starts_with(md.queue_name::text, $3::text)
    RETURNING 1
), w AS (
    DELETE FROM queen.consumer_watermarks w
    WHERE w.consumer_group = $1 AND starts_with(w.queue_name::text, $3::text)
), qc AS (
    -- A subscription moved back exposes messages of partitions the group has no cursor
    -- on: its next wildcard pop registers it again and seeds its ready rows.
    DELETE FROM queen.queue_consumers c WHERE c.consumer_group = $1
      AND ($3::text = '' OR c.queue_id IN (SELECT q.id FROM queen.queues q WHERE starts_with(q.name::text, $3::text)))
), rd AS (
    DELETE FROM queen.partition_ready r WHERE r.consumer_group = $1
      AND ($3::text = '' OR r.queue_id IN (SELECT q.id FROM queen.queues q WHERE starts_with(q.name::text, $3::text)))
)
SELECT count(*)::int FROM u`

// ConsumerGroupSubscriptionUpdate moves every subscription of a group on the scope's
// queues to ts; it returns the number of subscriptions updated.
func (s *Store) ConsumerGroupSubscriptionUpdate(ctx context.Context, sc queue.Scope, group string, ts time.Time) (int, error) {
	var n int
	err := retryRaced(ctx, func() error { // a deadlock with a queue delete took no effect
		return s.pool.QueryRow(ctx, sqlGroupSubscriptionUpdate, group, ts, sc.Prefix()).Scan(&n)
	})
	return n, interpretError(err)
}

// ConsumerGroupSeek moves a consumer group's cursors on a queue (see
// queen.consumer_group_seek_q1) and returns the number of cursors written;
// queue.ErrNotFound when the queue does not exist.
func (s *Store) ConsumerGroupSeek(ctx context.Context, group, queueName string, seek queue.ConsumerGroupSeek) (int, error) {
	var ts *time.Time
	if !seek.ToEnd {
		ts = &seek.Timestamp
	}
	var n *int
	err := retryRaced(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT queen.consumer_group_seek_q1($1, $2, $3, $4)`,
			group, queueName, seek.ToEnd, ts).Scan(&n)
	})
	if err != nil {
		return 0, interpretError(err)
	}
	if n == nil {
		return 0, fmt.Errorf("%w: queue %q", queue.ErrNotFound, queueName)
	}
	return *n, nil
}

// ConsumerGroupPartitionSeek moves a consumer group's cursor on one partition to its newest
// message; queue.ErrNotFound when the queue or the partition does not exist.
func (s *Store) ConsumerGroupPartitionSeek(ctx context.Context, group, queueName, partition string) (queue.ConsumerGroupPartitionSeek, error) {
	var res queue.ConsumerGroupPartitionSeek
	var found bool
	var movedTo *time.Time
	err := retryRaced(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT o_found, o_updated, o_moved_to FROM queen.consumer_group_seek_partition_q1($1, $2, $3)`,
			group, queueName, partition).Scan(&found, &res.Updated, &movedTo)
	})
	if err != nil {
		return res, interpretError(err)
	}
	if !found {
		return res, fmt.Errorf("%w: partition %q of queue %q", queue.ErrNotFound, partition, queueName)
	}
	res.CursorMovedTo = utcPtr(movedTo)
	return res, nil
}
