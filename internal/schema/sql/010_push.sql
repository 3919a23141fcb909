-- queen.push_q1 appends a batch of messages (semantics.md §5). One call = one
-- transaction. Order without loss (semantics.md §3.2 [GO]): each touched partition is
-- locked (transaction-scoped advisory lock, sorted by id) before its timestamp is
-- chosen, and created_at is the wall clock taken under the lock, never earlier than the
-- partition's previous head + 1µs. So commit order equals (created_at, id) order per
-- partition and a consumer can never advance past a message that commits later.
-- The partition_lookup head is upserted in the same transaction (read-your-writes).
-- Returns one row per input item (o_idx is 0-based): queued or duplicate, with the
-- stored (winning) message id, or 'full' (not stored: the queue's maxSize is reached).
CREATE OR REPLACE FUNCTION queen.push_q1(
    p_queue     text[],
    p_partition text[],
    p_txid      text[],
    p_id        text[],
    p_payload   text[],
    p_trace     text[],
    p_sub       text[],
    p_encrypted boolean[]
) RETURNS TABLE (o_idx integer, o_status text, o_message_id uuid, o_partition_id uuid)
LANGUAGE plpgsql
-- Custom plans every call: a generic plan cached while the tables were empty (a new
-- deployment, or after a bulk delete) would scan a whole partition per item until the
-- next ANALYZE; planning per call costs far less than that.
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    r      record;
    v_now  timestamptz;
    v_caps jsonb := '{}';
    v_n    bigint;
BEGIN
    PERFORM queen.partitions_ensure_q1(p_queue, p_partition);

    -- maxSize: queues with a capacity are locked (before any partition, always in this
    -- order) and counted, so concurrent pushes cannot overfill them.
    FOR r IN
        SELECT qq.id, qq.name, qq.max_queue_size
        FROM queen.queues qq
        WHERE qq.name = ANY (p_queue) AND coalesce(qq.max_queue_size, 0) > 0
        ORDER BY qq.id
    LOOP
        PERFORM pg_advisory_xact_lock(queen.queue_capacity_key(r.id));
        SELECT count(*) INTO v_n
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        WHERE p.queue_id = r.id;
        v_caps := v_caps || jsonb_build_object(r.name, greatest(r.max_queue_size - v_n, 0));
    END LOOP;

    FOR r IN
        SELECT DISTINCT p.id
        FROM unnest(p_queue, p_partition) AS x(qn, pn)
        JOIN queen.queues qq ON qq.name = x.qn
        JOIN queen.partitions p ON p.queue_id = qq.id AND p.name = x.pn
        ORDER BY p.id
    LOOP
        PERFORM pg_advisory_xact_lock(queen.partition_order_key(r.id));
    END LOOP;

    v_now := clock_timestamp();

    -- Every join below is an index probe or a sort, never a join of two statement-sized
    -- sets: the planner cannot size the unnested arrays of a cached plan (it assumes a
    -- handful of rows), and a nested loop over two CTEs is quadratic in the batch.
    -- All rows of one partition share one timestamp (the head is read before this
    -- statement writes it); ids, generated in item order, break the tie.
    WITH items AS (
        SELECT (x.ord - 1)::integer AS i, p.id AS pid, qq.name AS qn, x.txid, x.mid::uuid AS mid,
               x.payload, x.trace, x.sub, x.enc
        FROM unnest(p_queue, p_partition, p_txid, p_id, p_payload, p_trace, p_sub, p_encrypted)
             WITH ORDINALITY AS x(qn, pn, txid, mid, payload, trace, sub, enc, ord)
        JOIN queen.queues qq ON qq.name = x.qn
        JOIN queen.partitions p ON p.queue_id = qq.id AND p.name = x.pn
    ),
    fresh AS (
        SELECT DISTINCT ON (it.pid, it.txid) it.*
        FROM items it
        WHERE NOT EXISTS (SELECT 1 FROM queen.messages m
                          WHERE m.partition_id = it.pid AND m.transaction_id = it.txid)
        ORDER BY it.pid, it.txid, it.i
    ),
    numbered AS (
        SELECT f.*, row_number() OVER (PARTITION BY f.qn ORDER BY f.i) AS rn
        FROM fresh f
    ),
    ins AS (
        INSERT INTO queen.messages (id, transaction_id, partition_id, payload, trace_id,
                                    created_at, is_encrypted, producer_sub)
        SELECT a.mid, a.txid, a.pid, a.payload::jsonb, a.trace::uuid,
               greatest(v_now, (SELECT pl.last_message_created_at FROM queen.partition_lookup pl
                                WHERE pl.partition_id = a.pid AND pl.queue_name = a.qn)
                               + interval '1 microsecond'),
               a.enc, a.sub
        FROM numbered a
        WHERE NOT (v_caps ? a.qn) OR a.rn <= (v_caps ->> a.qn)::bigint
        ON CONFLICT (partition_id, transaction_id) DO NOTHING
        RETURNING id, partition_id, created_at
    ),
    heads AS (
        SELECT DISTINCT ON (ins.partition_id) ins.partition_id, ins.id, ins.created_at
        FROM ins
        ORDER BY ins.partition_id, ins.created_at DESC, ins.id DESC
    ),
    lookup AS (
        INSERT INTO queen.partition_lookup AS pl
               (queue_name, partition_id, last_message_id, last_message_created_at, updated_at)
        SELECT (SELECT qq.name FROM queen.partitions p JOIN queen.queues qq ON qq.id = p.queue_id
                WHERE p.id = h.partition_id),
               h.partition_id, h.id, h.created_at, now()
        FROM heads h
        ON CONFLICT (queue_name, partition_id) DO UPDATE
           SET last_message_id = excluded.last_message_id,
               last_message_created_at = excluded.last_message_created_at,
               updated_at = excluded.updated_at
           WHERE (excluded.last_message_created_at, excluded.last_message_id)
                 > (pl.last_message_created_at, pl.last_message_id)
        RETURNING 1
    )
    SELECT count(*) INTO v_n FROM ins;

    -- Each item's outcome is what is now stored under its (partition, transaction id):
    -- its own message id (queued), another one (a duplicate: stored earlier, earlier in
    -- this batch, or by a concurrent writer), or nothing (refused: the queue is full).
    RETURN QUERY
    SELECT (x.ord - 1)::integer,
           CASE WHEN m.id IS NULL THEN 'full'
                WHEN m.id = x.mid::uuid THEN 'queued'
                ELSE 'duplicate' END,
           m.id,
           p.id
    FROM unnest(p_queue, p_partition, p_txid, p_id) WITH ORDINALITY AS x(qn, pn, txid, mid, ord)
    JOIN queen.queues qq ON qq.name = x.qn
    JOIN queen.partitions p ON p.queue_id = qq.id AND p.name = x.pn
    LEFT JOIN queen.messages m ON m.partition_id = p.id AND m.transaction_id = x.txid
    ORDER BY x.ord;
END;
$$;

-- queen.partition_order_key is the advisory-lock key that serialises appends to one
-- partition (distinct seed from the wildcard pop claim key, semantics.md §2.3).
CREATE OR REPLACE FUNCTION queen.partition_order_key(p_partition uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_partition::text, 1364283729)
$$;

-- queen.queue_capacity_key serialises pushes to a queue that has a maxSize.
CREATE OR REPLACE FUNCTION queen.queue_capacity_key(p_queue uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_queue::text, 1364283730)
$$;

-- queen.partitions_ensure_q1 creates the queues and partitions a push names ("create on
-- first push", semantics.md §4.1): a new queue gets namespace/task from its name and
-- queen's option defaults; existing queues and partitions are never changed.
CREATE OR REPLACE FUNCTION queen.partitions_ensure_q1(p_queue text[], p_partition text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queen.queues (name, namespace, task, retry_delay, ttl)
    SELECT DISTINCT x.q, split_part(x.q, '.', 1), split_part(x.q, '.', 2), 0, 0
    FROM unnest(p_queue) AS x(q)
    WHERE NOT EXISTS (SELECT 1 FROM queen.queues qq WHERE qq.name = x.q)
    ON CONFLICT (name) DO NOTHING;

    INSERT INTO queen.partitions (queue_id, name)
    SELECT DISTINCT qq.id, x.pn
    FROM unnest(p_queue, p_partition) AS x(qn, pn)
    JOIN queen.queues qq ON qq.name = x.qn
    WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.queue_id = qq.id AND p.name = x.pn)
    ON CONFLICT (queue_id, name) DO NOTHING;
END;
$$;
