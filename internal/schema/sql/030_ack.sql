-- queen.ack_q1 applies a batch of acknowledgements for one consumer group
-- (docs/api.md). p_lease holds '' for "no lease check". Returns one row per item,
-- by input index.
--
-- Fast path: the common call (every message found, every status completed/success,
-- one lease value per partition and that lease live or absent, no more acks per
-- partition than its leased batch has left) is applied set-based: one lookup (a single
-- range scan when the batch names one partition's next messages in order, as the ack
-- of a pop does) and one UPDATE per call, with the outcome queen.ack_items_q1 gives item by item (each
-- partition's cursor moves to its greatest acked message; the item that completes the
-- leased batch releases the lease). Locks are taken in the item loop's order (advisory
-- lock, then cursor row, by partition id). Every other call is handed to
-- queen.ack_items_q1. A test runs random acks through both and compares.
CREATE OR REPLACE FUNCTION queen.ack_q1(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean)
-- Plans: every access here is a keyed lookup or an ordered range, so the planner may
-- only use index scans and nested loops (queen.messages statistics lag behind a queue's
-- growth; with a partition that looks small a planner once chose a seq scan + hash join
-- for 100 ack lookups, or a bitmap scan + sort of a whole partition for a pop of 100).
-- jit is off: a path priced by a disabled method would otherwise cross jit_above_cost.
-- With only index nested loops left, the lookup by (partition, transaction id) probes
-- the unique index in custom and cached plans alike (a store test counts the rows it
-- reads on a table without statistics), so its cached plan is kept: planning it per
-- call cost 0.3 ms of a 2.3 ms pop+ack of 100.
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
DECLARE
    v_now   timestamptz := now();
    v_mid   uuid[];
    v_mts   timestamptz[];
    v_pids  uuid[];
    v_fast  boolean;
    v_wtx   text[];
