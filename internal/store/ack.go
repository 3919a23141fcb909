package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queenmq/queen/internal/queue"
)

const sqlMessageAckBatch = `SELECT o_idx, o_success, coalesce(o_error, ''), coalesce(o_queue, ''),
       coalesce(o_partition, ''), coalesce(o_lease_released, false), coalesce(o_dlq, false), coalesce(o_noop, false),
       o_conflated
FROM queen.ack_q4($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6)`

// MessageAckBatch applies acks (all of one consumer group, partition ids already
// validated as UUIDs, statuses normalised to completed, failed, retry or dlq) in one
// transaction and returns one result per ack, in input order.
//
// Acks of one partition by two replicas, beside the pops and the maintenance jobs
// that lock the same cursor and ready rows, can deadlock; PostgreSQL then aborts one
// statement. The aborted statement changed nothing (one statement is one transaction)
// and answered no row (the function returns its rows at its end), so it runs again
// (retryRaced); so does one that filed a dead letter for a message deleted meanwhile
// (23503), which the next run finds gone (unresolvable).
func (s *Store) MessageAckBatch(ctx context.Context, group string, acks []queue.Ack) ([]queue.AckResult, error) {
	if len(acks) == 0 {
		return []queue.AckResult{}, nil
	}
	var res []queue.AckResult
	err := retryRaced(ctx, func() (err error) {
		res, err = s.messageAckOnce(ctx, group, acks)
		return err
	})
	return res, err
}

// messageAckOnce applies acks once: the ack of a pop by the direct path when it
// applies (ack_direct.go), everything else by queen.ack_q4.
func (s *Store) messageAckOnce(ctx context.Context, group string, acks []queue.Ack) ([]queue.AckResult, error) {
	if ackDirectShaped(acks) {
		res, ok, err := s.messageAckDirect(ctx, group, acks)
		if err != nil {
			return nil, err
		}
		if ok {
			s.ackDirect.Add(1)
			return res, nil
		}
	}
	s.ackGeneral.Add(1)
	return s.messageAckBatchOnce(ctx, group, acks)
}

// AckPaths counts the ack batches MessageAckBatch applied by the direct path (the ack
// of a pop) and by queen.ack_q4 (the general path).
func (s *Store) AckPaths() (direct, general uint64) {
	return s.ackDirect.Load(), s.ackGeneral.Load()
}

func (s *Store) messageAckBatchOnce(ctx context.Context, group string, acks []queue.Ack) ([]queue.AckResult, error) {
	n := len(acks)
	txids := make([]string, n)
	for i, a := range acks {
		txids[i] = a.TransactionID
	}
	// A field with one value for every item (the ack of a pop: one partition, one
	// lease, all completed) is sent once.
	pids := ackField(acks, func(a *queue.Ack) string { return a.PartitionID })
	leases := ackField(acks, func(a *queue.Ack) string { return a.LeaseID })
	statuses := ackField(acks, func(a *queue.Ack) string { return a.Status })
	errs := ackField(acks, func(a *queue.Ack) string { return a.Error })
	rows, err := s.pool.Query(ctx, sqlMessageAckBatch, txids, pids, leases, statuses, errs, group)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	results := make([]queue.AckResult, n)
	seen := 0
	var lastErr, lastQueue, lastPart string
	// Scan targets live across rows: their addresses escape into Scan.
	var scanned queue.AckResult
	var errText, queueName, part pgtype.DriverBytes
	for rows.Next() {
		if err := rows.Scan(&scanned.Index, &scanned.Success, &errText, &queueName, &part, &scanned.LeaseReleased, &scanned.DLQ,
			&scanned.Noop, &scanned.Conflated); err != nil {
			return nil, interpretError(err)
		}
		r := scanned
		r.Error, r.QueueName, r.PartitionName = reuse(&lastErr, errText), reuse(&lastQueue, queueName), reuse(&lastPart, part)
		if r.Index == -1 && seen == 0 {
			// The whole batch in one row: every item succeeded in one partition, and
			// the last one released the lease if any did.
			released, kept := r.LeaseReleased != nil && *r.LeaseReleased, false
			for i := range results {
				r.Index, r.TransactionID, r.LeaseReleased = i, acks[i].TransactionID, &kept
				if released && i == n-1 {
					r.LeaseReleased = &released
				}
				results[i] = r
			}
			seen = n
			continue
		}
		if r.Index < 0 || r.Index >= n {
			return nil, fmt.Errorf("store: ack returned item index %d of %d", r.Index, n)
		}
		r.TransactionID = acks[r.Index].TransactionID
		results[r.Index] = r
		seen++
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if seen != n {
		return nil, fmt.Errorf("store: ack returned %d results for %d items", seen, n)
	}
	for i := range results {
		// Not checked here: a released partition may hold messages (a spare wake costs
		// the woken pop one claim; a missing one, its re-check interval).
		results[i].PartitionPending = results[i].LeaseReleased != nil && *results[i].LeaseReleased
	}
	return results, nil
}

// ackField returns field of every ack, or a single value when all acks have the same.
func ackField(acks []queue.Ack, field func(*queue.Ack) string) []string {
	first := field(&acks[0])
	for i := 1; i < len(acks); i++ {
		if field(&acks[i]) != first {
			out := make([]string, len(acks))
			for j := range acks {
				out[j] = field(&acks[j])
			}
			return out
		}
	}
	return []string{first}
}

const sqlLeaseExtend = `SELECT o_success, coalesce(o_error, ''), o_expires_at FROM queen.extend_lease_q1($1, $2)`

// LeaseExtend extends every live lease held under leaseID to at least now+seconds.
func (s *Store) LeaseExtend(ctx context.Context, leaseID string, seconds int) (queue.LeaseExtension, error) {
	res := queue.LeaseExtension{LeaseID: leaseID}
	var expires *time.Time
	err := s.pool.QueryRow(ctx, sqlLeaseExtend, leaseID, seconds).Scan(&res.Success, &res.Error, &expires)
	if err != nil {
		return res, interpretError(err)
	}
	if expires != nil {
		res.ExpiresAt = expires.UTC()
	}
	return res, nil
}

// LeaseGiveBack clears every lease held under leaseID (a claim whose answer reached no
// one): holder, expiry and batch bookkeeping go back to "no lease", and the partitions'
// ready rows are claimable at once. The cursor and the retry counter are untouched, as
// when a lease expires. It returns how many leases it cleared.
func (s *Store) LeaseGiveBack(ctx context.Context, leaseID string) (int64, error) {
	return s.countRow(ctx, "lease give-back", `
WITH u AS (
    UPDATE queen.partition_consumers pc SET `+sqlLeaseCleared+`
     WHERE pc.worker_id = $1
    RETURNING pc.partition_id, pc.consumer_group
),`+sqlLeasesReleased, leaseID)
}
