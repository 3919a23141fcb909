-- queen.push_q3 appends a batch of messages. One call = one
-- transaction. The items name their partition by index (p_pair, 1-based) into the
-- distinct (queue, partition) pairs p_queues/p_partitions, so each partition is
-- resolved once, not once per item. The payloads come as one JSON array (one text
-- parameter instead of an array of texts: the broker spent more CPU encoding the array
-- than building the text), and item i's payload is its element i-1.
--
-- Order without loss (upstream can lose messages to commit order): each touched partition is locked
-- (transaction-scoped advisory lock, sorted by id) before its timestamp is chosen, and
-- created_at is the wall clock taken under the lock, never earlier than the partition's
-- previous head + 1µs. So commit order equals (created_at, id) order per partition and a
-- consumer can never advance past a message that commits later. The partition_lookup
-- head is upserted in the same transaction (read-your-writes).
--
-- Dedup is the unique index itself: the insert runs ON CONFLICT DO NOTHING in item
-- order, so the first of several items with one transaction id wins and no lookup plan
-- can go wrong (a probe planned against stale statistics once walked a whole
-- partition per item). Only when some item was not stored is each item's outcome
-- looked up. Returns one row per input item (o_idx is 0-based): queued, or duplicate
-- with the stored (winning) message id, or 'full' (not stored: the queue's maxSize is
-- reached).
--
-- Plans: the common path reads no message (the unique index decides dedup). The two
-- lookups by (partition, transaction id), taken only for a full queue or when an item
-- was not stored, run through EXECUTE after queen.keyed_plans_q1(), so they are planned
-- for the values of each call with index paths only: a plan made while the table had no
-- statistics once walked a whole partition per item. Every other statement here and in
-- the functions it calls is a keyed lookup, and runs without sequential or bitmap scans
-- and with generic plans: a plan is cached by the session until a table it reads is
-- next analyzed, and one made while queen.partitions had a few rows read all of it
-- (several times per push that created a partition) once the queue had grown. Generic,
-- because with scan methods restricted PostgreSQL prices the cached generic plan above
-- one made for each call's values and would plan again on every call (0.33 ms more per
-- push of one message, measured when these settings were first tried without it).
--
-- A partition deleted by the cleanup job between its resolution and its lock makes
-- the insert fail on the partition check (23503, see 001_tables.sql); nothing is
-- written and the caller retries the call. The partitions it does hold are checked
-- once each, not once per message.
CREATE OR REPLACE FUNCTION queen.push_q3(
    p_queues     text[],
    p_partitions text[],
    p_pair       integer[],
    p_txid       text[],
    p_id         text[],
    p_payloads   text,      -- one JSON array, element i is item i's payload
    p_trace      text[],    -- NULL when no item has a trace id
    p_sub        text[],    -- NULL when no item has a producer
    p_encrypted  boolean[], -- NULL when no item is encrypted
    p_traceparent text[],   -- NULL when no item has a trace context
    p_tracestate text[]     -- NULL when no item has a tracestate
) RETURNS TABLE (o_idx integer, o_status text, o_message_id uuid, o_partition_id uuid)
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r       record;
    v_payloads jsonb := p_payloads::jsonb;
    v_pids  uuid[];
    v_allow boolean[];
    v_caps  jsonb := '{}';
    v_n     bigint;
    v_pid   uuid;
    v_qid   uuid;
    v_qids  uuid[];
    v_capped boolean;
    v_held  uuid[];
