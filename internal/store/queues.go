package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// QueueConfigure upserts a queue, replacing every option, and
// returns the queue id and the id of its Default partition. The options are recorded as
// set through queen, so the ttl and retryDelay stored are applied ([queue.Enforced]).
func (s *Store) QueueConfigure(ctx context.Context, q queue.Queue) (queueID, partitionID string, err error) {
	opts, err := json.Marshal(optionsRecord(q.Options))
	if err != nil {
		return "", "", fmt.Errorf("store: encode options: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT o_queue_id::text, o_partition_id::text FROM queen.configure_q1($1, $2, $3, $4::jsonb)`,
		q.Name, q.Namespace, q.Task, string(opts)).Scan(&queueID, &partitionID)
	return queueID, partitionID, interpretError(err)
}

// optionsRecord is the options object queen records in queues.queen_options, keyed by
// the names configure accepts. The last four options live only there.
func optionsRecord(o queue.Options) map[string]any {
	return map[string]any{
		"priority": o.Priority, "leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit,
		"retryDelay": o.RetryDelay, "ttl": o.TTL, "deadLetterQueue": o.DeadLetterQueue,
		"dlqAfterMaxRetries": o.DLQAfterMaxRetries, "delayedProcessing": o.DelayedProcessing,
		"windowBuffer": o.WindowBuffer, "retentionSeconds": o.RetentionSeconds,
		"completedRetentionSeconds": o.CompletedRetentionSeconds, "retentionEnabled": o.RetentionEnabled,
		"encryptionEnabled": o.EncryptionEnabled, "maxWaitTimeSeconds": o.MaxWaitTimeSeconds,
		"maxSize": o.MaxSize, "minPopWaitTime": o.MinPopWaitTime, "dedupWindowSeconds": o.DedupWindowSeconds,
		"retentionSinkHold": o.RetentionSinkHold, "retentionSinkHoldMaxSeconds": o.RetentionSinkHoldMaxSeconds,
		recordDLQOff: !o.DeadLetterQueue && !o.DLQAfterMaxRetries,
	}
}

// recordDLQOff is the options record's key for "both dead-letter flags are false":
// written whenever a configure sets either flag, and read by queen.dlq_off_q1 (the
// acks drop what they would dead-letter) and by sqlQueueColumns.
const recordDLQOff = "dlqOff"

// QueueDelete deletes a queue with its partitions, messages, cursors and subscriptions;
// existed reports whether there was such a queue.
func (s *Store) QueueDelete(ctx context.Context, name string) (existed bool, err error) {
	err = retryRaced(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT queen.delete_queue_q1($1)`, name).Scan(&existed)
	})
	return existed, interpretError(err)
}

const sqlQueueColumns = `q.id::text, q.name, coalesce(q.namespace, ''), coalesce(q.task, ''),
       coalesce(q.priority, 0), coalesce(q.lease_time, 300), coalesce(q.retry_limit, 3),
       coalesce(q.retry_delay, 1000), coalesce(q.max_queue_size, 0), coalesce(q.ttl, 3600),
       -- The dead-letter flags as queen applies them (both false exactly when
       -- queen.dlq_off_q1 says the queue drops): as stored once queen's configure set
       -- them (it records dlqOff), else true (upstream stores false by default and
       -- always dead-letters; so does a queue whose both columns an upstream broker
       -- set false after queen's configure had left the dead-letter queue on).
       CASE WHEN q.queen_options ? 'dlqOff' AND (q.dead_letter_queue OR q.dlq_after_max_retries
                                                  OR queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options))
            THEN coalesce(q.dead_letter_queue, false) ELSE true END,
       CASE WHEN q.queen_options ? 'dlqOff' AND (q.dead_letter_queue OR q.dlq_after_max_retries
                                                  OR queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options))
            THEN coalesce(q.dlq_after_max_retries, false) ELSE true END,
       coalesce(q.delayed_processing, 0), coalesce(q.window_buffer, 0),
       coalesce(q.retention_seconds, 0), coalesce(q.completed_retention_seconds, 0),
       coalesce(q.retention_enabled, false), coalesce(q.encryption_enabled, false),
       coalesce(q.max_wait_time_seconds, 0), coalesce(q.created_at, now()),
       coalesce((q.queen_options ->> 'minPopWaitTime')::integer, 0),
       coalesce((q.queen_options ->> 'dedupWindowSeconds')::integer, 3600),
       coalesce(q.queen_options ->> 'retentionSinkHold', ''),
       coalesce((q.queen_options ->> 'retentionSinkHoldMaxSeconds')::integer, 604800),
       queen.enforced_option_q1(q.ttl, q.queen_options, 'ttl') = coalesce(q.ttl, 3600),
       queen.enforced_option_q1(q.retry_delay, q.queen_options, 'retryDelay') = coalesce(q.retry_delay, 1000),
       queen.enforced_option_q1(q.max_queue_size, q.queen_options, 'maxSize') = coalesce(q.max_queue_size, 0)`

// scanQueue scans a row of sqlQueueColumns. An option counts as enforced when the value
// pop and ack apply is the stored one shown.
func scanQueue(row pgx.Row, qi *queue.QueueInfo) error {
	o := &qi.Options
	return row.Scan(&qi.ID, &qi.Name, &qi.Namespace, &qi.Task, &o.Priority, &o.LeaseTime, &o.RetryLimit,
		&o.RetryDelay, &o.MaxSize, &o.TTL, &o.DeadLetterQueue, &o.DLQAfterMaxRetries, &o.DelayedProcessing,
		&o.WindowBuffer, &o.RetentionSeconds, &o.CompletedRetentionSeconds, &o.RetentionEnabled,
		&o.EncryptionEnabled, &o.MaxWaitTimeSeconds, &qi.CreatedAt, &o.MinPopWaitTime, &o.DedupWindowSeconds,
		&o.RetentionSinkHold, &o.RetentionSinkHoldMaxSeconds, &qi.Enforced.TTL, &qi.Enforced.RetryDelay,
		&qi.Enforced.MaxSize)
}

// QueueGet returns one queue's configuration (queue.ErrNotFound when absent).
func (s *Store) QueueGet(ctx context.Context, name string) (queue.QueueInfo, error) {
	var qi queue.QueueInfo
	err := scanQueue(s.pool.QueryRow(ctx, `SELECT `+sqlQueueColumns+` FROM queen.queues q WHERE q.name = $1`, name), &qi)
	if err != nil {
		return qi, interpretError(err)
	}
	qi.CreatedAt = qi.CreatedAt.UTC()
	return qi, nil
}

// sqlPartitionCounters computes live counters per partition of one queue from the
// queue-mode cursor. It scans the queue's messages: bounded by the queue size. The
// dead-lettered are the distinct messages queue mode dead-lettered and has not been
// sought back before (the cursor passed them): so that pending, processing, completed
// and dead-lettered add up to the total, and a message another group dead-lettered
// stays pending here until queue mode consumes it. Each dead letter's message is
// looked up by its id in a subquery of its own: joined, the planner could walk every
// message of the database once per partition (4 s for a queue of 5 000 partitions
// with one dead letter).
const sqlPartitionCounters = `
SELECT p.id::text, p.name, coalesce(p.created_at, now()),
       coalesce(c.total, 0), coalesce(c.unconsumed, 0),
       (pc.worker_id IS NOT NULL AND pc.lease_expires_at > now()) AS leased,
       coalesce(pc.batch_size, 0) - coalesce(pc.acked_count, 0),
       (SELECT count(DISTINCT d.message_id) FROM queen.dead_letter_queue d
        WHERE d.partition_id = p.id AND d.consumer_group = '__QUEUE_MODE__'
          AND (SELECT (m.created_at, m.id) <= (pc.last_consumed_created_at, pc.last_consumed_id)
               FROM queen.messages m WHERE m.id = d.message_id)),
       c.oldest, c.newest
FROM queen.partitions p
LEFT JOIN queen.partition_consumers pc
       ON pc.partition_id = p.id AND pc.consumer_group = '__QUEUE_MODE__'
LEFT JOIN LATERAL (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE pc.last_consumed_created_at IS NULL
                            OR (m.created_at, m.id) > (pc.last_consumed_created_at, pc.last_consumed_id)) AS unconsumed,
           min(m.created_at) AS oldest, max(m.created_at) AS newest
    FROM queen.messages m WHERE m.partition_id = p.id
) c ON true
WHERE p.queue_id = $1::uuid
ORDER BY p.name`

// QueuePartitions returns the partitions of a queue with their counters.
func (s *Store) QueuePartitions(ctx context.Context, queueID string) ([]queue.PartitionInfo, error) {
	rows, err := s.pool.Query(ctx, sqlPartitionCounters, queueID)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []queue.PartitionInfo
	for rows.Next() {
		var p queue.PartitionInfo
		var unconsumed, inFlight, dlq int64
		var leased bool
		var oldest, newest *time.Time
		if err := rows.Scan(&p.ID, &p.Name, &p.CreatedAt, &p.Counters.Total, &unconsumed, &leased,
			&inFlight, &dlq, &oldest, &newest); err != nil {
			return nil, interpretError(err)
		}
		p.CreatedAt = p.CreatedAt.UTC()
		c := &p.Counters
		if leased {
			c.Processing = min(max(inFlight, 0), unconsumed)
		}
		c.Pending = unconsumed - c.Processing
		c.DeadLetter, c.Failed = dlq, dlq
		c.Completed = max(c.Total-unconsumed-dlq, 0)
		p.OldestMessage, p.NewestMessage = utcPtr(oldest), utcPtr(newest)
		out = append(out, p)
	}
	return out, interpretError(rows.Err())
}

// QueueList returns every queue of the scope, newest first, with partition counts and
// counters.
func (s *Store) QueueList(ctx context.Context, sc queue.Scope) ([]queue.QueueInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sqlQueueColumns+` FROM queen.queues q
WHERE $1::text = '' OR starts_with(q.name::text, $1::text)
ORDER BY q.created_at DESC, q.name`, sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	var out []queue.QueueInfo
	for rows.Next() {
		var qi queue.QueueInfo
		if err := scanQueue(rows, &qi); err != nil {
			rows.Close()
			return nil, interpretError(err)
		}
		qi.CreatedAt = qi.CreatedAt.UTC()
		out = append(out, qi)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	for i := range out {
		parts, err := s.QueuePartitions(ctx, out[i].ID)
		if err != nil {
			return nil, err
		}
		out[i].PartitionCount = len(parts)
		for _, p := range parts {
			out[i].Totals.Add(p.Counters)
		}
	}
	return out, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// QueueEncryptionFlags returns encryption_enabled for each existing queue of names.
func (s *Store) QueueEncryptionFlags(ctx context.Context, names []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, coalesce(encryption_enabled, false) FROM queen.queues WHERE name = ANY ($1::text[])`, names)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make(map[string]bool, len(names))
	for rows.Next() {
		var name string
		var enc bool
		if err := rows.Scan(&name, &enc); err != nil {
			return nil, interpretError(err)
		}
		out[name] = enc
	}
	return out, interpretError(rows.Err())
}

// QueueNamesByTag returns the queues of the scope with the given namespace and/or task
// (an empty filter matches any), highest priority first, then by name. At most 1000.
func (s *Store) QueueNamesByTag(ctx context.Context, sc queue.Scope, namespace, task string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT name FROM queen.queues
		WHERE ($1 = '' OR namespace = $1) AND ($2 = '' OR task = $2)
		  AND ($3::text = '' OR starts_with(name::text, $3::text))
		ORDER BY coalesce(priority, 0) DESC, name LIMIT 1000`, namespace, task, sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, interpretError(err)
}
