-- queen.lookup_reconcile_q1 repairs queen.partition_lookup, the per-partition head that
-- wildcard pops and the lag views read. queen's own pushes keep it exact (the head is
-- written in the push transaction, under the partition's ordering lock), but a database
-- written by an upstream broker can miss rows or hold stale ones: upstream updates the
-- table after its commit, so a crash in between leaves a partition that wildcard pops
-- never find. Each row is only ever moved forward ((created_at, id) greater than the
-- stored head), so a repair racing a push can never hide the push's message.
--
-- p_full walks every partition in id order after p_after (p_limit of them); otherwise
-- the candidates are partitions created since p_since that hold messages but have no
-- lookup row, and rows touched since p_since (which an upstream broker may still be
-- writing): never a scan of every partition's messages, which at 100 000 partitions
-- took half a second per cycle. Older gaps are the full pass's. It also adds
-- the ready rows those partitions lack, and makes claimable the ones parked past
-- their partition's lease. Returns the partitions examined, the rows
-- written (lookup and ready rows), and the last partition id of a full batch.
CREATE OR REPLACE FUNCTION queen.lookup_reconcile_q1(
    p_full boolean, p_after uuid, p_limit integer, p_since timestamptz
) RETURNS TABLE (o_scanned integer, o_repaired integer, o_last uuid)
LANGUAGE plpgsql AS $$
DECLARE
    v_ids    uuid[];
    v_n      integer;
    v_ready  integer;
BEGIN
    IF p_full THEN
        SELECT array_agg(p.id ORDER BY p.id) INTO v_ids
          FROM (SELECT p.id FROM queen.partitions p
                WHERE p.id > coalesce(p_after, '00000000-0000-0000-0000-000000000000'::uuid)
                ORDER BY p.id LIMIT p_limit) p;
    ELSE
        SELECT array_agg(DISTINCT c.id) INTO v_ids FROM (
            (SELECT p.id FROM queen.partitions p
              WHERE p.created_at >= p_since
                AND NOT EXISTS (SELECT 1 FROM queen.partition_lookup pl WHERE pl.partition_id = p.id)
                AND EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = p.id)
              LIMIT p_limit)
            UNION ALL
            (SELECT pl.partition_id FROM queen.partition_lookup pl WHERE pl.updated_at >= p_since LIMIT p_limit)
        ) c;
    END IF;
    IF v_ids IS NULL THEN
        RETURN QUERY SELECT 0, 0, NULL::uuid;
        RETURN;
    END IF;

    WITH heads AS (
        SELECT q.name AS qn, p.id AS pid, h.id AS mid, h.created_at AS mts
        FROM unnest(v_ids) AS x(id)
        JOIN queen.partitions p ON p.id = x.id
        JOIN queen.queues q ON q.id = p.queue_id
        CROSS JOIN LATERAL (
            SELECT m.id, m.created_at FROM queen.messages m
            WHERE m.partition_id = p.id
            ORDER BY m.created_at DESC, m.id DESC LIMIT 1
        ) h
        LEFT JOIN queen.partition_lookup cur ON cur.queue_name = q.name AND cur.partition_id = p.id
        -- Only missing or stale rows are written (and locked): an exact row, the usual
        -- case, costs a read, never a wait for a push holding it.
        WHERE cur.partition_id IS NULL
           OR (h.created_at, h.id) > (cur.last_message_created_at, cur.last_message_id)
    ),
    up AS (
        INSERT INTO queen.partition_lookup AS pl
               (queue_name, partition_id, last_message_id, last_message_created_at, updated_at)
        SELECT qn, pid, mid, mts, now() FROM heads ORDER BY pid
        ON CONFLICT (queue_name, partition_id) DO UPDATE
           SET last_message_id = excluded.last_message_id,
               last_message_created_at = excluded.last_message_created_at,
               updated_at = excluded.updated_at
           WHERE (excluded.last_message_created_at, excluded.last_message_id)
                 > (pl.last_message_created_at, pl.last_message_id)
        RETURNING 1
    )
    SELECT count(*) INTO v_n FROM up;

    -- The ready rows of registered wildcard consumers that have work here but no row
    -- (015_ready.sql): after a cursor or, without one, after the group's subscription
    -- start (the partition's own subscription first, then the queue's, as its first pop
    -- there reads them), or anywhere without a subscription (it reads from the
    -- beginning). Taken under the queues' registration locks, like a push.
    PERFORM pg_advisory_xact_lock_shared(queen.queue_consumers_key(q.qid))
       FROM (SELECT DISTINCT p.queue_id AS qid FROM queen.partitions p WHERE p.id = ANY (v_ids) ORDER BY 1) q;
    INSERT INTO queen.partition_ready (partition_id, consumer_group, queue_id, ready_at)
    SELECT pl.partition_id, c.consumer_group, c.queue_id, now()
      FROM queen.partition_lookup pl
      JOIN queen.partitions p ON p.id = pl.partition_id
      JOIN queen.queues q ON q.id = p.queue_id
      JOIN queen.queue_consumers c ON c.queue_id = p.queue_id
      LEFT JOIN queen.partition_consumers pc
             ON pc.partition_id = pl.partition_id AND pc.consumer_group = c.consumer_group
     WHERE pl.partition_id = ANY (v_ids)
       AND NOT EXISTS (SELECT 1 FROM queen.partition_ready r
                       WHERE r.partition_id = pl.partition_id AND r.consumer_group = c.consumer_group)
       AND CASE WHEN pc.last_consumed_created_at IS NOT NULL
                THEN (pl.last_message_created_at, pl.last_message_id)
                     > (pc.last_consumed_created_at, pc.last_consumed_id)
                ELSE c.consumer_group = '__QUEUE_MODE__' OR coalesce((
                     SELECT (pl.last_message_created_at, pl.last_message_id)
                            > (md.subscription_timestamp, '00000000-0000-0000-0000-000000000000'::uuid)
                       FROM queen.consumer_groups_metadata md
                      WHERE md.consumer_group = c.consumer_group AND md.queue_name = q.name
                        AND md.partition_name IN (p.name, '') AND md.namespace = '' AND md.task = ''
                      ORDER BY (md.partition_name = '') ASC
                      LIMIT 1), true) END
    ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    GET DIAGNOSTICS v_ready = ROW_COUNT;
    v_n := v_n + v_ready;
    -- And rows parked past the end of their partition's lease (a broker that keeps no
    -- ready rows released it). Parked means later than the clock, not than now(): this
    -- transaction's start precedes the ready_at an ack or push that committed since has
    -- written, and locking such a claimable row made the pops meanwhile skip it (a pop
    -- without wait then answered empty).
    UPDATE queen.partition_ready r SET ready_at = clock_timestamp()
      FROM queen.partition_consumers pc
     WHERE r.partition_id = ANY (v_ids) AND pc.partition_id = r.partition_id
       AND pc.consumer_group = r.consumer_group
       AND r.ready_at > greatest(clock_timestamp(), coalesce(pc.lease_expires_at, clock_timestamp()));
    GET DIAGNOSTICS v_ready = ROW_COUNT;
    v_n := v_n + v_ready;
    RETURN QUERY SELECT cardinality(v_ids), v_n, v_ids[cardinality(v_ids)];
END;
$$;
