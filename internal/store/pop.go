package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queenmq/queen/internal/queue"
)

// sqlPartitionClaim claims for a pop. Its first row may carry no message (o_id NULL):
// then o_flags says what the claim applied of the group's conflation policy
// (claimFlagConflation, claimFlagConflict), or that the group has none on the queue
// yet and nothing was claimed (claimFlagNoPolicy).
const sqlPartitionClaim = `SELECT o_partition_id::text, o_partition, o_id::text, o_transaction_id,
       coalesce(o_trace_id::text, ''), o_payload, coalesce(o_producer_sub, ''),
       coalesce(o_created_at, 'epoch'), coalesce(o_retry_count, 0),
       coalesce(o_traceparent, ''), coalesce(o_tracestate, ''), coalesce(o_flags, 0)
FROM queen.pop_q4($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                  -- queen.pop_commit ($14: 'async' or '') is set for the transaction
                  -- before the function runs: its arguments are evaluated first.
                  CASE WHEN set_config('queen.pop_commit', $14, true) IS NOT NULL THEN $11::double precision END,
                  $12, $13)`

// The flags of a claim's first row without a message.
const (
	claimFlagConflation = 1 // the group's conflation policy is applied: conflated delivery
	claimFlagConflict   = 2 // the pop asked for conflation otherwise than the group's policy
	claimFlagNoPolicy   = 4 // the group has no policy on the queue yet: nothing was claimed
)

// sqlGroupPolicyStore stores a group's policy on a queue unless it has one, in a
// transaction of its own.
const sqlGroupPolicyStore = `SELECT queen.group_policy_store_q1($1, $2, $3)`

// racedAttempts bounds how often retryRaced runs a statement.
const racedAttempts = 3

// retryRaced runs a statement again, up to racedAttempts times in all, when PostgreSQL
// aborted it as a deadlock victim or for a serialization failure (a pop locks a ready
// row, then the cursor row; an ack, a seek or a delete can take them the other way),
// or when it wrote a row for a queue, partition or message deleted meanwhile (or
// found its queue gone before it could lock it: errQueueVanished): the aborted
// statement took no effect, and the next run applies it or finds them gone.
func retryRaced(ctx context.Context, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		raced := isLockConflict(err) || isDeletedMeanwhile(err) || errors.Is(err, errQueueVanished)
		if err == nil || attempt == racedAttempts || !raced || ctx.Err() != nil {
			return err
		}
	}
}

// Claim runs one pop attempt: it claims partitions of req.Queue for
// req.ConsumerGroup under leaseID (for req.LeaseSeconds when above 0, else each
// queue's leaseTime) and returns their next messages (none is not an error), with what
// the claim applied of the consumer group's conflation policy. Long-polling is the
// caller's business.
//
// A group's first pop of a queue stores the policy it asks for (a conflation parameter
// of true: conflation; anything else: none) in a transaction of its own, committed
// before the claim, so that every pop and ack of the group, the first ones racing
// included, follows the one policy stored.
//
// Two pops that each claim several partitions of one queue can lock the partitions'
// ready rows in opposite orders; PostgreSQL then aborts one of them (deadlock_detected).
// The aborted statement changed nothing and returned nothing, so it runs again
// (retryRaced); so does one that raced the deletion of its queue (which then finds
// nothing).
func (s *Store) Claim(ctx context.Context, req queue.PopRequest, leaseID string) (queue.Claim, error) {
	var c queue.Claim
	err := retryRaced(ctx, func() error {
		for range racedAttempts {
			var noPolicy bool
			var err error
			if c, noPolicy, err = s.partitionClaimOnce(ctx, req, leaseID); err != nil || !noPolicy {
				return err
			}
			if _, err := s.pool.Exec(ctx, sqlGroupPolicyStore, req.Queue, req.ConsumerGroup, req.Conflation); err != nil {
				return interpretError(err)
			}
		}
		return nil // deleted each time before its claim: nothing claimed
	})
	return c, err
}

