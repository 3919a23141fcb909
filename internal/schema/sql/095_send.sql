-- queen.send and queen.send_batch push messages from SQL, inside the caller's own
-- transaction (the transactional outbox): the messages commit or roll back with it, and
-- parked long-polls wake after its commit. Their names and signatures are a public,
-- stable contract (docs/sql.md). They run queen.push_q3, so the semantics are those of
-- POST /api/v1/push: queues and partitions created on first use, dedup by (partition,
-- transactionId) with the stored message's id answered, the per-partition ordering
-- lock, maxSize. They differ where SQL must: a full queue raises (the caller's
-- transaction cannot be half-applied), a queue with encryptionEnabled raises (the key
-- is the broker's), and they need READ COMMITTED (the ordering lock must see the latest
-- committed head of the partition, which a REPEATABLE READ snapshot would hide).
--
-- SECURITY DEFINER with a fixed search_path: a role granted USAGE on schema queen and
-- EXECUTE on these functions can send without any privilege on the tables. The planner
-- settings are function-local, so the lookups push_q3 restricts never leak into the
-- rest of the caller's transaction.

-- queen.send_ids_q1 makes n message ids that increase in order: a UUIDv7 layout (48-bit
-- Unix milliseconds, version 7, a 12-bit sequence, variant 10, random bits). Ordering
-- within a partition is by (created_at, id), and a batch shares one created_at per
-- partition, so the ids must follow item order.
CREATE OR REPLACE FUNCTION queen.send_ids_q1(n integer)
RETURNS text[] LANGUAGE sql VOLATILE AS $$
    -- Item i's sequence spans the 12 bits of rand_a (i / 4) and the two bits after the
    -- variant (i % 4): up to 16 384 increasing ids in one millisecond.
    SELECT coalesce(array_agg(
        substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || lpad(to_hex(i / 4), 3, '0') || '-'
        || to_hex(8 + i % 4) || lpad(to_hex(floor(random() * 4096)::integer), 3, '0') || '-'
        || lpad(to_hex(floor(random() * 281474976710656)::bigint), 12, '0')
        ORDER BY i), '{}')
    FROM (SELECT lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') AS h) t,
         generate_series(0, n - 1) AS i
$$;

-- queen.send_batch pushes p_messages, a JSON array of objects {"queue", "partition"
-- (default or empty: "Default"), "payload" (any JSON, default null), "transactionId" (default: the
-- message id), "traceId" (a UUID, optional)}, in one call, and returns one row per
-- message in order: its message id (the stored one for a duplicate), its transaction
-- id, and queued or duplicate.
CREATE OR REPLACE FUNCTION queen.send_batch(p_messages jsonb)
RETURNS TABLE (idx integer, message_id uuid, transaction_id text, status text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = on SET enable_bitmapscan = on SET enable_hashjoin = on
SET enable_mergejoin = on SET jit = off
AS $$
DECLARE
    v_n        integer;
    v_ids      text[];
    v_queues   text[];
    v_parts    text[];
    v_pair     integer[];
    v_txid     text[];
    v_payloads jsonb;
    v_trace    text[];
    v_bad      record;
    v_full     text;
    v_enc      text;
    v_status   text[];
    v_mids     uuid[];
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'queen.send needs a READ COMMITTED transaction (this one is %)',
              current_setting('transaction_isolation')
              USING ERRCODE = '25000', HINT = 'The ordering lock must see the latest committed head of each partition.';
    END IF;
    IF p_messages IS NULL OR jsonb_typeof(p_messages) <> 'array' THEN
        RAISE EXCEPTION 'queen.send_batch: messages must be a JSON array' USING ERRCODE = '22023';
    END IF;
    v_n := jsonb_array_length(p_messages);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    IF v_n > 10000 THEN
        RAISE EXCEPTION 'queen.send_batch: at most 10000 messages per call (got %)', v_n USING ERRCODE = '22023';
    END IF;
    SELECT x.ord, x.m INTO v_bad
      FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS x(m, ord)
     WHERE jsonb_typeof(x.m) <> 'object'
        OR jsonb_typeof(x.m -> 'queue') IS DISTINCT FROM 'string'
        OR x.m ->> 'queue' = '' OR length(x.m ->> 'queue') > 255
        OR coalesce(jsonb_typeof(x.m -> 'partition'), 'null') NOT IN ('string', 'null')
        OR length(x.m ->> 'partition') > 255
        OR coalesce(jsonb_typeof(x.m -> 'transactionId'), 'null') NOT IN ('string', 'null')
        OR length(x.m ->> 'transactionId') > 255
        OR coalesce(jsonb_typeof(x.m -> 'traceId'), 'null') NOT IN ('string', 'null')
        OR (x.m ->> 'traceId' IS NOT NULL AND x.m ->> 'traceId'
            !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
     ORDER BY x.ord LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queen.send_batch: message % is invalid: queue must be a non-empty string of at most 255 characters; '
              'partition, transactionId (at most 255 characters) and traceId (a UUID) optional strings', v_bad.ord - 1
              USING ERRCODE = '22023';
    END IF;

    v_ids := queen.send_ids_q1(v_n);
    WITH items AS (
        SELECT x.ord, x.m ->> 'queue' AS qn, coalesce(nullif(x.m ->> 'partition', ''), 'Default') AS pn,
               coalesce(nullif(x.m ->> 'transactionId', ''), v_ids[x.ord]) AS txid,
               coalesce(x.m -> 'payload', 'null'::jsonb) AS payload, x.m ->> 'traceId' AS trace
        FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS x(m, ord)
    ),
    pairs AS (
        SELECT qn, pn, row_number() OVER (ORDER BY min(ord)) AS pair FROM items GROUP BY qn, pn
    )
    SELECT array_agg(i.txid ORDER BY i.ord), array_agg(p.pair::integer ORDER BY i.ord),
           jsonb_agg(i.payload ORDER BY i.ord), array_agg(i.trace ORDER BY i.ord),
           (SELECT array_agg(qn ORDER BY pair) FROM pairs), (SELECT array_agg(pn ORDER BY pair) FROM pairs)
      INTO v_txid, v_pair, v_payloads, v_trace, v_queues, v_parts
      FROM items i JOIN pairs p ON p.qn = i.qn AND p.pn = i.pn;

    PERFORM queen.partitions_ensure_q1(v_queues, v_parts);
    SELECT q.name INTO v_enc FROM queen.queues q WHERE q.name = ANY (v_queues) AND q.encryption_enabled LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queen.send: queue % has encryptionEnabled; only the broker holds the key: push it through HTTP', v_enc
              USING ERRCODE = '0A000';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM unnest(v_trace) t WHERE t IS NOT NULL) THEN
        v_trace := NULL;
    END IF;

    SELECT array_agg(r.o_status ORDER BY r.o_idx), array_agg(r.o_message_id ORDER BY r.o_idx)
      INTO v_status, v_mids
      FROM queen.push_q3(v_queues, v_parts, v_pair, v_txid, v_ids, v_payloads::text, v_trace, NULL, NULL, NULL, NULL) r;
    v_full := (SELECT v_queues[v_pair[k]] FROM generate_subscripts(v_status, 1) AS k WHERE v_status[k] = 'full' LIMIT 1);
    IF v_full IS NOT NULL THEN
        RAISE EXCEPTION 'queen.send: queue % is full: maxSize reached', v_full USING ERRCODE = '53400';
    END IF;
    PERFORM pg_notify('queen_wake', x.q)
       FROM (SELECT DISTINCT v_queues[v_pair[k]] AS q FROM generate_subscripts(v_status, 1) AS k
             WHERE v_status[k] = 'queued') x;
    RETURN QUERY
    SELECT (k - 1)::integer, v_mids[k], v_txid[k], v_status[k] FROM generate_subscripts(v_status, 1) AS k ORDER BY k;
END;
$$;

-- queen.send pushes one message to p_queue / p_partition, like one element of
-- queen.send_batch; p_transaction_id NULL lets the broker-side default (the message id)
-- apply.
CREATE OR REPLACE FUNCTION queen.send(p_queue text, p_partition text, p_payload jsonb,
                                      p_transaction_id text DEFAULT NULL)
RETURNS TABLE (message_id uuid, transaction_id text, status text)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.message_id, s.transaction_id, s.status
    FROM queen.send_batch(jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
        'queue', p_queue, 'partition', p_partition, 'transactionId', p_transaction_id)) ||
        jsonb_build_object('payload', coalesce(p_payload, 'null'::jsonb)))) s
$$;

REVOKE ALL ON FUNCTION queen.send_batch(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.send(text, text, jsonb, text) FROM PUBLIC;
