-- Partitions with pending work: how a wildcard pop finds a partition to claim without
-- looking at every partition of the queue (docs/postgresql.md, "Many partitions").
--
-- queen.queue_consumers registers the consumer groups that pop a queue without naming a
-- partition (queue mode is the group '__QUEUE_MODE__'); a group is registered by its
-- first such pop. queen.partition_ready holds, for every registered (queue, group), the
-- partitions that may have messages for the group, with ready_at, the earliest time the
-- partition is worth examining: when it became pending or was last served (so the
-- claim index serves the least recently served first), or when its lease or retry
-- delay ends.
--
-- The invariant: a partition with a message a registered group has yet to receive has a
-- ready row for that group, whose ready_at is not later than the moment the message may
-- be delivered. A ready row without such a message is harmless: the pop that examines it
-- finds nothing and deletes it. So rows are added freely and deleted only with proof:
--   * queen.push_q3 adds the rows of the partitions it wrote to, for the queue's
--     registered groups;
--   * every write of a cursor row (queen.partition_consumers: by a pop, an ack, a
--     transaction, a stream cycle) ends with queen.ready_settle_q2, which parks the
--     row until a live lease or retry delay ends, deletes it when the cursor is at the
--     partition's head, or makes it claimable now. The delete holds the partition's
--     ordering lock in share mode (taken without waiting, else the row stays), so no
--     push can commit a message between the check and the delete. A seek settles its
--     rows set-based under the queue's registration lock held exclusively (no push in
--     flight); a lease extension or reclaim moves the row with the lease;
--   * registration seeds the rows of every pending partition while holding the queue's
--     registration lock exclusively; pushes hold it in share mode from before their
--     insert to their commit, so every push is either seen by the seed or sees the
--     registration;
--   * a change of subscriptions that can expose older messages on partitions without a
--     cursor (a subscription moved, or deleted with the group's cursors) unregisters the
--     group, whose next wildcard pop seeds again;
--   * the partition lookup reconcile job (queen.lookup_reconcile_q1) adds the rows of
--     the partitions it examines where they are missing: the safety net for messages
--     written by a broker that keeps no ready rows (an older queen during a rolling
--     upgrade, or upstream).

DO $$
BEGIN
    IF to_regclass('queen.queue_consumers') IS NULL THEN
        CREATE TABLE queen.queue_consumers (
            queue_id       uuid NOT NULL REFERENCES queen.queues(id) ON DELETE CASCADE,
            consumer_group varchar(255) NOT NULL,
            created_at     timestamptz NOT NULL DEFAULT now(),
            -- last wildcard pop, to the minute: a registration unused for an hour is
            -- dropped by the consumer state cleanup (queen.ready_expire_q1)
            seen_at        timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (queue_id, consumer_group)
        );
    END IF;
    IF to_regclass('queen.partition_ready') IS NULL THEN
        -- Rows are updated on every claim and every release (ready_at is indexed, so no
        -- update is HOT): vacuum early, like partition_consumers.
        CREATE TABLE queen.partition_ready (
            partition_id   uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
            consumer_group varchar(255) NOT NULL,
            queue_id       uuid NOT NULL,
            ready_at       timestamptz NOT NULL,
            PRIMARY KEY (partition_id, consumer_group)
        ) WITH (autovacuum_vacuum_scale_factor = 0.01,
                autovacuum_vacuum_threshold = 50,
                autovacuum_vacuum_cost_delay = 0);
        CREATE INDEX idx_partition_ready_claim
            ON queen.partition_ready (queue_id, consumer_group, ready_at);
    END IF;
END
$$;

-- queen.queue_consumers_key is the advisory-lock key of a queue's registrations: held
-- exclusively to register or unregister a group, in share mode by every insert of
-- messages into the queue.
CREATE OR REPLACE FUNCTION queen.queue_consumers_key(p_queue uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_queue::text, 1364283731)
$$;

-- queen.ready_settle_q2 brings the ready row of (p_pid, p_group) in line with its
-- cursor row after a change: parked until a live lease or retry delay ends; deleted when
-- the cursor is at the partition's head and no push is in flight there; otherwise
-- claimable now (created when the group is registered and the row is missing). It
-- returns whether it left the partition claimable now: messages wait after the cursor,
-- or a push to the partition is in flight. Its statements see every push committed
-- before it ran, and a push that commits later took the ordering lock after this
-- transaction released it: an ack that ends a lease tells from this whether to wake a
-- parked pop, which a push committing while the ack ran cannot have served (its wake's
-- claim found the partition leased).
CREATE OR REPLACE FUNCTION queen.ready_settle_q2(
    p_pid uuid, p_group text, p_cur_ts timestamptz, p_cur_id uuid, p_lease_expires timestamptz
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_now  timestamptz := now();
    v_h_ts timestamptz;
    v_h_id uuid;
BEGIN
    IF p_lease_expires > v_now THEN
        UPDATE queen.partition_ready r SET ready_at = p_lease_expires
         WHERE r.partition_id = p_pid AND r.consumer_group = p_group AND r.ready_at <> p_lease_expires;
        RETURN false;
    END IF;
    SELECT pl.last_message_created_at, pl.last_message_id INTO v_h_ts, v_h_id
      FROM queen.partition_lookup pl WHERE pl.partition_id = p_pid LIMIT 1;
    IF (v_h_ts IS NULL OR (p_cur_ts IS NOT NULL AND (v_h_ts, v_h_id) <= (p_cur_ts, p_cur_id)))
       AND pg_try_advisory_xact_lock_shared(queen.partition_order_key(p_pid)) THEN
        -- Under the lock every push to the partition has committed: look again.
        DELETE FROM queen.partition_ready r
         WHERE r.partition_id = p_pid AND r.consumer_group = p_group
           AND NOT EXISTS (SELECT 1 FROM queen.partition_lookup pl
                           WHERE pl.partition_id = p_pid
                             AND (p_cur_ts IS NULL
                                  OR (pl.last_message_created_at, pl.last_message_id) > (p_cur_ts, p_cur_id)));
        IF FOUND OR NOT EXISTS (SELECT 1 FROM queen.partition_lookup pl
                                WHERE pl.partition_id = p_pid
                                  AND (p_cur_ts IS NULL
                                       OR (pl.last_message_created_at, pl.last_message_id) > (p_cur_ts, p_cur_id))) THEN
            RETURN false;
        END IF;
    END IF;
    -- Usually the row exists, parked at the lease that just ended.
    UPDATE queen.partition_ready r SET ready_at = v_now
     WHERE r.partition_id = p_pid AND r.consumer_group = p_group AND r.ready_at > v_now;
    IF FOUND THEN
        RETURN true;
    END IF;
    INSERT INTO queen.partition_ready AS r (partition_id, consumer_group, queue_id, ready_at)
    SELECT p_pid, p_group, c.queue_id, v_now
      FROM queen.partitions p
      JOIN queen.queue_consumers c ON c.queue_id = p.queue_id AND c.consumer_group = p_group
     WHERE p.id = p_pid
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET ready_at = excluded.ready_at
     WHERE r.ready_at > excluded.ready_at;
    RETURN true;
END;
$$;

-- queen.ready_settle_q1 is queen.ready_settle_q2 without its answer (brokers of earlier
-- releases call it).
CREATE OR REPLACE FUNCTION queen.ready_settle_q1(
    p_pid uuid, p_group text, p_cur_ts timestamptz, p_cur_id uuid, p_lease_expires timestamptz
) RETURNS void
LANGUAGE sql AS $$
    SELECT queen.ready_settle_q2(p_pid, p_group, p_cur_ts, p_cur_id, p_lease_expires)
$$;

-- queen.ready_settle_many_q1 settles the ready rows of p_group on p_pids from their
-- cursor rows as they are now. One partition (the ack of a pop) has a statement of
-- its own: on = ANY (array) PostgreSQL priced the cached generic plan above a plan for
-- each call's values and planned the statement again on every call.
CREATE OR REPLACE FUNCTION queen.ready_settle_many_q1(p_pids uuid[], p_group text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_pids) = 1 THEN
        PERFORM queen.ready_settle_q2(c.partition_id, p_group, c.last_consumed_created_at,
                                      c.last_consumed_id, c.lease_expires_at)
           FROM queen.partition_consumers c
          WHERE c.partition_id = p_pids[1] AND c.consumer_group = p_group;
        RETURN;
    END IF;
    PERFORM queen.ready_settle_q2(c.partition_id, p_group, c.last_consumed_created_at,
                                  c.last_consumed_id, c.lease_expires_at)
       FROM (SELECT c.partition_id, c.last_consumed_created_at, c.last_consumed_id, c.lease_expires_at
               FROM queen.partition_consumers c
              WHERE c.partition_id = ANY (p_pids) AND c.consumer_group = p_group
              ORDER BY c.partition_id) c;
END;
$$;

-- queen.queue_consumer_register_q1 registers p_group as a wildcard consumer of the
-- queue and seeds its ready rows: every partition with a message after the group's
-- cursor or, where it has none, after its queue-wide subscription start (taken or
-- stored here, as its first pop would). Parked rows keep their lease or retry delay;
-- the others are ordered by when the group was last served there, or, where it never
-- was, by when the partition's newest message came.
-- Costs one read of the queue's partitions, once per group and queue, and one lookup
-- of the group's cursor per partition (a subquery of its own: joined, a plan made
-- while the tables were small walked every cursor row for each partition, 4.6 s for a
-- group's registration on 5 000 partitions). Plan settings as queen.pop_q3's, which
-- registers groups.
CREATE OR REPLACE FUNCTION queen.queue_consumer_register_q1(
    p_qid uuid, p_queue text, p_group text, p_sub_mode text, p_sub_from text, p_now timestamptz
) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_sub  timestamptz;
    v_seen timestamptz;
BEGIN
    SELECT c.seen_at INTO v_seen FROM queen.queue_consumers c WHERE c.queue_id = p_qid AND c.consumer_group = p_group;
    IF FOUND THEN
        IF v_seen < p_now - interval '1 minute' THEN
            UPDATE queen.queue_consumers c SET seen_at = p_now
             WHERE c.queue_id = p_qid AND c.consumer_group = p_group;
        END IF;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(queen.queue_consumers_key(p_qid));
    IF EXISTS (SELECT 1 FROM queen.queue_consumers c WHERE c.queue_id = p_qid AND c.consumer_group = p_group) THEN
        RETURN;
    END IF;
    -- Partitions without a cursor start at the queue-wide subscription, unless a
    -- partition has its own (then every partition with messages is seeded).
    IF p_group <> '__QUEUE_MODE__' AND NOT EXISTS (
        SELECT 1 FROM queen.consumer_groups_metadata md
        WHERE md.consumer_group = p_group AND md.queue_name = p_queue AND md.partition_name <> ''
          AND md.namespace = '' AND md.task = '') THEN
        v_sub := queen.subscription_start_q1(p_queue, '', p_group, false, p_sub_mode, p_sub_from, p_now);
    END IF;
    INSERT INTO queen.queue_consumers (queue_id, consumer_group) VALUES (p_qid, p_group);
    -- A partition without a cursor whose messages all precede the subscription gets its
    -- cursor at its head, where the group's first pop there would put it.
    IF v_sub IS NOT NULL THEN
        INSERT INTO queen.partition_consumers
               (partition_id, consumer_group, last_consumed_created_at, last_consumed_id, last_consumed_at)
        SELECT pl.partition_id, p_group, pl.last_message_created_at, pl.last_message_id, p_now
          FROM queen.partition_lookup pl
         WHERE pl.queue_name = p_queue AND pl.last_message_created_at < v_sub
           AND NOT EXISTS (SELECT 1 FROM queen.partition_consumers pc
                           WHERE pc.partition_id = pl.partition_id AND pc.consumer_group = p_group OFFSET 0)
        ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    END IF;
    INSERT INTO queen.partition_ready AS r (partition_id, consumer_group, queue_id, ready_at)
    SELECT pl.partition_id, p_group, p_qid,
           CASE WHEN pc.lease_expires_at > p_now THEN pc.lease_expires_at
                ELSE coalesce(pc.last_consumed_at, pl.last_message_created_at) END
      FROM queen.partition_lookup pl
      LEFT JOIN LATERAL (SELECT c.lease_expires_at, c.last_consumed_at, c.last_consumed_created_at,
                                c.last_consumed_id
                           FROM queen.partition_consumers c
                          WHERE c.partition_id = pl.partition_id AND c.consumer_group = p_group OFFSET 0) pc ON true
     WHERE pl.queue_name = p_queue
       AND CASE WHEN pc.last_consumed_created_at IS NOT NULL
                THEN (pl.last_message_created_at, pl.last_message_id)
                     > (pc.last_consumed_created_at, pc.last_consumed_id)
                ELSE v_sub IS NULL OR pl.last_message_created_at >= v_sub END
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET ready_at = excluded.ready_at
     WHERE r.ready_at > excluded.ready_at;
END;
$$;

-- queen.ready_expire_q1 drops up to p_limit registrations of wildcard consumers that
-- have not popped their queue since p_before, with their ready rows: every push keeps
-- rows for every registered group, so a group that went away would cost each push a
-- lookup forever. Dropping one is always safe: the group's next wildcard pop registers
-- it again and seeds its rows. Returns the registrations dropped.
CREATE OR REPLACE FUNCTION queen.ready_expire_q1(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_n bigint;
BEGIN
    WITH d AS (
        DELETE FROM queen.queue_consumers c
         WHERE (c.queue_id, c.consumer_group) IN (
               SELECT x.queue_id, x.consumer_group FROM queen.queue_consumers x
                WHERE x.seen_at < p_before LIMIT p_limit)
        RETURNING c.queue_id, c.consumer_group
    ), r AS (
        DELETE FROM queen.partition_ready r USING d
         WHERE r.queue_id = d.queue_id AND r.consumer_group = d.consumer_group
    )
    SELECT count(*) INTO v_n FROM d;
    RETURN v_n;
END;
$$;
