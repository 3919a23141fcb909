-- Consumer-group cursor moves (seek to the end, to a time, one partition). A seek locks
-- the group's existing cursor rows in partition-id order, the order acks lock them in,
-- so it never interleaves with an ack of the same group on the same partition. Row
-- locks, not the per-(partition, group) advisory ack locks: a seek of a queue with
-- 100 000 partitions would need as many lock-table entries in one transaction.

-- queen.cursor_seek_q1 writes p_group's cursor on each partition of p_pids: the
-- partition's newest message when p_to_end, else the newest message created at or
-- before p_ts ("before everything", a NULL cursor, when there is none). A missing cursor
-- row is created, except by a to-end seek of a partition without messages (an existing
-- cursor on such a partition keeps its position). The lease, a retry-delay hold and the
-- retry counter are cleared: they belonged to the old position. Returns the number of
-- cursor rows written.
CREATE OR REPLACE FUNCTION queen.cursor_seek_q1(
    p_group text, p_pids uuid[], p_to_end boolean, p_ts timestamptz
) RETURNS integer
-- Plans: every access is keyed by partition, and a seek often follows a bulk load the
-- statistics have not seen. Planned as for a few rows, a join of the cursors with the
-- ready rows materialized one side and scanned it once per row of the other: 50 s for
-- 25 000 partitions. With index paths only and no materialization, each row is one
-- keyed lookup (under a second).
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_material = off
SET jit = off
AS $$
DECLARE
    v_n    integer;
    c_zero constant uuid := '00000000-0000-0000-0000-000000000000';
BEGIN
    -- The queues' registration locks first, as a group's first pop takes them before
    -- it creates or leases cursor rows: taken after the cursor rows, a seek and that
    -- pop deadlocked.
    PERFORM pg_advisory_xact_lock(queen.queue_consumers_key(q.qid))
       FROM (SELECT DISTINCT p.queue_id AS qid FROM queen.partitions p WHERE p.id = ANY (p_pids) ORDER BY 1) q;
    PERFORM 1 FROM queen.partition_consumers c
      WHERE c.partition_id = ANY (p_pids) AND c.consumer_group = p_group
      ORDER BY c.partition_id
      FOR UPDATE;

    INSERT INTO queen.partition_consumers AS pc
           (partition_id, consumer_group, last_consumed_created_at, last_consumed_id)
    SELECT t.pid, p_group, h.created_at, coalesce(h.id, c_zero)
    FROM (SELECT DISTINCT x.pid FROM unnest(p_pids) AS x(pid)) t
    LEFT JOIN LATERAL (
        SELECT m.created_at, m.id FROM queen.messages m
        WHERE m.partition_id = t.pid AND (p_to_end OR m.created_at <= p_ts)
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT 1) h ON true
    WHERE h.id IS NOT NULL OR NOT p_to_end
       OR EXISTS (SELECT 1 FROM queen.partition_consumers c
                  WHERE c.partition_id = t.pid AND c.consumer_group = p_group)
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET
        last_consumed_created_at = CASE WHEN p_to_end AND excluded.last_consumed_created_at IS NULL
                                        THEN pc.last_consumed_created_at
                                        ELSE excluded.last_consumed_created_at END,
        last_consumed_id         = CASE WHEN p_to_end AND excluded.last_consumed_created_at IS NULL
                                        THEN pc.last_consumed_id
                                        ELSE excluded.last_consumed_id END,
        lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL,
        batch_size = 0, acked_count = 0, batch_retry_count = 0;
    GET DIAGNOSTICS v_n = ROW_COUNT;

    -- The group's ready rows follow the moved cursors, set-based: under the queues'
    -- registration locks held exclusively no push is in flight, so a cursor at its
    -- partition's head proves the row can go (015_ready.sql). The leases were cleared.
    -- Each row of another table is looked up by its keys in a subquery of its own
    -- (OFFSET 0 keeps it one): as joins, planned while the queue had a few partitions,
    -- an inner index scan keyed on the group alone walked the whole index for every
    -- partition (a seek of 5 000 partitions ran into the statement timeout).
    DELETE FROM queen.partition_ready r
     WHERE r.partition_id = ANY (p_pids) AND r.consumer_group = p_group
       AND EXISTS (SELECT 1 FROM queen.partition_consumers c
                    WHERE c.partition_id = r.partition_id AND c.consumer_group = p_group
                      AND NOT EXISTS (SELECT 1 FROM queen.partition_lookup pl
                                       WHERE pl.partition_id = r.partition_id
                                         AND (c.last_consumed_created_at IS NULL
                                              OR (pl.last_message_created_at, pl.last_message_id)
                                                 > (c.last_consumed_created_at, c.last_consumed_id))
                                      OFFSET 0)
                   OFFSET 0);
    INSERT INTO queen.partition_ready AS r (partition_id, consumer_group, queue_id, ready_at)
    SELECT c.partition_id, p_group, p.queue_id, now()
      FROM queen.partition_consumers c
      CROSS JOIN LATERAL (SELECT pp.queue_id FROM queen.partitions pp WHERE pp.id = c.partition_id OFFSET 0) p
      CROSS JOIN LATERAL (SELECT l.last_message_created_at, l.last_message_id FROM queen.partition_lookup l
                           WHERE l.partition_id = c.partition_id OFFSET 0) pl
     WHERE c.partition_id = ANY (p_pids) AND c.consumer_group = p_group
       AND EXISTS (SELECT 1 FROM queen.queue_consumers qc
                    WHERE qc.queue_id = p.queue_id AND qc.consumer_group = p_group OFFSET 0)
       AND (c.last_consumed_created_at IS NULL
            OR (pl.last_message_created_at, pl.last_message_id) > (c.last_consumed_created_at, c.last_consumed_id))
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET ready_at = excluded.ready_at
     WHERE r.ready_at > excluded.ready_at;
    RETURN v_n;
