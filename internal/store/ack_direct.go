package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queenmq/queen/internal/queue"
)

// The direct ack: the ack of a pop (one partition, one lease value, every item
// completed) as three plain statements sent in one round trip and committed together,
// without queen.ack_q4, whose fast path they repeat. The first takes the
// (partition, group) lock and sets the plans for the transaction; the second locks the
// cursor row, checks that the batch names, in order, the messages right after the
// cursor and that the lease is live and its batch not exceeded, and moves the cursor
// (never back), releasing the lease with the item that completes the batch; the third
// settles the ready row from the cursor row as written. A batch that fails a check
// changes nothing and goes to queen.ack_q4, which answers every case.
//
// The ack of a pop may carry a claim (MessageAckClaim): a pop's own statement, sent
// after the three and run only when the ack applied and released its lease, so that
// the claim commits with the ack, in its transaction and its WAL flush.

// sqlAckLock takes the lock every ack of ($1 partition, $2 group) takes first, and
// restricts the transaction's plans to keyed ones (queen.keyed_plans_q1), generic.
const sqlAckLock = `SELECT pg_advisory_xact_lock(queen.ack_lock_key($1::uuid, $2)), queen.keyed_plans_q1(),
       set_config('plan_cache_mode', 'force_generic_plan', true)`

// sqlAckApply applies the ack of $3 (transaction ids, in order) under lease $4 (” for
// none) when it is the ack of a pop, and answers whether it did, the queue and
// partition names, whether the lease was released, and whether the group's conflation
// policy is on; it answers no row when the group has no cursor row there.
const sqlAckApply = `WITH c AS MATERIALIZED (
    SELECT c.id, q.name::text AS qname, p.name::text AS pname, c.worker_id, c.lease_expires_at,
           c.batch_size, c.acked_count, c.last_consumed_created_at AS cts, c.last_consumed_id AS cmid,
           coalesce(gp.conflation, false) AS conflate
    FROM queen.partition_consumers c
    JOIN queen.partitions p ON p.id = c.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    LEFT JOIN queen.consumer_group_policies gp ON gp.queue_id = q.id AND gp.consumer_group = $2
    WHERE c.partition_id = $1::uuid AND c.consumer_group = $2
    FOR UPDATE OF c
), w AS MATERIALIZED (
    -- The messages right after the cursor, in the scan's order.
    SELECT array_agg(x.id) AS mid, array_agg(x.created_at) AS mts, array_agg(x.transaction_id::text) AS wtx
    FROM c CROSS JOIN LATERAL (
        SELECT mm.id, mm.created_at, mm.transaction_id
        FROM queen.messages mm
        WHERE mm.partition_id = $1::uuid
          AND (mm.created_at, mm.id) > (coalesce(c.cts, '-infinity'::timestamptz),
                                        coalesce(c.cmid, '00000000-0000-0000-0000-000000000000'::uuid))
        ORDER BY mm.created_at, mm.id
        LIMIT cardinality($3::text[])) x
), v AS MATERIALIZED (
    SELECT c.id, c.qname, c.pname, c.cts, c.cmid, c.lease_expires_at, c.conflate, k.n, w.mid, w.mts,
           coalesce(w.wtx = $3::text[]
                    AND ($4 = '' OR (c.worker_id = $4 AND c.lease_expires_at > now()))
                    AND (coalesce(c.batch_size, 0) <= 0 OR k.n <= c.batch_size - coalesce(c.acked_count, 0)),
                    false) AS ok,
           c.cts IS NULL OR (w.mts[k.n], w.mid[k.n]) > (c.cts, c.cmid) AS fwd,
           coalesce(c.batch_size > 0 AND coalesce(c.acked_count, 0) + k.n >= c.batch_size, false) AS rel
    FROM c CROSS JOIN w CROSS JOIN (SELECT cardinality($3::text[]) AS n) k
), upd AS (
    -- The cursor moves to the last item (the greatest: the batch is in order), never
    -- back; the item that completes the leased batch releases the lease.
    UPDATE queen.partition_consumers pc
       SET last_consumed_created_at = CASE WHEN v.fwd THEN v.mts[v.n] ELSE v.cts END,
           last_consumed_id = CASE WHEN v.fwd THEN v.mid[v.n] ELSE v.cmid END,
           last_consumed_at = now(),
           total_messages_consumed = pc.total_messages_consumed + v.n,
           acked_count = CASE WHEN v.rel THEN 0 ELSE coalesce(pc.acked_count, 0) + v.n END,
           batch_retry_count = CASE WHEN v.fwd OR v.rel THEN 0 ELSE pc.batch_retry_count END,
           batch_size = CASE WHEN v.rel THEN 0 ELSE pc.batch_size END,
           lease_acquired_at = CASE WHEN v.rel THEN NULL ELSE pc.lease_acquired_at END,
           lease_expires_at = CASE WHEN v.rel THEN NULL ELSE v.lease_expires_at END,
           worker_id = CASE WHEN v.rel THEN NULL ELSE pc.worker_id END
      FROM v
     WHERE pc.id = v.id AND v.ok
    RETURNING pc.id
)
SELECT CASE WHEN v.ok AND (SELECT count(*) FROM upd) = 1
            THEN set_config('queen.ack_settle', 'on', true) IS NOT NULL
                 AND set_config('queen.ack_released', CASE WHEN v.rel THEN 'on' ELSE '' END, true) IS NOT NULL
            ELSE false END,
       v.qname, v.pname, v.rel, v.conflate
FROM v`

