-- Streams: the server half of the SDKs' Stream runtime. The SDKs run the pipelines; the
-- broker keeps query registrations and per-(query, source partition) state, and commits
-- a cycle's state ops, sink pushes and source ack in one transaction. The two upstream
-- tables keep upstream's layout (names, columns, keys, the index on state.updated_at) so
-- databases and operators' scripts move between brokers; queen_streams.shards is ours.

CREATE SCHEMA IF NOT EXISTS queen_streams;

CREATE TABLE IF NOT EXISTS queen_streams.queries (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE,
    source_queue text NOT NULL,
    sink_queue   text,
    config_hash  text NOT NULL,
    created_at   timestamptz DEFAULT now(),
    updated_at   timestamptz DEFAULT now()
);

-- partition_id deliberately has no foreign key: a shard's state outlives the cleanup
-- of an idle partition (its open windows can still be flushed); it goes with a reset,
-- a query delete, or the delete of the partition's queue.
CREATE TABLE IF NOT EXISTS queen_streams.state (
    query_id     uuid NOT NULL REFERENCES queen_streams.queries(id) ON DELETE CASCADE,
    partition_id uuid NOT NULL,
    key          text NOT NULL,
    value        jsonb NOT NULL,
    updated_at   timestamptz DEFAULT now(),
    PRIMARY KEY (query_id, partition_id, key)
);
CREATE INDEX IF NOT EXISTS idx_streams_state_updated_at ON queen_streams.state (updated_at);

-- queen_streams.shards records, per (query, source partition), how many cycles
-- committed and when the last one did: what `queenctl streams` shows. One row per shard,
-- written under the shard's cycle lock, so cycles of different partitions never contend
-- on it (a per-query counter would serialise them all).
CREATE TABLE IF NOT EXISTS queen_streams.shards (
    query_id      uuid NOT NULL REFERENCES queen_streams.queries(id) ON DELETE CASCADE,
    partition_id  uuid NOT NULL,
    cycles        bigint NOT NULL DEFAULT 0,
    last_cycle_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (query_id, partition_id)
);

-- queen_streams.cycle_lock_key serialises the cycles of one (query, partition) shard.
-- Same key as upstream, so cycles of both brokers on one database exclude each other.
CREATE OR REPLACE FUNCTION queen_streams.cycle_lock_key(p_query uuid, p_partition uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_query::text || ':' || p_partition::text, 0)
$$;

-- queen_streams.register_q1 registers or resumes a query by name. A new name is
-- created (fresh). The same config hash updates source and sink. Another hash with
-- p_reset deletes the query's state and shards and stores the new hash (reset);
-- without p_reset nothing changes and the stored hash comes back with o_mismatch.
-- The row lock (FOR UPDATE) waits for running cycles, which hold FOR KEY SHARE.
CREATE OR REPLACE FUNCTION queen_streams.register_q1(
    p_name text, p_source text, p_sink text, p_hash text, p_reset boolean
) RETURNS TABLE (o_id uuid, o_fresh boolean, o_reset boolean, o_mismatch boolean, o_stored_hash text)
LANGUAGE plpgsql AS $$
DECLARE
    v_id   uuid;
    v_hash text;
BEGIN
    INSERT INTO queen_streams.queries (name, source_queue, sink_queue, config_hash)
    VALUES (p_name, p_source, p_sink, p_hash)
    ON CONFLICT (name) DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NOT NULL THEN
        RETURN QUERY SELECT v_id, true, false, false, p_hash;
        RETURN;
    END IF;
    SELECT q.id, q.config_hash INTO v_id, v_hash FROM queen_streams.queries q WHERE q.name = p_name FOR UPDATE;
    IF v_hash = p_hash THEN
        UPDATE queen_streams.queries SET source_queue = p_source, sink_queue = p_sink, updated_at = now()
         WHERE id = v_id;
        RETURN QUERY SELECT v_id, false, false, false, v_hash;
    ELSIF p_reset THEN
        DELETE FROM queen_streams.state WHERE query_id = v_id;
        DELETE FROM queen_streams.shards WHERE query_id = v_id;
        UPDATE queen_streams.queries
           SET source_queue = p_source, sink_queue = p_sink, config_hash = p_hash, updated_at = now()
         WHERE id = v_id;
        RETURN QUERY SELECT v_id, false, true, false, p_hash;
    ELSE
        RETURN QUERY SELECT v_id, false, false, true, v_hash;
    END IF;
