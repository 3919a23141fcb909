package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Timer operations and their result statuses (the closed set of the timers API).
const (
	TimerOpSchedule = "schedule"
	TimerOpCancel   = "cancel"

	TimerScheduled   = "scheduled"
	TimerRescheduled = "rescheduled"
	TimerCancelled   = "cancelled"
	TimerAbsent      = "absent"
	TimerTooLate     = "too_late"
)

// TimerOp is one validated timer operation. Queue is the stored queue name (the
// tenant's prefix included). A schedule carries every field but HasTxn; a cancel
// needs only Queue and TimerKey, and Txn (HasTxn) is what an absent answer echoes.
type TimerOp struct {
	Op        string
	Queue     string
	TimerKey  string
	Partition string
	// Delay is how long after the database's now() the timer is due (may be negative).
	Delay       time.Duration
	Txn         string
	HasTxn      bool
	Payload     []byte
	PayloadZstd bool
	Encrypted   bool
	MessageID   string
	ProducerSub string
}

// TimerResult is the outcome of one TimerOp. Txn is nil when there is none to report
// (too_late, or an absent cancel without a txn); MessageID and DeliverAt are set for
// scheduled and rescheduled.
type TimerResult struct {
	Status    string
	Txn       *string
	MessageID string
	DeliverAt time.Time
}

// Timer is a stored timer as peek and list show it.
type Timer struct {
	Queue       string
	TimerKey    string
	Partition   string
	DueAt       time.Time
	Txn         string
	MessageID   string
	Payload     []byte
	PayloadZstd bool
	Encrypted   bool
	ProducerSub *string
	Attempts    int
	LastError   *string
	Claimed     bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

const sqlTimerUpsert = `
INSERT INTO queen.message_timers AS t (queue_name, timer_key, partition_name, due_at, txn, payload,
       payload_zstd, encrypted, message_id, producer_sub)
VALUES ($1, $2, $3, now() + make_interval(secs => $4::double precision / 1e6), $5, $6, $7, $8, $9::uuid, $10)
ON CONFLICT (queue_name, timer_key) DO UPDATE
   SET partition_name = excluded.partition_name, due_at = excluded.due_at, txn = excluded.txn,
       payload = excluded.payload, payload_zstd = excluded.payload_zstd, encrypted = excluded.encrypted,
       message_id = excluded.message_id, producer_sub = excluded.producer_sub, attempts = 0,
       last_error = NULL, claimed_until = NULL, claimed_by = NULL, updated_at = now()
 WHERE t.claimed_until IS NULL OR t.claimed_until <= now()
RETURNING (xmax = 0), due_at`

const sqlTimerCancel = `
DELETE FROM queen.message_timers
 WHERE queue_name = $1 AND timer_key = $2 AND (claimed_until IS NULL OR claimed_until <= now())
RETURNING txn`

const sqlTimerClaimed = `SELECT EXISTS (SELECT 1 FROM queen.message_timers WHERE queue_name = $1 AND timer_key = $2)`

// TimerApply runs ops in one transaction and returns one result per op, in order.
func (s *Store) TimerApply(ctx context.Context, ops []TimerOp) ([]TimerResult, error) {
	var out []TimerResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = TimerApplyTx(ctx, tx, ops)
		return err
	})
	if err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// TimerApplyTx runs validated ops (see broker.PrepareTimerOps) inside the caller's
// transaction tx, for the timers rider of /api/v1/transaction: they commit or roll
// back with it. Rows are locked in ascending (queue, timerKey) byte order, the one
// order of every path that locks several timer rows, so two calls never deadlock;
// results come back in op order. The caller wakes the firing loop after the commit.
func TimerApplyTx(ctx context.Context, tx pgx.Tx, ops []TimerOp) ([]TimerResult, error) {
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(ops[a].Queue, ops[b].Queue), strings.Compare(ops[a].TimerKey, ops[b].TimerKey))
	})
	out := make([]TimerResult, len(ops))
	for _, i := range order {
		res, err := timerApplyOne(ctx, tx, &ops[i])
		if err != nil {
			return nil, interpretError(err)
		}
		out[i] = res
	}
	return out, nil
}

