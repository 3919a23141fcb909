package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// TimerLockName names the firing loop's advisory lock ([JobLockID] of it, under
// [LockNamespaceJobs]): one replica fires at a time.
const TimerLockName = "timers"

// TimerLeadership is one firing cycle won by this replica: an open transaction
// holding the timers lock while the cycle's own statements run in short
// transactions of their own. Release it when the cycle ends.
type TimerLeadership struct {
	tx pgx.Tx
	s  *Store
}

// TimerLeadershipTry takes the timers lock without waiting. It returns ErrJobLocked
// when another replica is firing. hold bounds how long the cycle may keep it. Like a
// job's claim, it first waits for a claim slot (locks.go).
func (s *Store) TimerLeadershipTry(ctx context.Context, hold time.Duration) (*TimerLeadership, error) {
	if err := s.claimSlot(ctx); err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		s.claimDone()
		return nil, interpretError(err)
	}
	var got bool
	err = tx.QueryRow(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $3, true) IS NOT NULL
   AND pg_try_advisory_xact_lock($1, $2)`, LockNamespaceJobs, JobLockID(TimerLockName),
		fmt.Sprint(hold.Milliseconds())).Scan(&got)
	if err == nil && !got {
		err = ErrJobLocked
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		s.claimDone()
		return nil, interpretError(err)
	}
	return &TimerLeadership{tx: tx, s: s}, nil
}

// Release ends the cycle and frees the lock.
func (l *TimerLeadership) Release(ctx context.Context) {
	_ = l.tx.Rollback(context.WithoutCancel(ctx))
	l.s.claimDone()
}

// DueTimer is a timer claimed for firing.
type DueTimer struct {
	Queue, TimerKey, Partition, Txn, MessageID string
	DueAt                                      time.Time
	Payload                                    []byte
	PayloadZstd, Encrypted                     bool
	ProducerSub                                string
	Attempts                                   int
}

const sqlTimerClaimDue = `
UPDATE queen.message_timers t
   SET claimed_until = now() + make_interval(secs => $2::double precision), claimed_by = $1
  FROM (SELECT queue_name, timer_key FROM queen.message_timers
         WHERE due_at <= now() AND (claimed_until IS NULL OR claimed_until <= now())
         ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED) d
 WHERE t.queue_name = d.queue_name AND t.timer_key = d.timer_key
RETURNING t.queue_name, t.timer_key, t.partition_name, t.txn, t.message_id::text, t.due_at, t.payload,
          t.payload_zstd, t.encrypted, coalesce(t.producer_sub, ''), t.attempts`

// TimerClaimDue claims up to limit due, unclaimed timers for lease under token and
// returns them in due order (then message id, minted in schedule order).
func (s *Store) TimerClaimDue(ctx context.Context, token string, lease time.Duration, limit int) ([]DueTimer, error) {
	rows, err := s.pool.Query(ctx, sqlTimerClaimDue, token, lease.Seconds(), limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []DueTimer
	for rows.Next() {
		var d DueTimer
		if err := rows.Scan(&d.Queue, &d.TimerKey, &d.Partition, &d.Txn, &d.MessageID, &d.DueAt, &d.Payload,
			&d.PayloadZstd, &d.Encrypted, &d.ProducerSub, &d.Attempts); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	sortDue(out)
	return out, nil
}

// TimerNextDue returns when the earliest unclaimed timer is due, or ok false if none.
func (s *Store) TimerNextDue(ctx context.Context) (time.Duration, bool, error) {
	var wait *float64
	err := s.pool.QueryRow(ctx, `SELECT extract(epoch FROM min(due_at) - now())::double precision