BEGIN
    -- The ack of one pop names, in order, the messages right after the cursor: read them
    -- with one range scan instead of one index probe per item. Only an accelerator: the
    -- rows found are the ones the probes would find ((partition, transaction id) is
    -- unique), and anything else takes the probes. The three arrays take the rows in
    -- one order, the scan's (an ORDER BY in each would sort them three times), and
    -- only if that order is the batch's (v_wtx = p_txid) are they used.
    IF p_pid[1] = ALL (p_pid) THEN
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
              LIMIT cardinality(p_txid)) w
         WHERE c.partition_id = p_pid[1]::uuid AND c.consumer_group = p_group;
        IF v_wtx = p_txid THEN
            SELECT bool_and(lower(coalesce(x.status, 'completed')) IN ('completed', 'success'))
                   AND count(DISTINCT coalesce(x.lease, '')) = 1
              INTO v_fast
              FROM unnest(p_status, p_lease) AS x(status, lease);
            v_pids := ARRAY[p_pid[1]::uuid];
        END IF;
    END IF;
    IF v_pids IS NULL THEN
        SELECT array_agg(m.id ORDER BY x.ord), array_agg(m.created_at ORDER BY x.ord),
               bool_and(m.id IS NOT NULL AND lower(coalesce(x.status, 'completed')) IN ('completed', 'success'))
               -- one lease value per partition
               AND count(DISTINCT (x.pid::uuid, coalesce(x.lease, ''))) = count(DISTINCT x.pid::uuid),
               array_agg(DISTINCT x.pid::uuid ORDER BY x.pid::uuid)
          INTO v_mid, v_mts, v_fast, v_pids
          FROM unnest(p_txid, p_pid, p_status, p_lease) WITH ORDINALITY AS x(txid, pid, status, lease, ord)
          LEFT JOIN queen.messages m ON m.partition_id = x.pid::uuid AND m.transaction_id COLLATE "C" = x.txid;
    END IF;
    IF v_fast AND cardinality(v_pids) = 1 THEN
        -- One partition (every lease value is the same): a statement of its own, which
        -- PostgreSQL plans once (the general one below it planned again on every call).
        PERFORM pg_advisory_xact_lock(queen.ack_lock_key(v_pids[1], p_group));
        SELECT (coalesce(p_lease[1], '') = ''
                OR (c.worker_id = coalesce(p_lease[1], '') AND c.lease_expires_at > v_now))
               AND (coalesce(c.batch_size, 0) <= 0 OR cardinality(p_pid) <= c.batch_size - coalesce(c.acked_count, 0))
          INTO v_fast
          FROM queen.partition_consumers c
         WHERE c.partition_id = v_pids[1] AND c.consumer_group = p_group
           FOR UPDATE;
        v_fast := coalesce(v_fast, false);
    ELSIF v_fast THEN
        PERFORM pg_advisory_xact_lock(queen.ack_lock_key(x.pid, p_group))
           FROM unnest(v_pids) WITH ORDINALITY AS x(pid, ord) ORDER BY x.ord;
        SELECT count(*) = cardinality(v_pids) INTO v_fast
          FROM (SELECT c.partition_id, c.worker_id, c.lease_expires_at, c.batch_size, c.acked_count
                FROM queen.partition_consumers c
                WHERE c.partition_id = ANY (v_pids) AND c.consumer_group = p_group
                ORDER BY c.partition_id FOR UPDATE) c
          JOIN (SELECT x.pid::uuid AS pid, count(*) AS k, min(coalesce(x.lease, '')) AS lease
                FROM unnest(p_pid, p_lease) AS x(pid, lease) GROUP BY 1) g ON g.pid = c.partition_id
         WHERE (g.lease = '' OR (c.worker_id = g.lease AND c.lease_expires_at > v_now))
           AND (coalesce(c.batch_size, 0) <= 0 OR g.k <= c.batch_size - coalesce(c.acked_count, 0));
    END IF;
    IF v_fast THEN
        RETURN QUERY
        WITH items AS (
            SELECT (x.ord - 1)::integer AS i, x.pid::uuid AS pid, x.mid, x.mts, x.ord
            FROM unnest(p_pid, v_mid, v_mts) WITH ORDINALITY AS x(pid, mid, mts, ord)
        ),
        last AS (
            -- per partition: the item the loop would apply last, and the count
            SELECT DISTINCT ON (a.pid) a.pid, a.mid, a.mts, a.ord,
                   count(*) OVER (PARTITION BY a.pid) AS k
            FROM items a
            ORDER BY a.pid, a.mts DESC, a.mid DESC, a.ord DESC
        ),
        s AS (
            SELECT l.*, c.id AS cid,
                   (c.last_consumed_created_at IS NULL
                    OR (l.mts, l.mid) > (c.last_consumed_created_at, c.last_consumed_id)) AS fwd,
                   coalesce(c.batch_size > 0 AND coalesce(c.acked_count, 0) + l.k >= c.batch_size, false) AS rel,
                   p.name::text AS pname, q.name::text AS qname
            FROM last l
            JOIN queen.partition_consumers c ON c.partition_id = l.pid AND c.consumer_group = p_group
            JOIN queen.partitions p ON p.id = l.pid
            JOIN queen.queues q ON q.id = p.queue_id
        ),
        upd AS (
            UPDATE queen.partition_consumers c
               SET last_consumed_created_at = CASE WHEN s.fwd THEN s.mts ELSE c.last_consumed_created_at END,
                   last_consumed_id = CASE WHEN s.fwd THEN s.mid ELSE c.last_consumed_id END,
                   last_consumed_at = v_now,
                   total_messages_consumed = c.total_messages_consumed + s.k,
                   acked_count = CASE WHEN s.rel THEN 0 ELSE coalesce(c.acked_count, 0) + s.k END,
                   batch_retry_count = CASE WHEN s.fwd OR s.rel THEN 0 ELSE c.batch_retry_count END,
                   batch_size = CASE WHEN s.rel THEN 0 ELSE c.batch_size END,
                   lease_acquired_at = CASE WHEN s.rel THEN NULL ELSE c.lease_acquired_at END,
                   lease_expires_at = CASE WHEN s.rel THEN NULL ELSE c.lease_expires_at END,
                   worker_id = CASE WHEN s.rel THEN NULL ELSE c.worker_id END
              FROM s
             WHERE c.id = s.cid
            RETURNING 1
        )
        SELECT a.i, true, NULL::text, s.qname, s.pname, s.rel AND a.ord = s.ord, false
        FROM items a JOIN s ON s.pid = a.pid;
        PERFORM queen.ready_settle_many_q1(v_pids, p_group);
        RETURN;
    END IF;

    RETURN QUERY SELECT * FROM queen.ack_items_q1(p_txid, p_pid, p_lease, p_status, p_error, p_group);
END;
$$;

