-- Background maintenance jobs (docs/retention.md). Every replica runs every job's loop;
-- a cycle is claimed under the job's pg_try_advisory_xact_lock, and maintenance_jobs
-- records when the job last ran anywhere, so with N replicas a job still runs once per
-- cycle. Additive only.

CREATE TABLE IF NOT EXISTS queen.maintenance_jobs (
    name             text PRIMARY KEY,
    last_run_at      timestamptz,          -- start of the last run, on any replica
    last_finished_at timestamptz,
    last_duration_ms bigint NOT NULL DEFAULT 0,
    last_rows        bigint NOT NULL DEFAULT 0,
    last_error       text,
    last_instance    text,
    runs             bigint NOT NULL DEFAULT 0
);

-- queen.partition_cleanup_q1 deletes up to p_limit partitions that hold no message and
-- show no activity since p_before: created before it, no consumer row created or
-- consuming after it, and no message pushed after it. Deleting
-- cascades to cursors, the lookup row and DLQ rows. Each partition is taken under the
-- push path's per-partition lock (try: a partition being pushed to right now is
-- skipped) and re-checked for messages under it. The deletions are added to
-- queue_activity.partitions_deleted of the current minute, one row per queue in name
-- order (the order activity flushes lock those rows in).
CREATE OR REPLACE FUNCTION queen.partition_cleanup_q1(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r      record;
    v_n    bigint := 0;
    v_qids uuid[] := '{}';
BEGIN
    FOR r IN
        SELECT p.id, p.queue_id
        FROM queen.partitions p
        WHERE p.created_at < p_before
          AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = p.id)
          AND NOT EXISTS (SELECT 1 FROM queen.partition_consumers pc
                          WHERE pc.partition_id = p.id
                            AND (pc.created_at >= p_before OR pc.last_consumed_at >= p_before))
          AND NOT EXISTS (SELECT 1 FROM queen.partition_lookup pl
                          WHERE pl.partition_id = p.id
                            AND (pl.last_message_created_at >= p_before OR pl.updated_at >= p_before))
        ORDER BY p.created_at
        LIMIT p_limit
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(queen.partition_order_key(r.id));
        DELETE FROM queen.partitions p
         WHERE p.id = r.id
           AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = r.id);
        IF FOUND THEN
            v_n := v_n + 1;
            v_qids := v_qids || r.queue_id;
        END IF;
    END LOOP;
    INSERT INTO queen.queue_activity AS t (bucket_time, queue_name, partitions_deleted)
    SELECT date_trunc('minute', now()), q.name, count(*)
    FROM unnest(v_qids) AS x(qid) JOIN queen.queues q ON q.id = x.qid
    GROUP BY q.name
    ORDER BY q.name
    ON CONFLICT (bucket_time, queue_name) DO UPDATE SET
        partitions_deleted = t.partitions_deleted + excluded.partitions_deleted,
        updated_at         = now();
    RETURN v_n;
END;
$$;

-- queen.evict_q1 deletes up to p_limit messages older than their queue's
-- maxWaitTimeSeconds that some consumer group has not consumed (after the partition's
-- lowest cursor, or all of them where no group has one), one partition at a time, and
-- records one retention_history row of type p_type per partition. A partition is
-- taken under its pop claim key (try: one a pop is claiming is skipped) and skipped
-- when a lease there is live at p_now: its messages are being processed, and deleting
-- them would fail the acks. Under the key every pop of the partition has either
-- committed, so the next statement (a newer snapshot) sees its lease, or not claimed
-- yet, so it reads what is left after this transaction.
CREATE OR REPLACE FUNCTION queen.evict_q1(p_now timestamptz, p_limit integer, p_type text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r       record;
    v_left  integer := p_limit;
    v_n     bigint;
    v_total bigint := 0;
BEGIN
    FOR r IN
        SELECT p.id AS pid, p_now - make_interval(secs => q.max_wait_time_seconds) AS cutoff
          FROM queen.queues q
          JOIN queen.partitions p ON p.queue_id = q.id
         WHERE q.max_wait_time_seconds > 0
           AND EXISTS (SELECT 1 FROM queen.messages m
                        WHERE m.partition_id = p.id
                          AND m.created_at < p_now - make_interval(secs => q.max_wait_time_seconds))
    LOOP
        EXIT WHEN v_left <= 0;
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(queen.pop_claim_key(r.pid));
        CONTINUE WHEN EXISTS (SELECT 1 FROM queen.partition_consumers l
                               WHERE l.partition_id = r.pid AND l.worker_id IS NOT NULL
                                 AND l.lease_expires_at > p_now);
        WITH c AS (
            SELECT pc.last_consumed_created_at AS cts, pc.last_consumed_id AS cid
              FROM queen.partition_consumers pc
             WHERE pc.partition_id = r.pid
             ORDER BY pc.last_consumed_created_at ASC NULLS FIRST, pc.last_consumed_id ASC
             LIMIT 1
        ), victims AS (
            SELECT m.id FROM queen.messages m
             WHERE m.partition_id = r.pid AND m.created_at < r.cutoff
               AND NOT EXISTS (SELECT 1 FROM c WHERE c.cts IS NOT NULL
                                 AND (m.created_at, m.id) <= (c.cts, c.cid))
             ORDER BY m.created_at, m.id
             LIMIT v_left
        ), del AS (
            DELETE FROM queen.messages m USING victims v WHERE m.id = v.id RETURNING 1
        )
        SELECT count(*) INTO v_n FROM del;
        IF v_n > 0 THEN
            INSERT INTO queen.retention_history (partition_id, messages_deleted, retention_type, executed_at)
            VALUES (r.pid, v_n, p_type, p_now);
            v_left := v_left - v_n;
            v_total := v_total + v_n;
        END IF;
    END LOOP;
    RETURN v_total;
END;
$$;
