-- queen.tx_prepare_q1 runs first in every /transaction: it creates the queues and
-- partitions the transaction will push to and takes, in one global sorted order, every
-- lock the transaction will need (partition append locks, then (partition, group) ack
-- locks), so concurrent transactions, pushes and acks cannot deadlock. Every lookup is
-- keyed, and runs with the plan settings of queen.push_q3 (a plan cached while the
-- tables were small must not read every partition once they have grown).
CREATE OR REPLACE FUNCTION queen.tx_prepare_q1(
    p_push_queue text[], p_push_partition text[], p_ack_pid text[], p_ack_group text[]
) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r record;
BEGIN
    PERFORM queen.partitions_ensure_q1(p_push_queue, p_push_partition);

    FOR r IN
        SELECT qq.id FROM queen.queues qq
        WHERE qq.name = ANY (p_push_queue) AND queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') > 0
        ORDER BY qq.id
    LOOP
        PERFORM pg_advisory_xact_lock(queen.queue_capacity_key(r.id));
    END LOOP;

    FOR r IN
        SELECT DISTINCT p.id
        FROM unnest(p_push_queue, p_push_partition) AS x(qn, pn)
        CROSS JOIN LATERAL (SELECT pp.id FROM queen.queues qq
                            JOIN queen.partitions pp ON pp.queue_id = qq.id AND pp.name = x.pn
                            WHERE qq.name = x.qn OFFSET 0) p
        ORDER BY p.id
    LOOP
        PERFORM pg_advisory_xact_lock(queen.partition_order_key(r.id));
    END LOOP;

    FOR r IN
        SELECT DISTINCT x.pid::uuid AS pid, x.grp
        FROM unnest(p_ack_pid, p_ack_group) AS x(pid, grp)
        ORDER BY 1, 2
    LOOP
        PERFORM pg_advisory_xact_lock(queen.ack_lock_key(r.pid, r.grp));
    END LOOP;
END;
$$;

-- queen.tx_ack_q1 is the acknowledgement of a /transaction:
-- completed/success move the cursor (forward only) and count toward auto-release,
-- creating the cursor row when missing; failed/dlq dead-letter at once (no retries),
-- or drop the message on a queue whose dead-letter queue is off. Any other status, an unknown message or a stale lease fails the transaction.
CREATE OR REPLACE FUNCTION queen.tx_ack_q1(
    p_txid text, p_pid text, p_group text, p_status text, p_lease text, p_error text
) RETURNS TABLE (o_success boolean, o_error text, o_dlq boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_mid    uuid;
    v_mts    timestamptz;
    v_status text := lower(coalesce(nullif(p_status, ''), 'completed'));
    v_dlq    boolean;
    v_off    boolean;
    pc       queen.partition_consumers%ROWTYPE;
BEGIN
    SELECT m.id, m.created_at, queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options)
      INTO v_mid, v_mts, v_off
    FROM queen.messages m
    JOIN queen.partitions p ON p.id = m.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE m.partition_id = p_pid::uuid AND m.transaction_id COLLATE "C" = p_txid;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, 'Message not found'::text, false;
        RETURN;
    END IF;
    IF v_status NOT IN ('completed', 'success', 'failed', 'dlq') THEN
        RETURN QUERY SELECT false, format('Invalid ack status %L in a transaction', p_status), false;
        RETURN;
    END IF;
    -- A queue whose dead-letter queue is off drops the message instead.
    v_dlq := v_status IN ('failed', 'dlq') AND NOT v_off;

    INSERT INTO queen.partition_consumers (partition_id, consumer_group)
    VALUES (p_pid::uuid, p_group)
    ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    SELECT * INTO pc FROM queen.partition_consumers c
    WHERE c.partition_id = p_pid::uuid AND c.consumer_group = p_group FOR UPDATE;

    IF coalesce(p_lease, '') <> '' AND NOT coalesce(pc.worker_id = p_lease AND pc.lease_expires_at > now(), false) THEN
        RETURN QUERY SELECT false, 'Invalid or expired lease'::text, false;
        RETURN;
    END IF;

    IF v_dlq THEN
        INSERT INTO queen.dead_letter_queue
               (message_id, partition_id, consumer_group, error_message, retry_count, original_created_at)
        VALUES (v_mid, p_pid::uuid, p_group, coalesce(nullif(p_error, ''), 'Unknown error'), 0, v_mts);
    END IF;

    UPDATE queen.partition_consumers c
       SET last_consumed_created_at = CASE WHEN c.last_consumed_created_at IS NULL
                OR (v_mts, v_mid) > (c.last_consumed_created_at, c.last_consumed_id)
                THEN v_mts ELSE c.last_consumed_created_at END,
           last_consumed_id = CASE WHEN c.last_consumed_created_at IS NULL
                OR (v_mts, v_mid) > (c.last_consumed_created_at, c.last_consumed_id)
                THEN v_mid ELSE c.last_consumed_id END,
           last_consumed_at = now(),
           total_messages_consumed = c.total_messages_consumed + 1,
           -- As an ack does: moving past the message (or releasing the lease) ends
           -- the batch's retries, so the next failure starts counting from 0.
           batch_retry_count = CASE WHEN c.last_consumed_created_at IS NULL
                OR (v_mts, v_mid) > (c.last_consumed_created_at, c.last_consumed_id)
                OR v_dlq OR c.acked_count + 1 >= greatest(c.batch_size, 1)
                THEN 0 ELSE c.batch_retry_count END,
           acked_count = CASE WHEN v_dlq OR c.acked_count + 1 >= greatest(c.batch_size, 1) THEN 0 ELSE c.acked_count + 1 END,
           batch_size = CASE WHEN v_dlq OR c.acked_count + 1 >= greatest(c.batch_size, 1) THEN 0 ELSE c.batch_size END,
           lease_acquired_at = CASE WHEN v_dlq OR c.acked_count + 1 >= greatest(c.batch_size, 1) THEN NULL ELSE c.lease_acquired_at END,
           lease_expires_at = CASE WHEN v_dlq OR c.acked_count + 1 >= greatest(c.batch_size, 1) THEN NULL ELSE c.lease_expires_at END,
           worker_id = CASE WHEN v_dlq OR c.acked_count + 1 >= greatest(c.batch_size, 1) THEN NULL ELSE c.worker_id END
     WHERE c.id = pc.id;
    PERFORM queen.ready_settle_many_q1(ARRAY[p_pid::uuid], p_group);

    RETURN QUERY SELECT true, NULL::text, v_dlq;
END;
$$;