END;
$$;

-- queen_streams.cycle_begin_q1 opens a cycle: it takes the shard's lock (blocking: the
-- cycles of one shard run one after another), reads the query under FOR KEY SHARE (a
-- reset or delete waits for the cycle), records the cycle on the shard, and takes every
-- lock the sink pushes and the source ack will need, in the global order of
-- queen.tx_prepare_q1. o_found is false when the query does not exist.
CREATE OR REPLACE FUNCTION queen_streams.cycle_begin_q1(
    p_query uuid, p_partition uuid, p_push_queue text[], p_push_partition text[], p_ack_group text
) RETURNS TABLE (o_found boolean, o_source text)
LANGUAGE plpgsql AS $$
DECLARE
    v_source text;
BEGIN
    PERFORM pg_advisory_xact_lock(queen_streams.cycle_lock_key(p_query, p_partition));
    SELECT q.source_queue INTO v_source FROM queen_streams.queries q WHERE q.id = p_query FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::text;
        RETURN;
    END IF;
    INSERT INTO queen_streams.shards AS s (query_id, partition_id, cycles, last_cycle_at)
    VALUES (p_query, p_partition, 1, now())
    ON CONFLICT (query_id, partition_id) DO UPDATE SET cycles = s.cycles + 1, last_cycle_at = now();
    PERFORM queen.tx_prepare_q1(p_push_queue, p_push_partition,
        CASE WHEN p_ack_group IS NULL THEN '{}'::text[] ELSE ARRAY[p_partition::text] END,
        CASE WHEN p_ack_group IS NULL THEN '{}'::text[] ELSE ARRAY[p_ack_group] END);
    RETURN QUERY SELECT true, v_source;
END;
$$;

-- queen_streams.state_apply_q1 applies a cycle's state ops to one shard. Ops apply in
-- order; since an upsert replaces a key's value and a delete removes it, the outcome is
-- each key's last op, which is what is written. Rows are written in key order, so two
-- writers of one shard (which the cycle lock already prevents) could not deadlock.
-- p_value[i] is NULL for a delete. Returns the rows upserted and deleted.
CREATE OR REPLACE FUNCTION queen_streams.state_apply_q1(
    p_query uuid, p_partition uuid, p_type text[], p_key text[], p_value text[]
) RETURNS TABLE (o_upserted bigint, o_deleted bigint)
LANGUAGE sql AS $$
    WITH ops AS (
        SELECT DISTINCT ON (x.key) x.key, x.type, x.value
        FROM unnest(p_type, p_key, p_value) WITH ORDINALITY AS x(type, key, value, ord)
        ORDER BY x.key, x.ord DESC
    ),
    del AS (
        DELETE FROM queen_streams.state s USING ops
         WHERE ops.type = 'delete' AND s.query_id = p_query AND s.partition_id = p_partition AND s.key = ops.key
        RETURNING 1
    ),
    ups AS (
        INSERT INTO queen_streams.state AS s (query_id, partition_id, key, value, updated_at)
        SELECT p_query, p_partition, ops.key, ops.value::jsonb, now() FROM ops
         WHERE ops.type = 'upsert' ORDER BY ops.key
        ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM ups), (SELECT count(*) FROM del)
$$;