FROM queen.message_timers WHERE claimed_until IS NULL OR claimed_until <= now()`).Scan(&wait)
	if err != nil || wait == nil {
		return 0, false, interpretError(err)
	}
	return time.Duration(*wait * float64(time.Second)), true, nil
}

// Timer firing outcomes besides success.
var (
	// ErrTimerLost means the claim is no longer this cycle's (the lease ran out and
	// another broker took the timer, or it was rescheduled or cancelled): nothing was
	// written.
	ErrTimerLost = errors.New("timer claim lost")
	// ErrTimerRefused means the queue did not take the message (full, or its
	// transaction id is already stored in the partition): a permanent failure.
	ErrTimerRefused = errors.New("timer message refused by the queue")
)

const sqlTimerTake = `DELETE FROM queen.message_timers WHERE queue_name = $1 AND timer_key = $2 AND claimed_by = $3`

// TimerFire deletes the claimed timer and appends its message (payload as given) in
// one transaction: the message exists if and only if the timer is gone. A timer's
// message is not deduplicated: when its txn is already stored in the partition (a
// reused txn, a reschedule after a fire), the message is appended with its message id
// as its transaction id instead, since a partition holds each transaction id once. A
// queue that refuses it (full, or that id taken too) makes ErrTimerRefused.
func (s *Store) TimerFire(ctx context.Context, token string, d *DueTimer, payload []byte) error {
	item := queue.PushItem{Queue: d.Queue, Partition: d.Partition, TransactionID: d.Txn, MessageID: d.MessageID,
		Payload: payload, ProducerSub: d.ProducerSub, Encrypted: d.Encrypted}
	items := []queue.PushItem{item}
	args := newPushArgs(items)
	item.TransactionID = d.MessageID
	again := []queue.PushItem{item}
	againArgs := newPushArgs(again)
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, sqlTimerTake, d.Queue, d.TimerKey, token)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return ErrTimerLost
			}
			res, err := messageInsertBatch(ctx, tx, items, args)
			if err == nil && res[0].Status == queue.StatusDuplicate && d.MessageID != "" && d.MessageID != d.Txn {
				res, err = messageInsertBatch(ctx, tx, again, againArgs)
			}
			if err != nil {
				return err
			}
			if res[0].Status != queue.StatusQueued {
				return fmt.Errorf("%w: %s", ErrTimerRefused, res[0].Status)
			}
			return nil
		})
		if err == nil || attempt == pushAttempts || !isPartitionRace(err) {
			if errors.Is(err, ErrTimerLost) || errors.Is(err, ErrTimerRefused) {
				return err
			}
			return interpretError(err)
		}
	}
}

// TimerFail records a permanent failure of a claimed timer: attempts+1, lastError,
// and due again after backoff, unclaimed. It returns the attempts now counted.
func (s *Store) TimerFail(ctx context.Context, token string, d *DueTimer, reason string, backoff time.Duration) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `UPDATE queen.message_timers
   SET attempts = attempts + 1, last_error = $4, due_at = now() + make_interval(secs => $5::double precision),
       claimed_until = NULL, claimed_by = NULL, updated_at = now()
 WHERE queue_name = $1 AND timer_key = $2 AND claimed_by = $3 RETURNING attempts`,
		d.Queue, d.TimerKey, token, reason, backoff.Seconds()).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrTimerLost
	}
	return n, interpretError(err)
}

// TimerRetryLater unclaims a timer after a transient failure: due again after
// delay, without counting an attempt.
func (s *Store) TimerRetryLater(ctx context.Context, token string, d *DueTimer, delay time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE queen.message_timers
   SET due_at = greatest(due_at, now() + make_interval(secs => $4::double precision)), claimed_until = NULL, claimed_by = NULL
 WHERE queue_name = $1 AND timer_key = $2 AND claimed_by = $3`, d.Queue, d.TimerKey, token, delay.Seconds())
	return interpretError(err)
}

// TimerReleaseClaims unclaims every timer still claimed under token (a cycle cut
// short by shutdown), so another broker fires them without waiting for the lease.
func (s *Store) TimerReleaseClaims(ctx context.Context, token string) error {
	_, err := s.pool.Exec(ctx, `UPDATE queen.message_timers SET claimed_until = NULL, claimed_by = NULL
 WHERE claimed_by = $1`, token)
	return interpretError(err)
}

// TimerBury moves a claimed timer that failed on every attempt to
// queen.message_timers_dead (consumer group __timer__, retry_count its attempts).
func (s *Store) TimerBury(ctx context.Context, token string, d *DueTimer, reason string, attempts int) error {
	_, err := s.pool.Exec(ctx, `WITH gone AS (
    DELETE FROM queen.message_timers WHERE queue_name = $1 AND timer_key = $2 AND claimed_by = $3 RETURNING *)
INSERT INTO queen.message_timers_dead (queue_name, timer_key, partition_name, txn, payload, payload_zstd, encrypted,
       message_id, producer_sub, retry_count, error_message, created_at)
SELECT queue_name, timer_key, partition_name, txn, payload, payload_zstd, encrypted, message_id, producer_sub,
       $4, $5, created_at FROM gone`, d.Queue, d.TimerKey, token, attempts, reason)
	return interpretError(err)
}

func sortDue(ts []DueTimer) {
	slices.SortStableFunc(ts, func(a, b DueTimer) int {
		if c := a.DueAt.Compare(b.DueAt); c != 0 {
			return c
		}
		return strings.Compare(a.MessageID, b.MessageID)
	})
}
