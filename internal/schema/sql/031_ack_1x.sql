-- The acknowledgement with the answers of the Queen 1.x brokers (docs/api.md,
-- "Acknowledgement"): queen.ack_q4 and its item loop queen.ack_items_q3 add o_noop and
-- o_conflated to the answer of queen.ack_q2 / ack_items_q1 (030_ack.sql), which stay as
-- they were for brokers of an earlier schema level, as do queen.ack_q3 / ack_items_q2
-- (without o_conflated). A nack that dead-letters releases the lease, an
-- ack at or below the cursor is reported (noop, or "already committed"), and an ack
-- that resolves nowhere, or beyond the leased batch, is "unresolvable".

-- queen.ack_q4 is queen.ack_q2 answering with o_noop and o_conflated: the ack of a pop
-- (one partition, one lease value, every item completed and naming, in order, the
-- messages right after the cursor, within the leased batch) is applied with one range
-- scan, one locked read and one update, and answered with a single row of o_idx -1;
-- any other batch goes to queen.ack_items_q3, one row per item. p_pid, p_lease,
-- p_status and p_error hold one element per item of p_txid, or a single element that
-- stands for every item.
-- o_conflated is set on the completions of a group whose conflation policy is on
-- (queen.consumer_group_policies): the messages the completion skipped, from the cursor
-- to the acked one (0 on this path, which acks the messages right after the cursor).
CREATE OR REPLACE FUNCTION queen.ack_q4(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean, o_noop boolean, o_conflated integer)
-- Plans: as queen.ack_q2's (index scans and nested loops only), and generic: the range
-- scan's LIMIT is the batch's size, and PostgreSQL, pricing a plan made for each call's
-- value below the cached one, planned that statement again on most calls (0.23 ms of
-- planning for 0.06 ms of work, per ack of a pop).
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now   timestamptz := now();
    v_n     integer := cardinality(p_txid);
    v_pid   uuid;
    v_mid   uuid[];
    v_mts   timestamptz[];
    v_wtx   text[];
    v_cid   uuid;
    v_qname text;
    v_pname text;
    v_ok    boolean;
    v_fwd   boolean;
    v_rel   boolean;
    v_cts   timestamptz;
    v_cmid  uuid;
    v_exp   timestamptz;
    v_conf  boolean;