-- queen.ack_q2 is queen.ack_q1 with shorter arrays, a shorter answer and a shorter way
-- for the ack of a pop. p_pid, p_lease, p_status and p_error hold one element per item
-- of p_txid, or a single element that stands for every item. The ack of a pop (every
-- item completed, one lease value, the items naming, in order, one partition's next
-- messages after the group's cursor) is applied with one range scan, one locked read
-- and one update of the cursor row, and answered with a single row of o_idx -1: every
-- item succeeded, in o_queue and o_partition, and the last item released the lease when
-- o_lease_released. Any other batch is answered by queen.ack_q1, one row per item. The
-- outcome is the one queen.ack_q1 gives (a test runs random acks through both).
CREATE OR REPLACE FUNCTION queen.ack_q2(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean)
-- Plans: as queen.ack_q1's (index scans and nested loops only).
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
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
    v_loop  boolean := false;
BEGIN
    IF v_n > 1 AND NOT (cardinality(p_pid) IN (1, v_n) AND cardinality(p_lease) IN (1, v_n)
                        AND cardinality(p_status) IN (1, v_n) AND cardinality(p_error) IN (1, v_n)) THEN
        RAISE EXCEPTION 'queen.ack_q2: % items, and % partition ids, % leases, % statuses, % errors',
            v_n, cardinality(p_pid), cardinality(p_lease), cardinality(p_status), cardinality(p_error);
    END IF;
    -- Checked without a query: one partition, one lease value, nothing but completions
    -- (the broker sends statuses lower-cased; anything else goes the long way).
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
            -- The locks of queen.ack_q1, in its order: advisory lock, then cursor row.
            PERFORM pg_advisory_xact_lock(queen.ack_lock_key(v_pid, p_group));
            SELECT c.id, q.name::text, p.name::text,
                   (coalesce(p_lease[1], '') = ''
                    OR (c.worker_id = p_lease[1] AND c.lease_expires_at > v_now))
                   AND (coalesce(c.batch_size, 0) <= 0 OR v_n <= c.batch_size - coalesce(c.acked_count, 0)),
                   c.last_consumed_created_at IS NULL
                   OR (v_mts[v_n], v_mid[v_n]) > (c.last_consumed_created_at, c.last_consumed_id),
                   coalesce(c.batch_size > 0 AND coalesce(c.acked_count, 0) + v_n >= c.batch_size, false),
                   c.last_consumed_created_at, c.last_consumed_id, c.lease_expires_at
              INTO v_cid, v_qname, v_pname, v_ok, v_fwd, v_rel, v_cts, v_cmid, v_exp
              FROM queen.partition_consumers c
              JOIN queen.partitions p ON p.id = c.partition_id
              JOIN queen.queues q ON q.id = p.queue_id
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
                o_partition := v_pname; o_lease_released := v_rel; o_dlq := false;
                RETURN NEXT;
                RETURN;
            END IF;
            -- queen.ack_q1 would find this batch the same way and refuse it on the
            -- same lease check: straight to its item loop.
            v_loop := true;
        END IF;
    END IF;
    IF v_n > 1 THEN
        p_pid := queen.ack_spread_q1(p_pid, v_n);
        p_lease := queen.ack_spread_q1(p_lease, v_n);
        p_status := queen.ack_spread_q1(p_status, v_n);
        p_error := queen.ack_spread_q1(p_error, v_n);
    END IF;
    IF v_loop THEN
        RETURN QUERY SELECT * FROM queen.ack_items_q1(p_txid, p_pid, p_lease, p_status, p_error, p_group);
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM queen.ack_q1(p_txid, p_pid, p_lease, p_status, p_error, p_group);
END;
$$;

-- queen.ack_spread_q1 returns p_values (one element per item, or one for all) with
-- one element per item of p_n.
CREATE OR REPLACE FUNCTION queen.ack_spread_q1(p_values text[], p_n integer)
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(p_values) = 1 THEN array_fill(p_values[1], ARRAY[p_n]) ELSE p_values END
$$;

-- queen.ack_items_q1 applies a batch of acknowledgements for one consumer group
-- (docs/api.md). Items are processed in (partition, message order); each
-- (partition, group) is serialised by a blocking advisory lock. Differences from
-- upstream, each a fix of an upstream hazard:
--   * the cursor only moves forward (an old ack never rewinds it);
--   * once an item triggered a retry (failed within retryLimit, or retry), later items
--     of the same (partition, group) in the call cannot move the cursor past the failed
--     message: they fail with "lease released by earlier failure" (no skipped message);
--   * the retry counter resets whenever the cursor moves (completed or dead-lettered);
--   * a queue whose dead-letter queue is off (both flags false, set through queen's
--     configure: queen.dlq_off_q1) drops a message instead of dead-lettering it;
--   * retryDelay is honoured: after a failed ack within retryLimit the partition is not
--     redelivered to the group before retry_delay milliseconds, when it was set through
--     queen's configure (upstream stores 1000 everywhere and never applies it; see
--     queen.enforced_option_q1).
-- p_lease holds '' for "no lease check". Returns one row per item, by input index.
-- The cursor row of the current partition is read once (locked) and updated in memory
-- item by item; it is written back once, when the partition changes and at the end.
-- Nobody else can change it meanwhile (row lock and advisory lock), so the outcome is
-- the one per-item UPDATEs would give, without a new row version per acked message.
CREATE OR REPLACE FUNCTION queen.ack_items_q1(
    p_txid   text[],
    p_pid    text[],
    p_lease  text[],
    p_status text[],
    p_error  text[],
    p_group  text
) RETURNS TABLE (o_idx integer, o_success boolean, o_error text, o_queue text, o_partition text,
                 o_lease_released boolean, o_dlq boolean)