func timerApplyOne(ctx context.Context, tx pgx.Tx, op *TimerOp) (TimerResult, error) {
	if op.Op == TimerOpCancel {
		var txn string
		err := tx.QueryRow(ctx, sqlTimerCancel, op.Queue, op.TimerKey).Scan(&txn)
		if err == nil {
			return TimerResult{Status: TimerCancelled, Txn: &txn}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return TimerResult{}, err
		}
		var exists bool
		if err := tx.QueryRow(ctx, sqlTimerClaimed, op.Queue, op.TimerKey).Scan(&exists); err != nil {
			return TimerResult{}, err
		}
		if exists {
			return TimerResult{Status: TimerTooLate}, nil
		}
		res := TimerResult{Status: TimerAbsent}
		if op.HasTxn {
			res.Txn = &op.Txn
		}
		return res, nil
	}
	var sub *string
	if op.ProducerSub != "" {
		sub = &op.ProducerSub
	}
	var inserted bool
	var due time.Time
	err := tx.QueryRow(ctx, sqlTimerUpsert, op.Queue, op.TimerKey, op.Partition, op.Delay.Microseconds(), op.Txn,
		op.Payload, op.PayloadZstd, op.Encrypted, op.MessageID, sub).Scan(&inserted, &due)
	if errors.Is(err, pgx.ErrNoRows) {
		return TimerResult{Status: TimerTooLate}, nil
	}
	if err != nil {
		return TimerResult{}, err
	}
	res := TimerResult{Status: TimerRescheduled, Txn: &op.Txn, MessageID: op.MessageID, DeliverAt: due}
	if inserted {
		res.Status = TimerScheduled
	}
	return res, nil
}

const sqlTimerColumns = `queue_name, timer_key, partition_name, due_at, txn, message_id::text, payload,
       payload_zstd, encrypted, producer_sub, attempts, last_error,
       coalesce(claimed_until > now(), false), created_at, updated_at`

func scanTimer(row pgx.Row) (Timer, error) {
	var t Timer
	err := row.Scan(&t.Queue, &t.TimerKey, &t.Partition, &t.DueAt, &t.Txn, &t.MessageID, &t.Payload,
		&t.PayloadZstd, &t.Encrypted, &t.ProducerSub, &t.Attempts, &t.LastError, &t.Claimed, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// TimerGet returns the timer (queueName, key), or queue.ErrNotFound.
func (s *Store) TimerGet(ctx context.Context, queueName, key string) (Timer, error) {
	t, err := scanTimer(s.pool.QueryRow(ctx, `SELECT `+sqlTimerColumns+`
FROM queen.message_timers WHERE queue_name = $1 AND timer_key = $2`, queueName, key))
	return t, interpretError(err)
}

// TimerList returns up to limit timers of queueName with a key after after (byte
// order; "" from the start), without their payloads, and whether more follow.
func (s *Store) TimerList(ctx context.Context, queueName, after string, limit int) ([]Timer, bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sqlTimerColumns+`
FROM queen.message_timers WHERE queue_name = $1 AND timer_key > $2 ORDER BY timer_key LIMIT $3`,
		queueName, after, limit+1)
	if err != nil {
		return nil, false, interpretError(err)
	}
	defer rows.Close()
	var out []Timer
	for rows.Next() {
		t, err := scanTimer(rows)
		if err != nil {
			return nil, false, interpretError(err)
		}
		t.Payload = nil
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, false, interpretError(err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// TimerCount counts the timers of queueName whose key starts with prefix (literally).
func (s *Store) TimerCount(ctx context.Context, queueName, prefix string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM queen.message_timers
WHERE queue_name = $1 AND starts_with(timer_key, $2)`, queueName, prefix).Scan(&n)
	return n, interpretError(err)
}

// DeadTimer is a timer that failed on every attempt, kept in
// queen.message_timers_dead (consumer group __timer__) for an operator.
type DeadTimer struct {
	ID          string
	Queue       string
	TimerKey    string
	Partition   string
	Txn         string
	MessageID   string
	PayloadZstd bool
	Encrypted   bool
	ProducerSub *string
	Attempts    int
	LastError   *string
	CreatedAt   time.Time
	FailedAt    time.Time
}

// TimerDeadList returns up to limit dead timers of queueName in (timerKey, id) order
// after the dead timer whose id is after ("" from the start; an unknown id is an empty
// page), without their payloads, and whether more follow.
func (s *Store) TimerDeadList(ctx context.Context, queueName, after string, limit int) ([]DeadTimer, bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text, queue_name, timer_key, partition_name, txn, message_id::text,
       payload_zstd, encrypted, producer_sub, retry_count, error_message, created_at, failed_at
  FROM queen.message_timers_dead d
 WHERE queue_name = $1
   AND ($2 = '' OR (timer_key, id) > (SELECT a.timer_key, a.id FROM queen.message_timers_dead a
                                          WHERE a.queue_name = $1 AND a.id::text = $2))
 ORDER BY timer_key, id LIMIT $3`, queueName, after, limit+1)
	if err != nil {
		return nil, false, interpretError(err)
	}
	defer rows.Close()
	var out []DeadTimer
	for rows.Next() {
		var d DeadTimer
		if err := rows.Scan(&d.ID, &d.Queue, &d.TimerKey, &d.Partition, &d.Txn, &d.MessageID, &d.PayloadZstd,
			&d.Encrypted, &d.ProducerSub, &d.Attempts, &d.LastError, &d.CreatedAt, &d.FailedAt); err != nil {
			return nil, false, interpretError(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, interpretError(err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
