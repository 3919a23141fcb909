package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// QueueBacklog is the backlog of one queue as seen by its queue-mode cursor (the
// consumer group "__QUEUE_MODE__"), summed over its partitions.
type QueueBacklog struct {
	Name string
	// Total counts every stored message of the queue, consumed or not.
	Total int64
	// Pending counts messages past the queue-mode cursor that no active lease holds.
	Pending int64
	// Processing counts messages past the cursor held by an active queue-mode lease.
	Processing int64
	// DeadLetter counts the queue's dead-letter entries (every consumer group).
	DeadLetter int64
	// OldestPendingAge is how long ago the oldest message past the cursor (pending or
	// processing) was created, by the database clock; 0 when nothing is past it.
	OldestPendingAge time.Duration
}

// BacklogReading is one consistent reading of the backlog of every queue, for the
// cached gauges of /metrics/prometheus.
type BacklogReading struct {
	// Queues holds at most the limit passed to [Store.QueueBacklogList], by name.
	Queues []QueueBacklog
	// Truncated reports that more queues exist than Queues holds.
	Truncated bool
	// DeadLetterTotal counts every dead-letter entry of the cluster, truncated or not.
	DeadLetterTotal int64
	// Groups holds how far each consumer of each queue is behind (see
	// [Store.ConsumerGroupList]), at most the group limit passed to
	// [Store.QueueBacklogList], ordered by group then queue.
	Groups []queue.ConsumerGroupSummary
	// GroupsTruncated reports that more (group, queue) pairs exist than Groups holds.
	GroupsTruncated bool
	// SynchronousReplication reports that the server's commits wait for a synchronous
	// standby (synchronous_standby_names set, synchronous_commit on, remote_write or
	// remote_apply): what a failover needs to keep every acknowledged commit.
	SynchronousReplication bool
}

// sqlSynchronousReplication tells whether this session's commits wait for a
// synchronous standby; both settings are readable by any role.
const sqlSynchronousReplication = `SELECT current_setting('synchronous_standby_names') <> ''
    AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')`

// sqlQueueBacklog computes, for the first $1 queues by name, the queue-mode backlog
// with the rules of sqlPartitionCounters, plus the age of the oldest message past the
// cursor. The oldest message comes from one index probe per partition on
// (partition_id, created_at, id); the counts scan each partition's messages, which is
// why only a background job runs this. The cursor comparison is a plain row
// comparison (an absent cursor becomes -infinity) so that the probe can use the index.
const sqlQueueBacklog = `
WITH q AS (
    SELECT id, name FROM queen.queues ORDER BY name LIMIT $1
), part AS (
    SELECT q.name, c.total, c.unconsumed,
           CASE WHEN pc.worker_id IS NOT NULL AND pc.lease_expires_at > $2::timestamptz
                THEN least(greatest(coalesce(pc.batch_size, 0) - coalesce(pc.acked_count, 0), 0), c.unconsumed)
                ELSE 0 END AS processing,
           o.created_at AS oldest,
           d.n AS dlq
    FROM q
    LEFT JOIN queen.partitions p ON p.queue_id = q.id
    LEFT JOIN queen.partition_consumers pc
           ON pc.partition_id = p.id AND pc.consumer_group = '__QUEUE_MODE__'
    CROSS JOIN LATERAL (
        SELECT count(*) AS total,
               count(*) FILTER (WHERE (m.created_at, m.id) >
                   (coalesce(pc.last_consumed_created_at, '-infinity'),
                    coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'))) AS unconsumed
        FROM queen.messages m WHERE m.partition_id = p.id
    ) c
    LEFT JOIN LATERAL (
        SELECT m.created_at FROM queen.messages m
        WHERE m.partition_id = p.id
          AND (m.created_at, m.id) >
              (coalesce(pc.last_consumed_created_at, '-infinity'),
               coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'))
        ORDER BY m.created_at, m.id
        LIMIT 1
    ) o ON true
    CROSS JOIN LATERAL (
        SELECT count(*) AS n FROM queen.dead_letter_queue d WHERE d.partition_id = p.id
    ) d
)
SELECT name, sum(total)::bigint, sum(unconsumed)::bigint, sum(processing)::bigint, sum(dlq)::bigint,
       coalesce(extract(epoch FROM greatest($2::timestamptz - min(oldest), '0'::interval)), 0)::float8
FROM part
GROUP BY name
ORDER BY name`

// QueueBacklogList reads the backlog of the first limit queues by name, the
// cluster's dead-letter total and the lag of the first groupLimit (consumer group,
// queue) pairs, in one read-only snapshot. now is the instant leases
// and ages are judged at (pass time.Now(); tests pin it). It may scan every message
// of those queues: run it from a background job with a timeout, never on a request.
func (s *Store) QueueBacklogList(ctx context.Context, now time.Time, limit, groupLimit int) (BacklogReading, error) {
	var out BacklogReading
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, sqlQueueBacklog, limit+1, now)
			if err != nil {
				return err
			}
			out.Queues, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueBacklog, error) {
				var g QueueBacklog
				var unconsumed int64
				var age float64
				err := row.Scan(&g.Name, &g.Total, &unconsumed, &g.Processing, &g.DeadLetter, &age)
				g.Pending = unconsumed - g.Processing
				g.OldestPendingAge = time.Duration(age * float64(time.Second))
				return g, err
			})
			if err != nil {
				return err
			}
			if out.Groups, err = groupLag(ctx, tx, queue.Scope{}, nil, groupLimit+1); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, sqlSynchronousReplication).Scan(&out.SynchronousReplication); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT count(*) FROM queen.dead_letter_queue`).Scan(&out.DeadLetterTotal)
		})
	if err != nil {
		return BacklogReading{}, interpretError(err)
	}
	if len(out.Queues) > limit {
		out.Queues, out.Truncated = out.Queues[:limit], true
	}
	if len(out.Groups) > groupLimit {
		out.Groups, out.GroupsTruncated = out.Groups[:groupLimit], true
	}
	return out, nil
}

// PoolWaits reports how many connection acquisitions had to wait because the pool
// had no idle connection, and their cumulative wait, since the pool was opened.
func (s *Store) PoolWaits() (count int64, wait time.Duration) {
	st := s.pool.Stat()
	return st.EmptyAcquireCount(), st.EmptyAcquireWaitTime()
}