-- Plans: every access here is a keyed lookup or an ordered range, so the planner may
-- only use index scans and nested loops (queen.messages statistics lag behind a queue's
-- growth; with a partition that looks small a planner once chose a seq scan + hash join
-- for 100 ack lookups, or a bitmap scan + sort of a whole partition for a pop of 100).
-- jit is off: a path priced by a disabled method would otherwise cross jit_above_cost.
-- The lookups by (partition, transaction id) run through EXECUTE, planned for the
-- values of each call.
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
    v_released  boolean;
    v_dlq       boolean;
    v_has_row   boolean;
    v_loaded    boolean := false;
    v_dirty     boolean := false;
    v_forward   boolean;
    v_status    text;
    v_now       timestamptz := now();
BEGIN
    FOR it IN EXECUTE $q$
        SELECT (x.ord - 1)::integer AS i, x.txid, x.pid::uuid AS pid, coalesce(x.lease, '') AS lease,
               lower(coalesce(x.status, 'completed')) AS status, x.err,
               m.id AS mid, m.created_at AS mts, p.name::text AS pname, q.name::text AS qname,
               coalesce(q.retry_limit, 3) AS retry_limit,
               queen.enforced_option_q1(q.retry_delay, q.queen_options, 'retryDelay') AS retry_delay,
               queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options) AS dlq_off
        FROM unnest($1, $2, $3, $4, $5) WITH ORDINALITY AS x(txid, pid, lease, status, err, ord)
        LEFT JOIN queen.messages m ON m.partition_id = x.pid::uuid AND m.transaction_id COLLATE "C" = x.txid
        LEFT JOIN queen.partitions p ON p.id = m.partition_id
        LEFT JOIN queen.queues q ON q.id = p.queue_id
        ORDER BY x.pid::uuid, m.created_at NULLS FIRST, m.id, x.ord
    $q$ USING p_txid, p_pid, p_lease, p_status, p_error
    LOOP
        o_idx := it.i;
        o_queue := it.qname;
        o_partition := it.pname;
        o_lease_released := NULL;
        o_dlq := false;
        IF it.mid IS NULL THEN
            o_success := false; o_error := 'Message not found'; o_queue := NULL; o_partition := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        IF v_locked IS DISTINCT FROM it.pid THEN
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
            v_status := 'completed';
        END IF;

        IF it.pid = ANY (v_retried) THEN
            IF v_status IN ('failed', 'retry') THEN
                o_success := true; o_error := NULL; o_lease_released := true;
            ELSE
                o_success := false; o_error := 'lease released by earlier failure';
            END IF;
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- coalesce: a released lease has NULL worker_id/expiry, and NOT NULL is NULL.
        IF it.lease <> '' AND NOT coalesce(v_has_row AND pc.worker_id = it.lease AND pc.lease_expires_at > v_now, false) THEN
            o_success := false; o_error := 'Invalid or expired lease';
            RETURN NEXT;
            CONTINUE;
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

        IF v_status NOT IN ('completed', 'failed', 'dlq') THEN
            o_success := false; o_error := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- A queue whose dead-letter queue is off drops the message instead.
        v_dlq := v_status IN ('failed', 'dlq') AND NOT it.dlq_off;
        IF v_dlq THEN
            INSERT INTO queen.dead_letter_queue
                   (message_id, partition_id, consumer_group, error_message, retry_count, original_created_at)
            VALUES (it.mid, it.pid, p_group, coalesce(nullif(it.err, ''), 'Retries exhausted'),
                    CASE WHEN v_has_row THEN pc.batch_retry_count ELSE 0 END, it.mts);
        END IF;

        IF NOT v_has_row THEN
            -- No cursor row: nothing to move (a dead letter creates none, which would
            -- skip the earlier messages for the group).
            o_success := true; o_error := NULL; o_dlq := v_dlq;
            RETURN NEXT;
            CONTINUE;
        END IF;

        v_forward := pc.last_consumed_created_at IS NULL
                     OR (it.mts, it.mid) > (pc.last_consumed_created_at, pc.last_consumed_id);
        v_released := pc.batch_size > 0 AND pc.acked_count + 1 >= pc.batch_size;

        IF v_forward THEN
            pc.last_consumed_created_at := it.mts;
            pc.last_consumed_id := it.mid;
        END IF;
        pc.last_consumed_at := v_now;
        pc.total_messages_consumed := pc.total_messages_consumed + 1;
        pc.acked_count := CASE WHEN v_released THEN 0 ELSE pc.acked_count + 1 END;
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

        o_success := true; o_error := NULL; o_lease_released := v_released; o_dlq := v_dlq;
        RETURN NEXT;
    END LOOP;
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

