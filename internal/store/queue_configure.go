package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlQueueEnsure creates a queue row that does not exist yet (the columns take their
// defaults, overwritten by sqlQueueWrite in the same transaction) and says whether it
// did. A concurrent configure of the same new queue waits here for the first to commit.
const sqlQueueEnsure = `INSERT INTO queen.queues (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING true`

// sqlQueueWrite stores a queue's namespace, task and every option column. $19 is
// the options record: with $20 it replaces queen_options, else it is merged over it,
// so an option configured before keeps its record (and a ttl or retryDelay upstream
// stored stays unapplied until named).
const sqlQueueWrite = `
UPDATE queen.queues SET namespace = $2, task = $3, priority = $4, lease_time = $5, retry_limit = $6,
    retry_delay = $7, max_queue_size = $8, ttl = $9, dead_letter_queue = $10, dlq_after_max_retries = $11,
    delayed_processing = $12, window_buffer = $13, retention_seconds = $14, completed_retention_seconds = $15,
    retention_enabled = $16, encryption_enabled = $17, max_wait_time_seconds = $18,
    queen_options = CASE WHEN $20::boolean THEN $19::jsonb ELSE coalesce(queen_options, '{}'::jsonb) || $19::jsonb END,
    updated_at = now()
WHERE id = $1::uuid`

// sqlQueueDefaultPartition makes sure the queue's Default partition exists and
// returns its id.
const sqlQueueDefaultPartition = `
WITH ins AS (
    INSERT INTO queen.partitions (queue_id, name) VALUES ($1::uuid, 'Default')
    ON CONFLICT (queue_id, name) DO NOTHING RETURNING id
)
SELECT id::text FROM ins
UNION ALL
SELECT id::text FROM queen.partitions WHERE queue_id = $1::uuid AND name = 'Default'
LIMIT 1`

// sqlQueueReadyRelease makes every ready row of queue $1 that waits for a later time
// claimable now.
const sqlQueueReadyRelease = `
UPDATE queen.partition_ready r SET ready_at = now()
 WHERE r.queue_id = $1::uuid AND r.ready_at > now()`

// sqlQueueRetryHoldsRelease ends the retryDelay holds of queue $1: a failed ack within
// retryLimit leaves its cursor row with a lease expiry in the future and no lease id,
// which claims skip until then. Run before sqlQueueReadyRelease, which then makes
// their ready rows claimable.
const sqlQueueRetryHoldsRelease = `
UPDATE queen.partition_consumers pc SET lease_expires_at = NULL
 WHERE pc.partition_id IN (SELECT p.id FROM queen.partitions p WHERE p.queue_id = $1::uuid)
   AND pc.worker_id IS NULL AND pc.lease_expires_at > now()`

// holdsChanged reports whether a configure changed an option for which pops park a
// partition's ready row until a later time (windowBuffer, delayedProcessing,
// retryDelay).
func holdsChanged(before, after queue.Options) bool {
	return before.WindowBuffer != after.WindowBuffer || before.DelayedProcessing != after.DelayedProcessing ||
		before.RetryDelay != after.RetryDelay
}

// configured is what a configure's check judges: the whole queue when it is new or
// replaced, else only what the request named (on the defaults), so a merge is never
// refused for a stored value it did not name (an adopted database's, or one an option
// needs the broker to have, such as encryption's key).
func configured(q queue.Queue, e queue.ConfigureEdit, full bool) queue.Queue {
	if full {
		return q
	}
	probe := queue.Queue{ID: q.ID, Name: q.Name, Options: queue.DefaultOptions()}
	if e.Namespace != nil {
		probe.Namespace = q.Namespace
	}
	if e.Task != nil {
		probe.Task = q.Task
	}
	if e.ApplyFunc != nil {
		e.ApplyFunc(&probe.Options)
	}
	return probe
}

// QueueConfigureEdit applies one configure in a transaction that holds the queue's
// row, so concurrent configures of a queue serialise and each merges onto the
// previous one's result. check sees the resulting queue (of a merge, only what it
// named) before anything is written; its error rolls everything back. A configure
// that lost a race with a delete of its queue (the row gone before it was locked, a
// deadlock) runs again. It returns the queue as now stored and the id of its Default
// partition.
func (s *Store) QueueConfigureEdit(ctx context.Context, e queue.ConfigureEdit,
	check func(queue.Queue) error,
) (queue.QueueInfo, string, error) {
	var qi queue.QueueInfo
	var partitionID string
	release, retryHolds := false, false
	err := retryRaced(ctx, func() error {
		return s.queueConfigureOnce(ctx, e, check, &qi, &partitionID, &release, &retryHolds)
	})
	if errors.Is(err, errQueueVanished) {
		err = fmt.Errorf("%w: queue %q was deleted while being configured", queue.ErrConflict, e.Name)
	}
	if err != nil {
		return qi, "", interpretError(err)
	}
	if release {
		// Pops parked the queue's ready rows until a hold of the old options ended: the
		// next pop of each decides again under the new ones. After the commit, in a
		// statement of its own, so that a lock conflict with a pop never fails the
		// configure; one that persists leaves the holds to end as they would have.
		err := retryRaced(ctx, func() error {
			if retryHolds {
				if _, err := s.pool.Exec(ctx, sqlQueueRetryHoldsRelease, qi.ID); err != nil {
					return err
				}
			}
			_, err := s.pool.Exec(ctx, sqlQueueReadyRelease, qi.ID)
			return err
		})
		if err != nil && !isLockConflict(err) {
			return qi, "", interpretError(err)
		}
	}
	qi.CreatedAt = qi.CreatedAt.UTC()
	return qi, partitionID, nil
}

// errQueueVanished is a configure that found its queue deleted between creating it (or
// finding it) and locking its row: it wrote nothing, and running it again creates it.
var errQueueVanished = errors.New("store: queue deleted during configure")

// queueConfigureOnce runs one configure transaction (see QueueConfigureEdit).
func (s *Store) queueConfigureOnce(ctx context.Context, e queue.ConfigureEdit, check func(queue.Queue) error,
	qi *queue.QueueInfo, partitionID *string, release, retryHolds *bool,
) error {
	*release, *retryHolds = false, false
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		created := false
		if err := tx.QueryRow(ctx, sqlQueueEnsure, e.Name).Scan(&created); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var cur queue.QueueInfo
		err := scanQueue(tx.QueryRow(ctx, `SELECT `+sqlQueueColumns+` FROM queen.queues q WHERE q.name = $1 FOR UPDATE`, e.Name), &cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return errQueueVanished
		}
		if err != nil {
			return err
		}
		q := cur.Queue
		full := created || e.Replace
		if full {
			q.Options, q.Namespace, q.Task = queue.DefaultOptions(), "", ""
		}
		if e.Namespace != nil {
			q.Namespace = *e.Namespace
		}
		if e.Task != nil {
			q.Task = *e.Task
		}
		if e.ApplyFunc != nil {
			e.ApplyFunc(&q.Options)
		}
		if err := check(configured(q, e, full)); err != nil {
			return err
		}
		record := optionsRecord(q.Options)
		if !full {
			named := make(map[string]any, len(e.Keys))
			for _, k := range e.Keys {
				if v, ok := record[k]; ok {
					named[k] = v
				}
				if k == "deadLetterQueue" || k == "dlqAfterMaxRetries" {
					named[recordDLQOff] = record[recordDLQOff]
				}
			}
			record = named
		}
		rec, err := json.Marshal(record)
		if err != nil {
			return fmt.Errorf("store: encode options: %w", err)
		}
		o := q.Options
		if _, err := tx.Exec(ctx, sqlQueueWrite, cur.ID, q.Namespace, q.Task, o.Priority, o.LeaseTime, o.RetryLimit,
			o.RetryDelay, o.MaxSize, o.TTL, o.DeadLetterQueue, o.DLQAfterMaxRetries, o.DelayedProcessing,
			o.WindowBuffer, o.RetentionSeconds, o.CompletedRetentionSeconds, o.RetentionEnabled,
			o.EncryptionEnabled, o.MaxWaitTimeSeconds, string(rec), full); err != nil {
			return err
		}
		*release = !created && holdsChanged(cur.Options, q.Options)
		*retryHolds = !created && cur.Options.RetryDelay != q.Options.RetryDelay
		if err := tx.QueryRow(ctx, sqlQueueDefaultPartition, cur.ID).Scan(partitionID); err != nil {
			return err
		}
		return scanQueue(tx.QueryRow(ctx, `SELECT `+sqlQueueColumns+` FROM queen.queues q WHERE q.id = $1::uuid`, cur.ID), qi)
	})
}