// sqlAckSettle settles the ready row of ($1 partition, $2 group) from its cursor row as
// sqlAckApply wrote it, and answers whether the partition is left claimable now
// (messages wait, or a push is in flight); no row when sqlAckApply applied nothing. Its
// own snapshot, taken after sqlAckApply, sees a push that committed while the ack ran
// (whose wake found the partition still leased): sqlAckApply's may not.
const sqlAckSettle = `SELECT queen.ready_settle_q2(c.partition_id, c.consumer_group, c.last_consumed_created_at,
                               c.last_consumed_id, c.lease_expires_at)
FROM queen.partition_consumers c
WHERE c.partition_id = $1::uuid AND c.consumer_group = $2
  AND current_setting('queen.ack_settle', true) = 'on'`

// ackDirectShaped reports whether acks look like the ack of a pop: one partition, one
// lease value, all completed.
func ackDirectShaped(acks []queue.Ack) bool {
	first := &acks[0]
	if first.Status != queue.AckCompleted {
		return false
	}
	for i := 1; i < len(acks); i++ {
		a := &acks[i]
		if a.PartitionID != first.PartitionID || a.LeaseID != first.LeaseID || a.Status != queue.AckCompleted {
			return false
		}
	}
	return true
}

// messageAckDirect runs the direct ack of acks (ackDirectShaped). ok is false when it
// did not apply (nothing was written: the caller runs queen.ack_q4).
func (s *Store) messageAckDirect(ctx context.Context, group string, acks []queue.Ack) (results []queue.AckResult, ok bool, err error) {
	results, _, ok, err = s.messageAckDirectClaim(ctx, group, acks, nil, "")
	return results, ok, err
}

// sqlClaimAfterAck is the claim of MessageAckClaim: the pop's statement, run only when
// the ack before it in the transaction released its lease (sqlAckApply's setting).
const sqlClaimAfterAck = sqlPartitionClaim + `
WHERE current_setting('queen.ack_released', true) = 'on'`

// MessageAckClaim applies acks as MessageAckBatch does and, when they are the ack of a
// pop that released its lease (the direct path), claims for claim under leaseID in the
// same transaction: the messages a pop claim would have returned, leased from the
// ack's commit (Claim.Conflation set when the group conflates). Any other ack is
// applied alone, and claims nothing. A claim that
// PostgreSQL aborted (a deadlock victim, a statement timeout) took the ack with it:
// the ack then runs again alone. claim must name no partition: such a claim never
// waits for a lock, which it must not while it holds the ack's.
func (s *Store) MessageAckClaim(ctx context.Context, group string, acks []queue.Ack, claim queue.PopRequest, leaseID string) ([]queue.AckResult, queue.Claim, error) {
	if len(acks) > 0 && ackDirectShaped(acks) {
		res, c, ok, err := s.messageAckDirectClaim(ctx, group, acks, &claim, leaseID)
		if err == nil && ok {
			s.ackDirect.Add(1)
			return res, c, nil
		}
		var pgErr *pgconn.PgError
		if err != nil && !errors.As(err, &pgErr) {
			return nil, queue.Claim{}, err // its outcome may be unknown (a connection lost at the commit)
		}
	}
	res, err := s.MessageAckBatch(ctx, group, acks)
	return res, queue.Claim{}, err
}

func (s *Store) messageAckDirectClaim(ctx context.Context, group string, acks []queue.Ack, claim *queue.PopRequest,
	leaseID string) (results []queue.AckResult, claimed queue.Claim, ok bool, err error) {
	n := len(acks)
	txids := make([]string, n)
	for i := range acks {
		txids[i] = acks[i].TransactionID
	}
	pid, lease := acks[0].PartitionID, acks[0].LeaseID
	b := &pgx.Batch{}
	b.Queue(sqlAckLock, pid, group)
	b.Queue(sqlAckApply, pid, group, txids, lease)
	b.Queue(sqlAckSettle, pid, group)
	if claim != nil {
		args := s.claimArgs(*claim, leaseID)
		args[len(args)-1] = "" // the ack's commit: durable, whatever QUEEN_POP_SYNCHRONOUS_COMMIT says
		b.Queue(sqlClaimAfterAck, args...)
	}
	br := s.pool.SendBatch(ctx, b)
	var qname, pname string
	var released, pending, conflate bool
	err = func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		err := br.QueryRow().Scan(&ok, &qname, &pname, &released, &conflate)
		if errors.Is(err, pgx.ErrNoRows) { // no cursor row: the general path answers
			ok, err = false, nil
		}
		if err != nil {
			return err
		}
		err = br.QueryRow().Scan(&pending)
		if errors.Is(err, pgx.ErrNoRows) { // nothing applied, nothing settled
			err = nil
		}
		if err != nil || claim == nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		// A group without a policy claims nothing here: its pop stores one first.
		claimed, _, err = scanClaim(rows, *claim)
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, queue.Claim{}, false, interpretError(err)
	}
	if !ok {
		return nil, queue.Claim{}, false, nil
	}
	// The messages right after the cursor: a conflating group's completion skipped none.
	var skipped *int
	if conflate {
		skipped = new(int)
	}
	// Every item succeeded in one partition; the last released the lease if any did.
	results = make([]queue.AckResult, n)
	kept := false
	for i := range results {
		results[i] = queue.AckResult{Index: i, TransactionID: acks[i].TransactionID, Success: true,
			QueueName: qname, PartitionName: pname, LeaseReleased: &kept, Conflated: skipped}
	}
	if released {
		results[n-1].LeaseReleased = &released
		results[n-1].PartitionPending = pending
	}
	return results, claimed, true, nil
}