-- queen.ack_lock_key serialises acks per (partition, consumer group): the first 64 bits
-- of md5(partition_id || consumer_group), as upstream.
CREATE OR REPLACE FUNCTION queen.ack_lock_key(p_partition uuid, p_group text)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ('x' || substr(md5(p_partition::text || p_group), 1, 16))::bit(64)::bigint
$$;

-- queen.extend_lease_q1 extends every live lease held under p_lease_id (multi-partition
-- pops share one id) to at least now + p_seconds; it never shortens nor revives one.
CREATE OR REPLACE FUNCTION queen.extend_lease_q1(p_lease_id text, p_seconds integer)
RETURNS TABLE (o_success boolean, o_error text, o_expires_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_exp timestamptz;
BEGIN
    WITH upd AS (
        UPDATE queen.partition_consumers c
           SET lease_expires_at = greatest(c.lease_expires_at, now() + make_interval(secs => p_seconds))
         WHERE c.worker_id = p_lease_id AND c.lease_expires_at > now()
        RETURNING c.partition_id, c.consumer_group, c.lease_expires_at
    ),
    parked AS (
        -- The ready rows wait for the new expiry.
        UPDATE queen.partition_ready r SET ready_at = upd.lease_expires_at
          FROM upd
         WHERE r.partition_id = upd.partition_id AND r.consumer_group = upd.consumer_group
    )
    SELECT min(upd.lease_expires_at) INTO v_exp FROM upd;
    IF v_exp IS NOT NULL THEN
        RETURN QUERY SELECT true, NULL::text, v_exp;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM queen.partition_consumers c WHERE c.worker_id = p_lease_id) THEN
        RETURN QUERY SELECT false, 'Lease already expired'::text, NULL::timestamptz;
    ELSE
        RETURN QUERY SELECT false, 'Lease not found'::text, NULL::timestamptz;
    END IF;
END;
$$;

-- A database adopted from upstream (no schema version recorded yet) can hold a retry
-- counter upstream left at the queue's retryLimit after a dead letter: upstream resets
-- it only when a batch completes, so the partition's next failure would be
-- dead-lettered without a retry. queen resets it whenever the cursor moves past a
-- failed message, so on adoption the counters of cursors that stand at one of the
-- group's dead letters go back to 0. Never again afterwards: in queen's own state such
-- a counter counts the failures of the message after the cursor.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queen.schema_version) THEN
        UPDATE queen.partition_consumers pc SET batch_retry_count = 0
         WHERE pc.batch_retry_count > 0
           AND EXISTS (SELECT 1 FROM queen.dead_letter_queue d
                       WHERE d.message_id = pc.last_consumed_id AND d.consumer_group = pc.consumer_group);
    END IF;
END
$$;