BEGIN
    IF v_n > 1 AND NOT (cardinality(p_pid) IN (1, v_n) AND cardinality(p_lease) IN (1, v_n)
                        AND cardinality(p_status) IN (1, v_n) AND cardinality(p_error) IN (1, v_n)) THEN
        RAISE EXCEPTION 'queen.ack_q4: % items, and % partition ids, % leases, % statuses, % errors',
            v_n, cardinality(p_pid), cardinality(p_lease), cardinality(p_status), cardinality(p_error);
    END IF;
    -- Checked without a query: one partition, one lease value, nothing but completions
    -- (the broker sends statuses normalised; anything else goes the long way).
    IF v_n > 0 AND p_pid <@ ARRAY[p_pid[1]] AND p_lease <@ ARRAY[p_lease[1]]
       AND p_status <@ ARRAY['completed', 'success'] THEN
        v_pid := p_pid[1]::uuid;
        -- The messages right after the cursor, in the scan's order; used only if they
        -- are the batch, in its order ((partition, transaction id) is unique).
        SELECT array_agg(w.id), array_agg(w.created_at), array_agg(w.transaction_id::text)
          INTO v_mid, v_mts, v_wtx
          FROM queen.partition_consumers c
          CROSS JOIN LATERAL (
              SELECT mm.id, mm.created_at, mm.transaction_id
              FROM queen.messages mm
              WHERE mm.partition_id = c.partition_id
                AND (mm.created_at, mm.id) > (coalesce(c.last_consumed_created_at, '-infinity'::timestamptz),
                                              coalesce(c.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
              ORDER BY mm.created_at, mm.id
              LIMIT v_n) w
         WHERE c.partition_id = v_pid AND c.consumer_group = p_group;
        IF v_wtx = p_txid THEN
            -- The locks of queen.ack_items_q3, in its order: advisory lock, then cursor row.
            PERFORM pg_advisory_xact_lock(queen.ack_lock_key(v_pid, p_group));
            SELECT c.id, q.name::text, p.name::text,
                   (coalesce(p_lease[1], '') = ''
                    OR (c.worker_id = p_lease[1] AND c.lease_expires_at > v_now))
                   AND (coalesce(c.batch_size, 0) <= 0 OR v_n <= c.batch_size - coalesce(c.acked_count, 0)),
                   c.last_consumed_created_at IS NULL
                   OR (v_mts[v_n], v_mid[v_n]) > (c.last_consumed_created_at, c.last_consumed_id),
                   coalesce(c.batch_size > 0 AND coalesce(c.acked_count, 0) + v_n >= c.batch_size, false),
                   c.last_consumed_created_at, c.last_consumed_id, c.lease_expires_at,
                   coalesce(gp.conflation, false)
              INTO v_cid, v_qname, v_pname, v_ok, v_fwd, v_rel, v_cts, v_cmid, v_exp, v_conf
              FROM queen.partition_consumers c
              JOIN queen.partitions p ON p.id = c.partition_id
              JOIN queen.queues q ON q.id = p.queue_id
              LEFT JOIN queen.consumer_group_policies gp ON gp.queue_id = q.id AND gp.consumer_group = p_group
             WHERE c.partition_id = v_pid AND c.consumer_group = p_group
               FOR UPDATE OF c;
            IF v_ok THEN
                -- The cursor moves to the last item (the greatest: the batch is in
                -- order), never back; the item that completes the leased batch releases
                -- the lease.
                IF v_fwd THEN
                    v_cts := v_mts[v_n];
                    v_cmid := v_mid[v_n];
                END IF;
                IF v_rel THEN
                    v_exp := NULL;
                END IF;
                UPDATE queen.partition_consumers c
                   SET last_consumed_created_at = v_cts, last_consumed_id = v_cmid, last_consumed_at = v_now,
                       total_messages_consumed = c.total_messages_consumed + v_n,
                       acked_count = CASE WHEN v_rel THEN 0 ELSE coalesce(c.acked_count, 0) + v_n END,
                       batch_retry_count = CASE WHEN v_fwd OR v_rel THEN 0 ELSE c.batch_retry_count END,
                       batch_size = CASE WHEN v_rel THEN 0 ELSE c.batch_size END,
                       lease_acquired_at = CASE WHEN v_rel THEN NULL ELSE c.lease_acquired_at END,
                       lease_expires_at = v_exp,
                       worker_id = CASE WHEN v_rel THEN NULL ELSE c.worker_id END
                 WHERE c.id = v_cid;
                PERFORM queen.ready_settle_q2(v_pid, p_group, v_cts, v_cmid, v_exp);
                o_idx := -1; o_success := true; o_error := NULL; o_queue := v_qname;
                o_partition := v_pname; o_lease_released := v_rel; o_dlq := false; o_noop := false;
                o_conflated := CASE WHEN v_conf THEN 0 END;
                RETURN NEXT;
                RETURN;
            END IF;
        END IF;
    END IF;
    IF v_n > 1 THEN
        p_pid := queen.ack_spread_q1(p_pid, v_n);
        p_lease := queen.ack_spread_q1(p_lease, v_n);
        p_status := queen.ack_spread_q1(p_status, v_n);
        p_error := queen.ack_spread_q1(p_error, v_n);
    END IF;
    RETURN QUERY SELECT * FROM queen.ack_items_q3(p_txid, p_pid, p_lease, p_status, p_error, p_group);
END;
$$;

-- queen.ack_q3 is queen.ack_q4 without o_conflated, for brokers of the release before.
CREATE OR REPLACE FUNCTION queen.ack_q3(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean, o_noop boolean)
LANGUAGE sql
AS $$
    SELECT o_idx, o_success, o_error, o_queue, o_partition, o_lease_released, o_dlq, o_noop
      FROM queen.ack_q4(p_txid, p_pid, p_lease, p_status, p_error, p_group)
$$;

-- queen.ack_dead_release_q1 is cursor row pc with the lease a dead letter releases. The
-- partition is claimable at once (the 1.x brokers release the lease, and their
-- consumers abandon the batch), but a Queen 0.15 consumer keeps acking the rest of its
-- batch under the pop's lease id, which its broker kept: a live lease is therefore
-- marked released rather than forgotten. Its holder and start stay, its expiry becomes
-- its start (no lease ever expires at its start), and the acks of that lease id are
-- taken as acks without a lease until the next pop claims the partition (or the
-- reclaim job clears the expired lease). A lease already expired is cleared.
CREATE OR REPLACE FUNCTION queen.ack_dead_release_q1(pc queen.partition_consumers, p_now timestamptz)
RETURNS queen.partition_consumers LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    pc.batch_size := 0;
    pc.acked_count := 0;
    IF pc.worker_id IS NOT NULL AND pc.lease_acquired_at IS NOT NULL AND pc.lease_expires_at > p_now THEN
        pc.lease_expires_at := pc.lease_acquired_at;
    ELSE
        pc.lease_acquired_at := NULL;
        pc.lease_expires_at := NULL;
        pc.worker_id := NULL;
    END IF;
    RETURN pc;
END;
$$;

-- queen.ack_items_q3 applies a batch of acknowledgements for one consumer group with the
-- answers of the Queen 1.x brokers (docs/api.md, "Acknowledgement"). Statuses arrive
-- normalised by the broker: completed, failed, retry or dlq. Items are processed in
-- (partition, message order); items naming one message are taken strongest first (dlq,
-- failed, retry, completed), so the strongest is the one applied and the later ones
-- find its effect; each (partition, group) is serialised by a blocking advisory lock.
-- Per item:
--   * a message that resolves nowhere (never pushed, purged), or, under a live lease
--     (the item's, or the partition's when the item names none), one beyond the leased
--     batch's end: success false, 'unresolvable: ...';
--   * at or below the committed cursor: completed is success and o_noop; failed, retry
--     and dlq are success false, 'already committed: ...';
--   * a stale lease: success false, 'Invalid or expired lease';
--   * retry, or failed within the queue's retryLimit: the lease is released, the cursor
--     stays (failed charges the retry budget and honours retryDelay, as ack_items_q1);
--   * dlq, or failed past the budget: the DLQ row is filed, the cursor moves to the
--     message, the budget resets and the lease is released (o_dlq, o_lease_released);
--   * completed: the cursor moves forward (never back) and counts the messages it
--     passes toward the leased batch; the item that completes the batch releases the
--     lease.
-- None of the answers that can do nothing moves the cursor or changes the lease. Once
-- an item of a (partition, group) released the lease by a retry (retry, or failed
-- within the budget), the call never moves that cursor further: later completed items
-- fail with 'lease released by earlier failure', later failed/retry/dlq items succeed
-- with no effect (one failure per delivered batch). A dead letter is applied in order:
-- the lease it releases stays valid for the later items of the same call and lease
-- until the partition's row is written back, so a later failed item charges the fresh
-- budget and gets its retryDelay hold, a later dlq dead-letters and a later completed
-- item moves the cursor (the dead-lettered message is resolved, so passing it skips
-- nothing), exactly as the next call under the same lease would: a completion of a
-- message before a later nack resets the budget before that nack charges it, never
-- after. p_lease holds '' for "no lease check".
-- Returns one row per item, by input index. The cursor row of the current partition is
-- read once (locked), updated in memory and written back when the partition changes
-- and at the end, as in ack_items_q1.
CREATE OR REPLACE FUNCTION queen.ack_items_q3(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean, o_noop boolean, o_conflated integer)
-- Plans: as queen.ack_items_q1's (index scans and nested loops only; the lookups by
-- (partition, transaction id) run through EXECUTE, planned for the values of each call).
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
DECLARE
    it          record;
    pc          queen.partition_consumers%ROWTYPE;
    v_locked    uuid;
    v_retried   uuid[] := '{}';
    v_dead      uuid; -- the partition whose lease a dead letter of this call releases
    v_released  boolean;
    v_has_row   boolean;
    v_loaded    boolean := false;
    v_dirty     boolean := false;
    v_forward   boolean;
    v_status    text;
    v_left      integer;
    v_span      integer;
    v_up_ts     timestamptz;
    v_up_id     uuid;
    v_now       timestamptz := now();
    c_unresolvable constant text :=
        'unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers';
    c_committed constant text := 'already committed: the cursor moved past this message before this ack';
BEGIN
    FOR it IN EXECUTE $q$
        SELECT (x.ord - 1)::integer AS i, x.txid, x.pid::uuid AS pid, coalesce(x.lease, '') AS lease,
               coalesce(x.status, 'completed') AS status, x.err,
               m.id AS mid, m.created_at AS mts, p.name::text AS pname, q.name::text AS qname,
               coalesce(q.retry_limit, 3) AS retry_limit,
               queen.enforced_option_q1(q.retry_delay, q.queen_options, 'retryDelay') AS retry_delay,
               queen.enforced_option_q1(q.ttl, q.queen_options, 'ttl') AS ttl,
               queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options) AS dlq_off,
               coalesce(gp.conflation, false) AS conflate
        FROM unnest($1, $2, $3, $4, $5) WITH ORDINALITY AS x(txid, pid, lease, status, err, ord)
        LEFT JOIN queen.messages m ON m.partition_id = x.pid::uuid AND m.transaction_id COLLATE "C" = x.txid
        LEFT JOIN queen.partitions p ON p.id = m.partition_id
        LEFT JOIN queen.queues q ON q.id = p.queue_id
        LEFT JOIN queen.consumer_group_policies gp ON gp.queue_id = q.id AND gp.consumer_group = $6
        ORDER BY x.pid::uuid, m.created_at NULLS FIRST, m.id,
                 CASE coalesce(x.status, 'completed') WHEN 'dlq' THEN 0 WHEN 'retry' THEN 2
                      WHEN 'completed' THEN 3 WHEN 'success' THEN 3 ELSE 1 END,
                 x.ord
    $q$ USING p_txid, p_pid, p_lease, p_status, p_error, p_group
    LOOP
        o_idx := it.i;
        o_queue := it.qname;
        o_partition := it.pname;
        o_lease_released := NULL;
        o_dlq := false;
        o_noop := false;
        o_conflated := NULL;
        IF it.mid IS NULL THEN
            o_success := false; o_error := c_unresolvable; o_queue := NULL; o_partition := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        IF v_locked IS DISTINCT FROM it.pid THEN
            IF v_dead = v_locked AND v_loaded AND NOT (v_dead = ANY (v_retried)) THEN
                -- The lease a dead letter released (no retry released it since).
                pc := queen.ack_dead_release_q1(pc, v_now); v_dirty := true;
            END IF;
            IF v_dirty THEN
                UPDATE queen.partition_consumers c
                   SET (last_consumed_created_at, last_consumed_id, last_consumed_at, total_messages_consumed,
                        acked_count, batch_retry_count, batch_size, lease_acquired_at, lease_expires_at, worker_id)
                     = (pc.last_consumed_created_at, pc.last_consumed_id, pc.last_consumed_at, pc.total_messages_consumed,
                        pc.acked_count, pc.batch_retry_count, pc.batch_size, pc.lease_acquired_at, pc.lease_expires_at, pc.worker_id)
                 WHERE c.id = pc.id;
                v_dirty := false;
            END IF;
            PERFORM pg_advisory_xact_lock(queen.ack_lock_key(it.pid, p_group));
            v_locked := it.pid;
            v_loaded := false;
        END IF;

        IF NOT v_loaded THEN
            SELECT * INTO pc FROM queen.partition_consumers c
            WHERE c.partition_id = it.pid AND c.consumer_group = p_group
            FOR UPDATE;
            v_has_row := FOUND;
            v_loaded := true;
        END IF;

        v_status := it.status;
        IF v_status = 'success' THEN
            v_status := 'completed'; -- as ack_q3's fast path reads it
        ELSIF v_status NOT IN ('completed', 'retry', 'dlq') THEN
            v_status := 'failed';
        END IF;

        IF it.pid = ANY (v_retried) THEN
            IF v_status = 'completed' THEN
                o_success := false; o_error := 'lease released by earlier failure';
            ELSE
                o_success := true; o_error := NULL; o_lease_released := true;
            END IF;
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- At or below the committed cursor: nothing to do, and said so.
        IF v_has_row AND pc.last_consumed_created_at IS NOT NULL
           AND (it.mts, it.mid) <= (pc.last_consumed_created_at, pc.last_consumed_id) THEN
            IF v_status = 'completed' THEN
                o_success := true; o_error := NULL; o_lease_released := false; o_noop := true;
            ELSE
                o_success := false; o_error := c_committed;
            END IF;
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- coalesce: a released lease has NULL worker_id/expiry, and NOT NULL is NULL. A
        -- lease a dead letter released, not claimed since, is as good as no lease
        -- (queen.ack_dead_release_q1).
        IF it.lease <> '' AND NOT coalesce(v_has_row AND pc.worker_id = it.lease
                                           AND (pc.lease_expires_at > v_now OR pc.lease_expires_at = pc.lease_acquired_at), false) THEN
            o_success := false; o_error := 'Invalid or expired lease';
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- The leased batch is the batch_size messages after the cursor the pop found
        -- (those the queue's ttl had not expired when it took the lease); v_span counts
        -- the unacked ones up to this message (bounded by what is left).
        -- Under a live lease an ack resolves only within the batch, whether it names the
        -- lease or not: one without a lease must not move the cursor past messages the
        -- holder has not acked (and past some nobody was given), nor end the holder's
        -- lease. A completion counts the messages it consumes (gaps included), so the
        -- batch ends, and its lease goes, once the cursor passed all of them, in whatever
        -- order the acks came.
        v_span := 1;
        IF v_has_row AND pc.batch_size > 0 THEN
            v_left := greatest(pc.batch_size - coalesce(pc.acked_count, 0), 0);
            SELECT count(*) INTO v_span
              FROM (SELECT 1 FROM queen.messages mm
                    WHERE mm.partition_id = it.pid
                      AND (mm.created_at, mm.id) > (coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz),
                                                    coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
                      AND (mm.created_at, mm.id) <= (it.mts, it.mid)
                      AND (it.ttl <= 0 OR pc.lease_acquired_at IS NULL
                           OR mm.created_at > pc.lease_acquired_at - make_interval(secs => it.ttl))
                    ORDER BY mm.created_at, mm.id
                    LIMIT v_left + 1) s;
            IF v_span > v_left AND (it.lease <> ''
                                    OR (pc.worker_id IS NOT NULL AND pc.lease_expires_at > v_now)) THEN
                o_success := false; o_error := c_unresolvable; o_queue := NULL; o_partition := NULL;
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;

        -- A nack that the call completes a message above (within the leased batch)
        -- first completes the messages below it that the call does not name: the
        -- cursor goes to the highest completion but never past the lowest nack. As an
        -- explicit completion of them would, this resets the budget the nack charges.
        IF v_status IN ('retry', 'failed') AND v_has_row AND pc.batch_size > 0 AND v_span > 1 THEN
            SELECT mm.created_at, mm.id INTO v_up_ts, v_up_id
              FROM unnest(p_txid, p_pid, p_status) AS y(txid, pid, status)
              JOIN queen.messages mm ON mm.partition_id = it.pid AND mm.transaction_id COLLATE "C" = y.txid
             WHERE y.pid::uuid = it.pid AND coalesce(y.status, 'completed') IN ('completed', 'success')
               AND (mm.created_at, mm.id) > (it.mts, it.mid)
             ORDER BY mm.created_at, mm.id
             LIMIT 1;
            IF FOUND AND (SELECT count(*)
                            FROM (SELECT 1 FROM queen.messages mm
                                  WHERE mm.partition_id = it.pid
                                    AND (mm.created_at, mm.id) > (coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz),
                                                                  coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
                                    AND (mm.created_at, mm.id) <= (v_up_ts, v_up_id)
                                    AND (it.ttl <= 0 OR pc.lease_acquired_at IS NULL
                                         OR mm.created_at > pc.lease_acquired_at - make_interval(secs => it.ttl))
                                  LIMIT v_left + 1) s) <= v_left THEN
                SELECT mm.created_at, mm.id INTO v_up_ts, v_up_id
                  FROM queen.messages mm
                 WHERE mm.partition_id = it.pid AND (mm.created_at, mm.id) < (it.mts, it.mid)
                 ORDER BY mm.created_at DESC, mm.id DESC
                 LIMIT 1;
                pc.last_consumed_created_at := v_up_ts;
                pc.last_consumed_id := v_up_id;
                pc.last_consumed_at := v_now;
                pc.total_messages_consumed := pc.total_messages_consumed + v_span - 1;
                pc.acked_count := coalesce(pc.acked_count, 0) + v_span - 1;
                pc.batch_retry_count := 0;
                v_dirty := true;
            END IF;
        END IF;

        IF v_status = 'retry' OR (v_status = 'failed' AND v_has_row AND pc.batch_retry_count < it.retry_limit) THEN
            IF v_has_row AND pc.worker_id IS NOT NULL THEN
                -- retryDelay: a failed batch is not redelivered before its delay; the
                -- partition stays blocked for the group until then (no holder).
                pc.lease_acquired_at := NULL;
                pc.worker_id := NULL;
                pc.batch_size := 0;
                pc.acked_count := 0;
                pc.lease_expires_at := CASE WHEN v_status = 'failed' AND it.retry_delay > 0
                                            THEN clock_timestamp() + make_interval(secs => it.retry_delay / 1000.0)
                                            END;
                pc.batch_retry_count := pc.batch_retry_count + CASE WHEN v_status = 'failed' THEN 1 ELSE 0 END;
                v_dirty := true;
            END IF;
            v_retried := v_retried || it.pid;
            o_success := true; o_error := NULL; o_lease_released := true;
            RETURN NEXT;
            CONTINUE;
        END IF;

        IF v_status <> 'completed' THEN
            -- Dead letter: filed (dropped instead on a queue whose dead-letter queue is
            -- off), the cursor moves past the poison message, the budget resets and
            -- the lease is released, so the rest of the batch is claimable by the very
            -- next pop.
            IF NOT it.dlq_off THEN
                INSERT INTO queen.dead_letter_queue
                       (message_id, partition_id, consumer_group, error_message, retry_count, original_created_at)
                VALUES (it.mid, it.pid, p_group, coalesce(nullif(it.err, ''), 'Retries exhausted'),
                        CASE WHEN v_has_row THEN pc.batch_retry_count ELSE 0 END, it.mts);
            END IF;
            IF NOT v_has_row THEN
                -- The group never popped here (or its cursor was deleted): the dead
                -- letter is filed, but no cursor is created at this message, which
                -- would skip the earlier ones for the group; nothing is leased.
                o_success := true; o_error := NULL; o_lease_released := false; o_dlq := NOT it.dlq_off;
                RETURN NEXT;
                CONTINUE;
            ELSE
                -- The lease is released when the row is written back (at the next
                -- partition or the end of the call); until then it counts this
                -- message (and the gaps below it) as acked within the leased batch,
                -- so the later items of the call resolve within what is left of it.
                pc.last_consumed_created_at := it.mts;
                pc.last_consumed_id := it.mid;
                pc.last_consumed_at := v_now; -- a dead letter is not consumed: no count
                pc.batch_retry_count := 0;
                pc.acked_count := coalesce(pc.acked_count, 0) + v_span;
                v_dirty := true;
            END IF;
            v_dead := it.pid;
            o_success := true; o_error := NULL; o_lease_released := true; o_dlq := NOT it.dlq_off;
            RETURN NEXT;
            CONTINUE;
        END IF;

        IF NOT v_has_row THEN
            -- No cursor row (the group never popped here): nothing to move.
            o_success := true; o_error := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        v_forward := pc.last_consumed_created_at IS NULL
                     OR (it.mts, it.mid) > (pc.last_consumed_created_at, pc.last_consumed_id);
        v_released := pc.batch_size > 0 AND pc.acked_count + v_span >= pc.batch_size;
        IF it.conflate THEN
            -- The messages this completion skips: the leased ones below it, or, without
            -- a leased batch, every one between the cursor and it.
            IF pc.batch_size > 0 THEN
                o_conflated := v_span - 1;
            ELSE
                SELECT count(*) INTO o_conflated
                  FROM queen.messages mm
                 WHERE mm.partition_id = it.pid
                   AND (mm.created_at, mm.id) > (coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz),
                                                 coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
                   AND (mm.created_at, mm.id) < (it.mts, it.mid);
            END IF;
        END IF;

        IF v_forward THEN
            pc.last_consumed_created_at := it.mts;
            pc.last_consumed_id := it.mid;
        END IF;
        pc.last_consumed_at := v_now;
        pc.total_messages_consumed := pc.total_messages_consumed + 1;
        pc.acked_count := CASE WHEN v_released THEN 0 ELSE pc.acked_count + v_span END;
        IF v_forward OR v_released THEN
            pc.batch_retry_count := 0;
        END IF;
        IF v_released THEN
            pc.batch_size := 0;
            pc.lease_acquired_at := NULL;
            pc.lease_expires_at := NULL;
            pc.worker_id := NULL;
        END IF;
        v_dirty := true;

        o_success := true; o_error := NULL; o_lease_released := v_released;
        RETURN NEXT;
    END LOOP;
    IF v_dead = v_locked AND v_loaded AND NOT (v_dead = ANY (v_retried)) THEN
        pc := queen.ack_dead_release_q1(pc, v_now); v_dirty := true;
    END IF;
    IF v_dirty THEN
        UPDATE queen.partition_consumers c
           SET (last_consumed_created_at, last_consumed_id, last_consumed_at, total_messages_consumed,
                acked_count, batch_retry_count, batch_size, lease_acquired_at, lease_expires_at, worker_id)
             = (pc.last_consumed_created_at, pc.last_consumed_id, pc.last_consumed_at, pc.total_messages_consumed,
                pc.acked_count, pc.batch_retry_count, pc.batch_size, pc.lease_acquired_at, pc.lease_expires_at, pc.worker_id)
         WHERE c.id = pc.id;
    END IF;
    PERFORM queen.ready_settle_many_q1(ARRAY(SELECT DISTINCT x.pid::uuid FROM unnest(p_pid) AS x(pid)), p_group);
END;
$$;

-- queen.ack_items_q2 is queen.ack_items_q3 without o_conflated, for brokers of the
-- release before.
CREATE OR REPLACE FUNCTION queen.ack_items_q2(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean, o_noop boolean)
LANGUAGE sql
AS $$
    SELECT o_idx, o_success, o_error, o_queue, o_partition, o_lease_released, o_dlq, o_noop
      FROM queen.ack_items_q3(p_txid, p_pid, p_lease, p_status, p_error, p_group)
$$;

-- queen.tx_ack_q2 is the acknowledgement of a /transaction with the statuses of the
-- Queen 1.x brokers (normalised by the broker: completed, failed, retry, dlq), run after
-- queen.tx_prepare_q1 took the (partition, group) lock:
--   * completed moves the cursor (forward only) and counts the leased batch's messages
--     it passes (the one that ends the batch releases the lease), creating the cursor
--     row when missing;
--   * retry releases the lease, the cursor and the retry budget stay;
--   * failed charges the budget (and releases the lease, as retry); past the queue's
--     retryLimit it dead-letters like dlq;
--   * dlq files the DLQ row, moves the cursor past the message, resets the budget and
--     releases the lease (o_dlq).
-- An ack at or below the committed cursor is tolerated: success, nothing changes (one
-- that carries a lease no longer held is refused first, as a stale lease). A
-- message that resolves nowhere answers o_unresolved (the transaction rolls back), and
-- so does one beyond the leased batch under a live lease (the op's, or the partition's
-- when the op names none); a stale lease rolls it back with o_error. A dead letter applies in order, as in
-- queen.ack_items_q2: the lease it released still counts as held for the later ops of
-- the same transaction on that (partition, group) (remembered in the transaction-local
-- setting queen.tx_dead), so a later failed op charges the fresh budget and gets its
-- retryDelay hold instead of answering success with no effect. An op past a message
-- this transaction retried or failed (without dead-lettering it) on the same
-- (partition, group), a completion or a dead letter, is tolerated and changes nothing:
-- the cursor never passes a nack
-- (remembered in queen.tx_nacked, with the lease it released, which later ops of the
-- transaction may name). o_freed says that the op ended a lease and the group may
-- claim the partition now (not after a retryDelay): once the transaction commits, a
-- pop of the group parked on the queue (o_queue) may take what is left of the
-- partition (o_partition).
CREATE OR REPLACE FUNCTION queen.tx_ack_q3(
    p_txid text, p_pid text, p_group text, p_status text, p_lease text, p_error text
) RETURNS TABLE (o_success boolean, o_error text, o_dlq boolean, o_unresolved boolean,
                 o_freed boolean, o_queue text, o_partition text)
LANGUAGE plpgsql AS $$
DECLARE
    v_mid    uuid;
    v_mts    timestamptz;
    v_limit  integer;
    v_delay  integer;
    v_ttl    integer;
    v_span   integer := 1;
    v_left   integer;
    v_status text := coalesce(p_status, 'completed');
    v_dlq    boolean;
    v_rel    boolean;
    v_key    text := p_pid::uuid::text || ' ' || p_group;
    v_dead   jsonb := coalesce(nullif(current_setting('queen.tx_dead', true), ''), '{}')::jsonb;
    v_held   boolean;
    v_nacked jsonb := coalesce(nullif(current_setting('queen.tx_nacked', true), ''), '{}')::jsonb;
    v_queue  text;
    v_pname  text;
    v_off    boolean;
    pc       queen.partition_consumers%ROWTYPE;
BEGIN
    SELECT m.id, m.created_at, q.name, p.name, coalesce(q.retry_limit, 3),
           queen.enforced_option_q1(q.retry_delay, q.queen_options, 'retryDelay'),
           queen.enforced_option_q1(q.ttl, q.queen_options, 'ttl'),
           queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options)
      INTO v_mid, v_mts, v_queue, v_pname, v_limit, v_delay, v_ttl, v_off
      FROM queen.messages m
      JOIN queen.partitions p ON p.id = m.partition_id
      JOIN queen.queues q ON q.id = p.queue_id
     WHERE m.partition_id = p_pid::uuid AND m.transaction_id COLLATE "C" = p_txid;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, 'unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers'::text, false, true,
                            false, v_queue, v_pname;
        RETURN;
    END IF;
    IF v_status = 'success' THEN
        v_status := 'completed';
    ELSIF v_status NOT IN ('completed', 'retry', 'dlq') THEN
        v_status := 'failed';
    END IF;

    INSERT INTO queen.partition_consumers (partition_id, consumer_group)
    VALUES (p_pid::uuid, p_group)
    ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    SELECT * INTO pc FROM queen.partition_consumers c
    WHERE c.partition_id = p_pid::uuid AND c.consumer_group = p_group FOR UPDATE;

    -- v_held: the lease a dead letter of this transaction released (see above). A
    -- stale lease is refused before the cursor is looked at: a transaction whose
    -- consumer lost its lease must not commit its pushes on the strength of an ack
    -- another consumer already made (an ack without a lease is tolerated below).
    v_held := v_dead ? v_key AND (coalesce(p_lease, '') = '' OR v_dead ->> v_key = p_lease);
    IF coalesce(p_lease, '') <> '' AND NOT v_held
       AND NOT coalesce(v_nacked -> v_key ->> 'lease' = p_lease, false)
       AND NOT coalesce(pc.worker_id = p_lease
                        AND (pc.lease_expires_at > now() OR pc.lease_expires_at = pc.lease_acquired_at), false) THEN
        -- A lease this transaction's own retry or failure released says so, as on /ack.
        RETURN QUERY SELECT false, CASE WHEN v_nacked ? v_key THEN 'lease released by earlier failure'
                                        ELSE 'Invalid or expired lease' END, false, false, false, v_queue, v_pname;
        RETURN;
    END IF;
    IF pc.last_consumed_created_at IS NOT NULL AND (v_mts, v_mid) <= (pc.last_consumed_created_at, pc.last_consumed_id) THEN
        RETURN QUERY SELECT true, NULL::text, false, false, false, v_queue, v_pname;
        RETURN;
    END IF;

    -- The leased batch, as in queen.ack_items_q2: v_span counts its unacked messages up
    -- to this one (bounded by what is left). Under a live lease (the op's, or, for an op
    -- without one as the 1.x SDK sends them, the partition's) an ack resolves only
    -- within the batch; the batch ends, and its lease goes, once the cursor passed all
    -- of its messages, in whatever order the acks came.
    IF coalesce(pc.batch_size, 0) > 0 THEN
        v_left := greatest(pc.batch_size - coalesce(pc.acked_count, 0), 0);
        SELECT count(*) INTO v_span
          FROM (SELECT 1 FROM queen.messages mm
                WHERE mm.partition_id = p_pid::uuid
                  AND (mm.created_at, mm.id) > (coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz),
                                                coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
                  AND (mm.created_at, mm.id) <= (v_mts, v_mid)
                  AND (v_ttl <= 0 OR pc.lease_acquired_at IS NULL
                       OR mm.created_at > pc.lease_acquired_at - make_interval(secs => v_ttl))
                ORDER BY mm.created_at, mm.id
                LIMIT v_left + 1) s;
        IF v_span > v_left AND (coalesce(p_lease, '') <> ''
                                OR (pc.worker_id IS NOT NULL AND pc.lease_expires_at > now())) THEN
            RETURN QUERY SELECT false, 'unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers'::text, false, true,
                            false, v_queue, v_pname;
            RETURN;
        END IF;
    END IF;

    -- An op past a message this transaction retried or failed would move the cursor
    -- over it (a completion, a dead letter). It is tolerated and changes nothing (both
    -- redeliver; one failure per delivered batch, as on /ack), so the transaction
    -- commits: the nack charges the budget, and a consumer that settles a batch as
    -- [failed, completed, ...] reaches the DLQ instead of rolling back forever.
    IF v_nacked ? v_key
       AND (v_mts, v_mid) > ((v_nacked -> v_key ->> 'at')::timestamptz, (v_nacked -> v_key ->> 'id')::uuid) THEN
        RETURN QUERY SELECT true, NULL::text, false, false, false, v_queue, v_pname;
        RETURN;
    END IF;

    IF v_status = 'retry' OR (v_status = 'failed' AND pc.batch_retry_count < v_limit) THEN
        IF NOT v_nacked ? v_key
           OR (v_mts, v_mid) < ((v_nacked -> v_key ->> 'at')::timestamptz, (v_nacked -> v_key ->> 'id')::uuid) THEN
            PERFORM set_config('queen.tx_nacked', (v_nacked || jsonb_build_object(v_key,
                jsonb_build_object('at', v_mts, 'id', v_mid,
                                   'lease', coalesce(v_nacked -> v_key ->> 'lease', pc.worker_id, p_lease))))::text, true);
        END IF;
        IF v_dead ? v_key THEN
            -- Released by this retry from now on: later nacks have no further effect.
            PERFORM set_config('queen.tx_dead', (v_dead - v_key)::text, true);
        END IF;
        IF pc.worker_id IS NOT NULL OR v_held THEN
            UPDATE queen.partition_consumers c
               SET lease_acquired_at = NULL, worker_id = NULL, batch_size = 0, acked_count = 0,
                   lease_expires_at = CASE WHEN v_status = 'failed' AND v_delay > 0
                                           THEN clock_timestamp() + make_interval(secs => v_delay / 1000.0) END,
                   batch_retry_count = c.batch_retry_count + CASE WHEN v_status = 'failed' THEN 1 ELSE 0 END
             WHERE c.id = pc.id;
            PERFORM queen.ready_settle_many_q1(ARRAY[p_pid::uuid], p_group);
        END IF;
        RETURN QUERY SELECT true, NULL::text, false, false,
                            (pc.worker_id IS NOT NULL OR v_held) AND NOT (v_status = 'failed' AND v_delay > 0),
                            v_queue, v_pname;
        RETURN;
    END IF;

    v_dlq := v_status <> 'completed';
    IF v_dlq THEN
        -- Filed, or dropped on a queue whose dead-letter queue is off; the cursor
        -- moves past the message and the lease goes either way.
        IF NOT v_off THEN
            INSERT INTO queen.dead_letter_queue
                   (message_id, partition_id, consumer_group, error_message, retry_count, original_created_at)
            VALUES (v_mid, p_pid::uuid, p_group, coalesce(nullif(p_error, ''), 'Retries exhausted'), pc.batch_retry_count, v_mts);
        END IF;
        IF pc.worker_id IS NOT NULL OR v_held THEN
            PERFORM set_config('queen.tx_dead', (v_dead || jsonb_build_object(v_key,
                coalesce(pc.worker_id, v_dead ->> v_key, '')))::text, true);
        END IF;
    END IF;
    v_rel := v_dlq OR coalesce(pc.acked_count, 0) + v_span >= greatest(pc.batch_size, 1);
    -- The cursor is below the message (checked above): it moves there.
    UPDATE queen.partition_consumers c
       SET last_consumed_created_at = v_mts,
           last_consumed_id = v_mid,
           last_consumed_at = now(),
           total_messages_consumed = c.total_messages_consumed + CASE WHEN v_dlq THEN 0 ELSE 1 END,
           batch_retry_count = 0,
           acked_count = CASE WHEN v_rel THEN 0 ELSE coalesce(c.acked_count, 0) + v_span END,
           batch_size = CASE WHEN v_rel THEN 0 ELSE c.batch_size END,
           lease_acquired_at = CASE WHEN v_rel THEN NULL ELSE c.lease_acquired_at END,
           lease_expires_at = CASE WHEN v_rel THEN NULL ELSE c.lease_expires_at END,
           worker_id = CASE WHEN v_rel THEN NULL ELSE c.worker_id END
     WHERE c.id = pc.id;
    PERFORM queen.ready_settle_many_q1(ARRAY[p_pid::uuid], p_group);

    RETURN QUERY SELECT true, NULL::text, v_dlq AND NOT v_off, false, v_rel AND pc.worker_id IS NOT NULL, v_queue, v_pname;
END;
$$;

-- queen.tx_ack_q2 is queen.tx_ack_q3 without the partition it freed, as the broker of
-- the release before calls it.
CREATE OR REPLACE FUNCTION queen.tx_ack_q2(
    p_txid text, p_pid text, p_group text, p_status text, p_lease text, p_error text
) RETURNS TABLE (o_success boolean, o_error text, o_dlq boolean, o_unresolved boolean)
LANGUAGE sql AS $$
    SELECT a.o_success, a.o_error, a.o_dlq, a.o_unresolved
      FROM queen.tx_ack_q3(p_txid, p_pid, p_group, p_status, p_lease, p_error) a;
$$;