-- queen_streams.cycle_ack_q1 is the source ack of a cycle, for p_txid in p_partition
-- and consumer group p_group (the ack lock is held: queen_streams.cycle_begin_q1).
--   * The message must exist, in a partition of the query's source queue p_source.
--   * The cursor must not have reached the message yet: a cycle retried after its
--     answer was lost (it committed) fails instead of applying twice.
--   * A non-empty p_lease must be the live lease of (partition, group).
--   * Under a live lease (p_lease's, or another holder's when p_lease is empty) the
--     message must be within the leased batch, as on /ack: an ack beyond the batch end
--     would move the cursor over messages nobody was given. Refused "unresolvable".
--   * p_status is case-sensitive: completed, success, failed or dlq ('' is completed).
--   * completed/success: the cursor moves to the message, total_messages_consumed grows
--     by p_count (saturating at the bigint maximum) and the retry counter resets; with
--     p_release the lease ends, without it the lease is left alone (the rest of the
--     leased batch comes back, in order, when it expires) and counts the messages the
--     ack consumed as acked.
--   * failed/dlq: every message after the cursor up to and including this one goes to
--     the DLQ (the cycle failed for all of them; none is skipped silently; a queue
--     whose dead-letter queue is off drops them), the cursor moves to the message and
--     the lease ends.
-- A missing (partition, group) row is created. Returns success, the error text,
-- whether the lease was released, whether messages were dead-lettered and how many.
CREATE OR REPLACE FUNCTION queen_streams.cycle_ack_q1(
    p_source text, p_txid text, p_partition uuid, p_group text, p_status text, p_lease text,
    p_count bigint, p_error text, p_release boolean
) RETURNS TABLE (o_success boolean, o_error text, o_lease_released boolean, o_dlq boolean, o_dead bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_dead    bigint := 0;
    v_mid     uuid;
    v_mts     timestamptz;
    v_queue   text;
    v_status  text := coalesce(nullif(p_status, ''), 'completed');
    v_dlq     boolean;
    v_off     boolean;
    v_release boolean;
    v_ttl     integer;
    v_left    bigint;
    v_span    bigint := 1;
    pc        queen.partition_consumers%ROWTYPE;
BEGIN
    IF v_status NOT IN ('completed', 'success', 'failed', 'dlq') THEN
        RETURN QUERY SELECT false, format('invalid ack status %L: use completed, success, failed or dlq', p_status),
                            false, false, 0::bigint;
        RETURN;
    END IF;
    SELECT m.id, m.created_at, q.name,
           queen.dlq_off_q1(q.dead_letter_queue, q.dlq_after_max_retries, q.queen_options),
           queen.enforced_option_q1(q.ttl, q.queen_options, 'ttl')
      INTO v_mid, v_mts, v_queue, v_off, v_ttl
      FROM queen.messages m
      JOIN queen.partitions p ON p.id = m.partition_id
      JOIN queen.queues q ON q.id = p.queue_id
     WHERE m.partition_id = p_partition AND m.transaction_id COLLATE "C" = p_txid;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, format('message %L not found in partition %s', p_txid, p_partition), false, false, 0::bigint;
        RETURN;
    END IF;
    IF v_queue <> p_source THEN
        RETURN QUERY SELECT false, format('partition %s belongs to queue %L, not to the source queue %L of this query',
                                          p_partition, v_queue, p_source), false, false, 0::bigint;
        RETURN;
    END IF;
    v_dlq := v_status IN ('failed', 'dlq');
    v_release := v_dlq OR p_release;

    INSERT INTO queen.partition_consumers (partition_id, consumer_group)
    VALUES (p_partition, p_group)
    ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    SELECT * INTO pc FROM queen.partition_consumers c
     WHERE c.partition_id = p_partition AND c.consumer_group = p_group FOR UPDATE;

    IF pc.last_consumed_created_at IS NOT NULL
       AND (v_mts, v_mid) <= (pc.last_consumed_created_at, pc.last_consumed_id) THEN
        RETURN QUERY SELECT false, format('message %L was already acknowledged by consumer group %L '
                                          '(a retried cycle that committed before?); nothing was applied',
                                          p_txid, p_group), false, false, 0::bigint;
        RETURN;
    END IF;
    IF coalesce(p_lease, '') <> '' AND NOT coalesce(pc.worker_id = p_lease AND pc.lease_expires_at > now(), false) THEN
        RETURN QUERY SELECT false, 'invalid or expired lease'::text, false, false, 0::bigint;
        RETURN;
    END IF;
    -- The leased batch is the batch_size messages after the cursor the pop found (those
    -- the queue's ttl had not expired when it took the lease), acked_count of them
    -- consumed since; v_span counts the unconsumed ones up to this message.
    IF coalesce(pc.batch_size, 0) > 0 THEN
        v_left := greatest(pc.batch_size - coalesce(pc.acked_count, 0), 0);
        SELECT count(*) INTO v_span
          FROM (SELECT 1 FROM queen.messages mm
                WHERE mm.partition_id = p_partition
                  AND (mm.created_at, mm.id) > (coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz),
                                                coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
                  AND (mm.created_at, mm.id) <= (v_mts, v_mid)
                  AND (v_ttl <= 0 OR pc.lease_acquired_at IS NULL
                       OR mm.created_at > pc.lease_acquired_at - make_interval(secs => v_ttl))
                ORDER BY mm.created_at, mm.id
                LIMIT v_left + 1) s;
        IF v_span > v_left AND (coalesce(p_lease, '') <> ''
                                OR (pc.worker_id IS NOT NULL AND pc.lease_expires_at > now())) THEN
            RETURN QUERY SELECT false, format('unresolvable: message %L is beyond the leased batch of consumer group %L; '
                                              'nothing was applied', p_txid, p_group), false, false, 0::bigint;
            RETURN;
        END IF;
    END IF;

    IF v_dlq AND NOT v_off THEN -- a queue whose dead-letter queue is off drops them
        INSERT INTO queen.dead_letter_queue
               (message_id, partition_id, consumer_group, error_message, retry_count, original_created_at)
        SELECT m.id, p_partition, p_group, coalesce(nullif(p_error, ''), 'Streaming cycle reported failure'), 0, m.created_at
          FROM queen.messages m
         WHERE m.partition_id = p_partition
           AND (m.created_at, m.id) > (coalesce(pc.last_consumed_created_at, '-infinity'::timestamptz),
                                       coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'::uuid))
           AND (m.created_at, m.id) <= (v_mts, v_mid)
         ORDER BY m.created_at, m.id;
        GET DIAGNOSTICS v_dead = ROW_COUNT;
    END IF;

    UPDATE queen.partition_consumers c
       SET last_consumed_created_at = v_mts,
           last_consumed_id = v_mid,
           last_consumed_at = now(),
           total_messages_consumed = CASE WHEN coalesce(c.total_messages_consumed, 0) > 9223372036854775807 - p_count
                                          THEN 9223372036854775807
                                          ELSE coalesce(c.total_messages_consumed, 0) + p_count END,
           batch_retry_count = 0,
           acked_count = CASE WHEN v_release THEN 0 WHEN coalesce(c.batch_size, 0) > 0 THEN coalesce(c.acked_count, 0) + v_span
                               ELSE c.acked_count END,
           batch_size = CASE WHEN v_release THEN 0 ELSE c.batch_size END,
           lease_acquired_at = CASE WHEN v_release THEN NULL ELSE c.lease_acquired_at END,
           lease_expires_at = CASE WHEN v_release THEN NULL ELSE c.lease_expires_at END,
           worker_id = CASE WHEN v_release THEN NULL ELSE c.worker_id END
     WHERE c.id = pc.id;
    PERFORM queen.ready_settle_many_q1(ARRAY[p_partition], p_group);

    RETURN QUERY SELECT true, NULL::text, v_release, v_dlq AND NOT v_off, v_dead;
END;
$$;

-- queen_streams.remove_q1 resets (p_delete false: its state and shards go, the
-- registration stays) or deletes (p_delete true: the query with its state and shards)
-- the query p_name. It waits for the query's running cycles (row lock). Returns no
-- row when there is no such query.
CREATE OR REPLACE FUNCTION queen_streams.remove_q1(p_name text, p_delete boolean)
RETURNS TABLE (o_id uuid, o_state_rows bigint, o_shards bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_id     uuid;
    v_rows   bigint;
    v_shards bigint;
BEGIN
    SELECT q.id INTO v_id FROM queen_streams.queries q WHERE q.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- A shard is a source partition with state or recorded cycles.
    SELECT count(*) INTO v_shards FROM (
        SELECT s.partition_id FROM queen_streams.state s WHERE s.query_id = v_id
        UNION SELECT h.partition_id FROM queen_streams.shards h WHERE h.query_id = v_id) x;
    DELETE FROM queen_streams.state WHERE query_id = v_id;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    DELETE FROM queen_streams.shards WHERE query_id = v_id;
    IF p_delete THEN
        DELETE FROM queen_streams.queries WHERE id = v_id;
    ELSE
        UPDATE queen_streams.queries SET updated_at = now() WHERE id = v_id;
    END IF;
    RETURN QUERY SELECT v_id, v_rows, v_shards;
END;
$$;