BEGIN
    IF jsonb_array_length(v_payloads) <> cardinality(p_id) THEN
        RAISE EXCEPTION 'queen: % payloads for % items', jsonb_array_length(v_payloads), cardinality(p_id)
              USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_queues) = 1 THEN
        -- One existing partition of a queue without maxSize (most pushes): its ids and
        -- both locks in one statement, taken in the order of the general path below.
        SELECT p.id, qq.id, queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') > 0 INTO v_pid, v_qid, v_capped
          FROM queen.queues qq JOIN queen.partitions p ON p.queue_id = qq.id AND p.name = p_partitions[1]
          LEFT JOIN LATERAL (SELECT pg_advisory_xact_lock_shared(queen.queue_consumers_key(qq.id)),
                                    pg_advisory_xact_lock(queen.partition_order_key(p.id))
                              WHERE queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') = 0 OFFSET 0) lk ON true
         WHERE qq.name = p_queues[1];
    END IF;
    IF v_pid IS NOT NULL AND NOT v_capped THEN
        v_pids := ARRAY[v_pid];
        v_qids := ARRAY[v_qid];
    ELSE
        v_pids := queen.partitions_resolve_q1(p_queues, p_partitions);
        SELECT array_agg(qq.id ORDER BY k.ord), bool_or(queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') > 0)
          INTO v_qids, v_capped
          FROM unnest(p_queues) WITH ORDINALITY AS k(qn, ord) LEFT JOIN queen.queues qq ON qq.name = k.qn;
        -- The queues' registration locks in share mode, until commit: a group registering
        -- as a wildcard consumer meanwhile either sees this push or is seen by it (the ready
        -- rows below; 015_ready.sql).
        PERFORM pg_advisory_xact_lock_shared(queen.queue_consumers_key(q.id))
           FROM (SELECT DISTINCT x.id FROM unnest(v_qids) AS x(id) ORDER BY x.id) q;

        -- maxSize: queues with a capacity are locked (before any partition, always in this
        -- order) and counted, so concurrent pushes cannot overfill them. Only a maxSize
        -- set through queen's configure is applied: upstream stores it and never does
        -- (queen.enforced_option_q1).
        IF v_capped THEN
            FOR r IN
                SELECT qq.id, qq.name, queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') AS max_queue_size
                FROM queen.queues qq
                WHERE qq.name = ANY (p_queues) AND queen.enforced_option_q1(qq.max_queue_size, qq.queen_options, 'maxSize') > 0
                ORDER BY qq.id
            LOOP
                PERFORM pg_advisory_xact_lock(queen.queue_capacity_key(r.id));
                -- Counted partition by partition (a join could hash every message).
                SELECT coalesce(sum(n.n), 0) INTO v_n
                FROM queen.partitions p
                CROSS JOIN LATERAL (SELECT count(*) AS n FROM queen.messages m
                                    WHERE m.partition_id = p.id) n
                WHERE p.queue_id = r.id;
                v_caps := v_caps || jsonb_build_object(r.name, greatest(r.max_queue_size - v_n, 0));
            END LOOP;
        END IF;

        PERFORM pg_advisory_xact_lock(queen.partition_order_key(x.id))
           FROM (SELECT DISTINCT x.id FROM unnest(v_pids) AS x(id) ORDER BY x.id) x;
    END IF;

    -- The partitions' rows in key-share mode, one by one in id order: the lock the
    -- messages' partition check would take for every inserted row (001_tables.sql).
    -- Named in queen.push_pids once held, they are not looked up again per message; a
    -- partition deleted since its resolution is not held, so not named, and the insert
    -- below fails the check for it (23503: the caller retries).
    SELECT array_agg(l.id) INTO v_held
      FROM (SELECT DISTINCT x.id FROM unnest(v_pids) AS x(id) ORDER BY x.id) d
      CROSS JOIN LATERAL (SELECT p.id FROM queen.partitions p WHERE p.id = d.id FOR KEY SHARE OF p) l;
    IF v_held IS NOT NULL THEN
        PERFORM set_config('queen.push_pids', v_held::text, true);
    END IF;

    IF v_caps <> '{}' THEN
        PERFORM queen.keyed_plans_q1();
        -- Only new messages count toward a capacity: an item stored before, or
        -- repeating an earlier item's transaction id, is a duplicate, not refused.
        EXECUTE $q$
            SELECT array_agg(a.allowed ORDER BY a.ord)
            FROM (
                SELECT f.ord, NOT ($1 ? f.qn)
                       OR (f.fresh AND sum(f.fresh::integer) OVER (PARTITION BY f.qn ORDER BY f.ord)
                                       <= ($1 ->> f.qn)::bigint) AS allowed
                FROM (
                    SELECT x.ord, ($2::text[])[x.pair] AS qn,
                           NOT EXISTS (SELECT 1 FROM queen.messages m
                                       WHERE m.partition_id = ($3::uuid[])[x.pair]
                                         AND m.transaction_id COLLATE "C" = x.txid)
                           AND x.ord = min(x.ord) OVER (PARTITION BY x.pair, x.txid) AS fresh
                    FROM unnest($4::integer[], $5::text[]) WITH ORDINALITY AS x(pair, txid, ord)
                ) f
            ) a
        $q$ INTO v_allow USING v_caps, p_queues, v_pids, p_pair, p_txid;
    END IF;

    -- One timestamp per partition, chosen under its lock (this statement's snapshot is
    -- taken after the locks above, so it sees the partition's latest head); ids
    -- (generated in item order) break the tie inside the batch. Every item that
    -- inserted its own row is answered here.
    RETURN QUERY
    WITH clock AS MATERIALIZED (
        SELECT clock_timestamp() AS now
    ),
    stamps AS MATERIALIZED (
        -- A subquery per partition: its head by primary key, whatever the table's size
        -- (a join planned for few partitions hashed the whole table).
        SELECT array_agg(greatest(c.now, (SELECT pl.last_message_created_at + interval '1 microsecond'
                                            FROM queen.partition_lookup pl
                                           WHERE pl.partition_id = k.pid AND pl.queue_name = k.qn))
                         ORDER BY k.ord) AS ts
        FROM clock c
        CROSS JOIN unnest(v_pids, p_queues) WITH ORDINALITY AS k(pid, qn, ord)
    ),
    ins AS (
        INSERT INTO queen.messages (id, transaction_id, partition_id, payload, trace_id,
                                    created_at, is_encrypted, producer_sub, traceparent, tracestate)
        SELECT x.mid::uuid, x.txid, v_pids[x.pair], v_payloads -> (x.ord::integer - 1), x.trace::uuid,
               s.ts[x.pair], coalesce(x.enc, false), x.sub, x.tparent, x.tstate
        FROM stamps s
        CROSS JOIN unnest(p_pair, p_txid, p_id, p_trace, p_sub, p_encrypted, p_traceparent, p_tracestate)
             WITH ORDINALITY AS x(pair, txid, mid, trace, sub, enc, tparent, tstate, ord)
        WHERE v_allow IS NULL OR v_allow[x.ord]
        ORDER BY x.ord
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
        SELECT p_queues[array_position(v_pids, h.partition_id)], h.partition_id, h.id, h.created_at, now()
        FROM heads h
        ON CONFLICT (queue_name, partition_id) DO UPDATE
           SET last_message_id = excluded.last_message_id,
               last_message_created_at = excluded.last_message_created_at,
               updated_at = excluded.updated_at
           WHERE (excluded.last_message_created_at, excluded.last_message_id)
                 > (pl.last_message_created_at, pl.last_message_id)
        RETURNING 1
    ),
    ready AS (
        -- The partitions now have work for every registered wildcard consumer, ready in
        -- the order the push names them (a microsecond apart: ties would be served in
        -- whatever order the index holds them). The queue comes from the push's own
        -- pairs, not from queen.partitions: a join there, planned while the table was
        -- small, hashed every partition of the database on each push.
        INSERT INTO queen.partition_ready (partition_id, consumer_group, queue_id, ready_at)
        SELECT h.partition_id, c.consumer_group, c.queue_id,
               k.now + make_interval(secs => (array_position(v_pids, h.partition_id) - 1) / 1e6)
        FROM heads h
        CROSS JOIN clock k
        JOIN queen.queue_consumers c ON c.queue_id = v_qids[array_position(v_pids, h.partition_id)]
        ON CONFLICT (partition_id, consumer_group) DO NOTHING
        RETURNING 1
    )
    SELECT (x.ord - 1)::integer, 'queued'::text, x.mid::uuid, v_pids[x.pair]
    FROM unnest(p_id, p_pair) WITH ORDINALITY AS x(mid, pair, ord)
    JOIN ins ON ins.id = x.mid::uuid;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n = cardinality(p_id) THEN
        RETURN;
    END IF;

    PERFORM queen.keyed_plans_q1();
    -- The other items' outcome is what is now stored under their (partition,
    -- transaction id): another message id (a duplicate: stored earlier, earlier in this
    -- batch, or by a concurrent writer), or nothing (refused: the queue is full).
    RETURN QUERY EXECUTE $q$
        SELECT (x.ord - 1)::integer,
               CASE WHEN m.id IS NULL THEN 'full' ELSE 'duplicate' END,
               m.id,
               ($4::uuid[])[x.pair]
        FROM unnest($1::text[], $2::integer[], $3::text[]) WITH ORDINALITY AS x(mid, pair, txid, ord)
        LEFT JOIN LATERAL (SELECT mm.id FROM queen.messages mm
                           WHERE mm.partition_id = ($4::uuid[])[x.pair]
                             AND mm.transaction_id COLLATE "C" = x.txid) m ON true
        WHERE m.id IS DISTINCT FROM x.mid::uuid
        ORDER BY x.ord
    $q$ USING p_id, p_pair, p_txid, v_pids;
END;
$$;

-- The nine-argument queen.push_q2 of earlier brokers: no trace contexts. Kept so that
-- a broker of the previous release still pushes against this schema.
CREATE OR REPLACE FUNCTION queen.push_q2(
    p_queues     text[],
    p_partitions text[],
    p_pair       integer[],
    p_txid       text[],
    p_id         text[],
    p_payloads   text,
    p_trace      text[],
    p_sub        text[],
    p_encrypted  boolean[]
) RETURNS TABLE (o_idx integer, o_status text, o_message_id uuid, o_partition_id uuid)
LANGUAGE sql AS $$
    SELECT * FROM queen.push_q3(p_queues, p_partitions, p_pair, p_txid, p_id, p_payloads, p_trace, p_sub,
                                p_encrypted, NULL::text[], NULL::text[])
$$;

-- queen.keyed_plans_q1 restricts the planner, until the end of the transaction, to the
-- plans of keyed lookups: index scans and nested loops, no JIT (which a path priced by
-- a disabled method would otherwise trigger). For statements whose tables may lack
-- statistics (queen.messages grows faster than autovacuum analyzes it).
CREATE OR REPLACE FUNCTION queen.keyed_plans_q1()
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
            set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
            set_config('jit', 'off', true);
END;
$$;

-- queen.partitions_resolve_q1 returns the ids of the distinct (queue, partition) pairs,
-- in order, creating missing queues and partitions ("create on first push"): one
-- lookup when they all exist, else one insert and a second lookup. Each pair is looked
-- up by its own subquery (OFFSET 0 keeps it one), under the plan settings of
-- queen.push_q3, its only caller, so that no plan made on small or unanalyzed tables
-- can read every partition.
CREATE OR REPLACE FUNCTION queen.partitions_resolve_q1(p_queues text[], p_partitions text[])
RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
    v_ids uuid[];
BEGIN
    FOR v_try IN 1 .. 2 LOOP
        SELECT array_agg(p.id ORDER BY k.ord) INTO v_ids
        FROM unnest(p_queues, p_partitions) WITH ORDINALITY AS k(qn, pn, ord)
        CROSS JOIN LATERAL (SELECT pp.id FROM queen.queues qq
                            JOIN queen.partitions pp ON pp.queue_id = qq.id AND pp.name = k.pn
                            WHERE qq.name = k.qn OFFSET 0) p;
        IF coalesce(cardinality(v_ids), 0) = coalesce(cardinality(p_queues), 0) THEN
            RETURN coalesce(v_ids, '{}');
        END IF;
        PERFORM queen.partitions_ensure_q1(p_queues, p_partitions);
    END LOOP;
    RAISE EXCEPTION 'queen: could not create partitions for this push' USING ERRCODE = '40001';
END;
$$;

-- queen.partition_order_key is the advisory-lock key that serialises appends to one
-- partition (distinct seed from the wildcard pop claim key).
CREATE OR REPLACE FUNCTION queen.partition_order_key(p_partition uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_partition::text, 1364283729)
$$;

-- queen.queue_capacity_key serialises pushes to a queue that has a maxSize.
CREATE OR REPLACE FUNCTION queen.queue_capacity_key(p_queue uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_queue::text, 1364283730)
$$;

-- queen.tenant_of_q1 is the tenant a stored name belongs to, or NULL for a global name:
-- the prefix before ':' when it is a tenant id (queen-proxy's grammar, 2-32 characters
-- of [a-z0-9-] starting with a letter) or a lowercase canonical UUID (the 1.x clients'
-- tenant header).
CREATE OR REPLACE FUNCTION queen.tenant_of_q1(p_name text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT substring(p_name FROM
        '^([a-z][a-z0-9-]{0,30}[a-z0-9]|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):')
$$;

-- queen.relative_name_q1 is a stored name without its tenant prefix.
CREATE OR REPLACE FUNCTION queen.relative_name_q1(p_name text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(substr(p_name, length(queen.tenant_of_q1(p_name)) + 2), p_name)
$$;

-- Queues a push created for a UUID tenant before queen.tenant_of_q1 knew UUIDs took
-- their namespace and task from the stored name, prefix included ('<uuid>:shop' for
-- '<uuid>:shop.cart'): they get the relative name's, as any tenant's queue does. Only
-- queues whose namespace and task are still what that derivation gave are changed.
UPDATE queen.queues q
   SET namespace = split_part(queen.relative_name_q1(q.name), '.', 1),
       task = split_part(queen.relative_name_q1(q.name), '.', 2)
 WHERE q.name ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:'
   AND q.namespace = split_part(q.name, '.', 1) AND q.task = split_part(q.name, '.', 2);

-- queen.partitions_ensure_q1 creates the queues and partitions a push names ("create on
-- first push"): a new queue gets namespace/task from its name (a tenant's queue,
-- "<tenant>:<name>", from the relative name after the tenant prefix) and queen's
-- option defaults; existing queues and partitions are never changed. Each name is
-- looked up by a subquery of its own (OFFSET 0 keeps it one, not a join that a plan
-- made on small tables could turn into a read of every partition), with the plan
-- settings of queen.push_q3: its callers (pushes, transactions, queen.send) share the
-- session's plans of it.
CREATE OR REPLACE FUNCTION queen.partitions_ensure_q1(p_queue text[], p_partition text[])
RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    INSERT INTO queen.queues (name, namespace, task, retry_delay, ttl)
    SELECT DISTINCT x.q, split_part(x.rel, '.', 1), split_part(x.rel, '.', 2), 0, 0
    FROM unnest(p_queue) AS u(q)
    CROSS JOIN LATERAL (SELECT u.q, queen.relative_name_q1(u.q) AS rel) x
    WHERE NOT EXISTS (SELECT 1 FROM queen.queues qq WHERE qq.name = x.q OFFSET 0)
    ON CONFLICT (name) DO NOTHING;

    INSERT INTO queen.partitions (queue_id, name)
    SELECT DISTINCT qq.id, x.pn
    FROM unnest(p_queue, p_partition) AS x(qn, pn)
    CROSS JOIN LATERAL (SELECT q.id FROM queen.queues q WHERE q.name = x.qn OFFSET 0) qq
    WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.queue_id = qq.id AND p.name = x.pn OFFSET 0)
    ON CONFLICT (queue_id, name) DO NOTHING;
END;
$$;