// isDeletedMeanwhile reports a statement aborted by a foreign-key violation (23503):
// it wrote a row (a registration, a cursor) for a queue or partition deleted after
// the statement read it. It took no effect; run again, it finds them gone.
func isDeletedMeanwhile(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// isLockConflict reports a statement aborted by deadlock_detected (40P01) or
// serialization_failure (40001): it took no effect, and running it again may succeed.
func isLockConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// subscriptionAge is how many seconds ago a pop arrived (0 for a zero time), measured
// on this process's monotonic clock: the claim subtracts it from the database's time,
// so the two machines' clocks need not agree.
func subscriptionAge(arrived time.Time) float64 {
	if arrived.IsZero() {
		return 0
	}
	return max(time.Since(arrived).Seconds(), 0)
}

// claimArgs are sqlPartitionClaim's arguments for req under leaseID.
func (s *Store) claimArgs(req queue.PopRequest, leaseID string) []any {
	var partition *string
	if req.Partition != "" {
		partition = &req.Partition
	}
	maxPartitions := req.Partitions
	if partition != nil || maxPartitions < 1 {
		maxPartitions = 1
	}
	return []any{req.Queue, partition, req.ConsumerGroup, leaseID, req.Batch, maxPartitions, req.AutoAck,
		req.SubscriptionMode, req.SubscriptionFrom, max(req.LeaseSeconds, 0), subscriptionAge(req.Arrived),
		req.Conflation, conflateWidth(req), s.popCommit}
}

// conflateWidth is how many partitions a pop of a conflating group claims, one message
// each: its partitions when the caller set them, else its batch, within 1..64.
func conflateWidth(req queue.PopRequest) int {
	w := req.Batch
	if req.PartitionsSet {
		w = req.Partitions
	}
	return min(max(w, 1), queue.MaxConflatePartitions)
}

// partitionClaimOnce runs one claim; noPolicy reports that the group has no policy on
// the queue yet, and that nothing was claimed.
func (s *Store) partitionClaimOnce(ctx context.Context, req queue.PopRequest, leaseID string) (c queue.Claim, noPolicy bool, err error) {
	rows, err := s.pool.Query(ctx, sqlPartitionClaim, s.claimArgs(req, leaseID)...)
	if err != nil {
		return queue.Claim{}, false, interpretError(err)
	}
	return scanClaim(rows, req)
}

// scanClaim reads what a claim for req answered, and closes rows; noPolicy reports
// that the group has no policy on the queue yet (nothing was claimed).
func scanClaim(rows pgx.Rows, req queue.PopRequest) (c queue.Claim, noPolicy bool, err error) {
	defer rows.Close()
	msgs := make([]queue.Message, 0, min(max(req.Batch, 1), 1000))
	// Unique values go to one text arena (ids) and one byte slab (payloads), set on the
	// messages after the last row, when neither moves any more.
	type spans struct{ id, txid, payload span }
	var text textArena
	var payloads []byte
	pos := make([]spans, 0, cap(msgs))
	var lastPID, lastPart, lastTrace, lastSub, lastParent, lastState string
	// Scan targets live across rows: their addresses escape into Scan.
	var pid, part, id, txid, trace, payload, sub, parent, state pgtype.DriverBytes
	var created time.Time
	var retries, flags int
	for rows.Next() {
		if err := rows.Scan(&pid, &part, &id, &txid, &trace, &payload, &sub, &created, &retries, &parent, &state, &flags); err != nil {
			return c, false, interpretError(err)
		}
		if id == nil { // the policy's row, first
			c.Conflation = flags&claimFlagConflation != 0
			c.ConflationConflict = flags&claimFlagConflict != 0
			noPolicy = flags&claimFlagNoPolicy != 0
			continue
		}
		m := queue.Message{RetryCount: retries}
		m.PartitionID = reuse(&lastPID, pid)
		m.Partition = reuse(&lastPart, part)
		m.TraceID = reuse(&lastTrace, trace)
		m.ProducerSub = reuse(&lastSub, sub)
		m.Traceparent = reuse(&lastParent, parent)
		m.Tracestate = reuse(&lastState, state)
		m.CreatedAt = created.UTC()
		m.Queue = req.Queue
		at := len(payloads)
		payloads = append(payloads, payload...)
		pos = append(pos, spans{id: text.add(id), txid: text.add(txid), payload: span{at, len(payloads)}})
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return c, false, interpretError(err)
	}
	all := text.strings()
	for i, p := range pos {
		msgs[i].ID = all[p.id.from:p.id.to]
		msgs[i].TransactionID = all[p.txid.from:p.txid.to]
		msgs[i].Payload = payloads[p.payload.from:p.payload.to:p.payload.to]
	}
	c.Messages = msgs
	return c, noPolicy, nil
}