END;
$$;

-- queen.consumer_group_seek_q1 moves p_group's cursors on p_queue:
-- to the end, or to p_ts. Returns the number of cursors written, NULL when the queue
-- does not exist. Two decisions where upstream differs:
--   * Every partition of the queue that has messages is moved, not only those the group
--     has a cursor on: "replay from T" (or "skip everything") then holds for the whole
--     queue, not just the partitions the group happened to touch.
--   * A timestamp seek of a named group also moves its subscription on the queue back
--     to p_ts: the queue-wide and partition-specific rows later than p_ts are set to
--     p_ts, and a queue-wide row (mode 'timestamp', at the earlier of p_ts and now) is
--     created when there is none. Otherwise a cursor reset to NULL would be re-seeded
--     from the old subscription time, or from "now" by a
--     later subscriptionMode=new pop, and the history the operator asked for would be
--     skipped.
CREATE OR REPLACE FUNCTION queen.consumer_group_seek_q1(
    p_group text, p_queue text, p_to_end boolean, p_ts timestamptz
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_qid  uuid;
    v_pids uuid[];
    v_n    integer;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.name = p_queue;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') INTO v_pids
    FROM queen.partitions p
    WHERE p.queue_id = v_qid
      AND (EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = p.id)
           OR EXISTS (SELECT 1 FROM queen.partition_consumers c
                      WHERE c.partition_id = p.id AND c.consumer_group = p_group));
    v_n := queen.cursor_seek_q1(p_group, v_pids, p_to_end, p_ts);
    -- Every seek forgets the group's watermarks on the queue: an upstream broker's pop
    -- (after a rollback to it) would otherwise skip partitions the seek re-exposed.
    DELETE FROM queen.consumer_watermarks w
     WHERE w.queue_name = p_queue AND w.consumer_group = p_group;

    IF NOT p_to_end THEN
        IF p_group <> '__QUEUE_MODE__' THEN
            UPDATE queen.consumer_groups_metadata md
               SET subscription_timestamp = p_ts
             WHERE md.consumer_group = p_group AND md.queue_name = p_queue
               AND md.namespace = '' AND md.task = ''
               AND md.subscription_timestamp > p_ts;
            INSERT INTO queen.consumer_groups_metadata
                   (consumer_group, queue_name, partition_name, subscription_mode, subscription_timestamp)
            VALUES (p_group, p_queue, '', 'timestamp', least(p_ts, now()))
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN v_n;
END;
$$;

-- queen.consumer_group_seek_partition_q1 moves p_group's cursor on one partition to
-- its newest message. o_found is false when the queue or the
-- partition does not exist; o_moved_to is where the cursor points afterwards.
CREATE OR REPLACE FUNCTION queen.consumer_group_seek_partition_q1(
    p_group text, p_queue text, p_partition text
) RETURNS TABLE (o_found boolean, o_updated boolean, o_moved_to timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_pid uuid;
    v_n   integer;
BEGIN
    SELECT p.id INTO v_pid
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.name = p_queue AND p.name = p_partition;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, false, NULL::timestamptz;
        RETURN;
    END IF;
    v_n := queen.cursor_seek_q1(p_group, ARRAY[v_pid], true, NULL);
    DELETE FROM queen.consumer_watermarks w WHERE w.queue_name = p_queue AND w.consumer_group = p_group;
    RETURN QUERY
        SELECT true, v_n > 0,
               (SELECT c.last_consumed_created_at FROM queen.partition_consumers c
                 WHERE c.partition_id = v_pid AND c.consumer_group = p_group);
END;
$$;
