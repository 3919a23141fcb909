-- queen.pop_q4 claims partitions for one consumer group and returns their next
-- messages, each with the trace context it was pushed under. p_partition NULL means a wildcard pop over the queue's
-- partitions, claiming up to p_max_partitions of them; otherwise exactly that
-- partition. Every claimed partition gets the lease p_lease_id for p_lease_seconds
-- when it is above 0, else for the queue's lease_time (60 s when 0). Partitions that
-- yield no message are released at once and do not count toward p_max_partitions (no
-- starvation behind delayed partitions). p_sub_age is how many seconds ago the pop
-- arrived (a long-poll runs this again on every wake-up): a subscription 'new' or 'now'
-- that this pop makes starts then, so the message that woke it is new to the group.
--
-- Conflation (last-value delivery): a consumer group's policy on a queue is stored by
-- its first pop there (queen.consumer_group_policies: p_conflation, NULL meaning
-- false; a pop that finds none answers flag 4 alone, see below) and wins over what
-- later pops ask. A conflating group is given, per claimed
-- partition, only the newest visible message, under a lease that spans every message
-- from the cursor to it (batch_size counts them): the ack of that message moves the
-- cursor past all of them. It claims up to p_conflate_width partitions (1..64), one
-- message each. When the policy is applied, or the request disagrees with it, the
-- first row is a row without a message (o_id NULL) whose o_flags says so: 1 the
-- policy is applied (conflated delivery), 2 the request disagrees with the stored
-- policy; 4, alone and with nothing claimed, that the group has no policy on the queue
-- yet. Message rows have o_flags NULL.
CREATE OR REPLACE FUNCTION queen.pop_q4(
    p_queue          text,
    p_partition      text,
    p_group          text,
    p_lease_id       text,
    p_batch          integer,
    p_max_partitions integer,
    p_auto_ack       boolean,
    p_sub_mode       text,
    p_sub_from       text,
    p_lease_seconds  integer,
    p_sub_age        double precision,
    p_conflation     boolean,
    p_conflate_width integer
) RETURNS TABLE (o_partition_id uuid, o_partition text, o_id uuid, o_transaction_id text,
                 o_trace_id uuid, o_payload jsonb, o_producer_sub text, o_created_at timestamptz,
                 o_retry_count integer, o_traceparent text, o_tracestate text, o_flags integer)
-- Plans: the message read is an ordered range of the (partition_id, created_at, id)
-- index and must stay one whatever the statistics say: queen.messages statistics lag
-- behind a queue's growth, and with a partition that looks small a planner chose a
-- bitmap scan of every message after the cursor and a sort, per pop (94 ms for 100 of
-- 10 000 messages). Bitmap scans are therefore off (with LIMIT, an ordered index scan
-- then beats reading and sorting). The wildcard candidate is the first row of an index
-- range of queen.partition_ready. Sequential scans are off too: every statement here is
-- a keyed lookup, and a plan cached while a table was small stays until the table is
-- next analyzed (a claim planned when queen.partition_consumers had a hundred rows
-- scanned all of it, 0.5 ms per pop at 10 000 partitions). jit is off: a path priced by
-- a disabled method would otherwise cross jit_above_cost (see queen.keyed_plans_q1).
-- Plans are generic: with scan methods restricted, PostgreSQL prices the cached generic
-- plan of a statement taking the function's variables above a plan made for each
-- call's values and plans it again on every call; every statement here is written to
-- be bounded by its keys in a generic plan (a pop of 10 spent about 0.3 ms planning).
LANGUAGE plpgsql
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_q          record; -- the queue's row, and when p_group last popped it without a partition
    v_now        timestamptz := now();
    v_sub_at     timestamptz := now() - make_interval(secs => greatest(coalesce(p_sub_age, 0), 0));
    v_lease      interval;
    v_budget     integer := greatest(coalesce(p_batch, 1), 1);
    v_claimed    integer := 0;
    v_cands      uuid[];
    v_names      text[];
    v_i          integer;
    v_settled    integer := 0; -- rows settled, not claimed (window buffer, expired)
    v_pid        uuid;
    v_ok         boolean;
    v_rows       queen.messages[];
    v_pname      text;
    v_cur_ts     timestamptz;
    v_cur_id     uuid;
    v_retries    integer;
    v_virtual    boolean;
    v_n          integer;
    v_last_ts    timestamptz;
    v_last_id    uuid;
    v_delay_cut  timestamptz;
    v_ttl        integer;
    v_ttl_cut    timestamptz;
    v_head_ts    timestamptz;
    v_seen       uuid[] := '{}';
    v_durable    boolean := p_auto_ack; -- wrote more than leases and ready rows
    v_conflate   boolean := false;
    v_max_parts  integer := greatest(p_max_partitions, 1);
    v_span       integer;
    c_zero       constant uuid := '00000000-0000-0000-0000-000000000000';
BEGIN
    SELECT q.*, c.seen_at AS group_seen_at, gp.conflation AS group_conflation INTO v_q
      FROM queen.queues q
      LEFT JOIN queen.queue_consumers c ON c.queue_id = q.id AND c.consumer_group = p_group
      LEFT JOIN queen.consumer_group_policies gp ON gp.queue_id = q.id AND gp.consumer_group = p_group
     WHERE q.name = p_queue;
    IF NOT FOUND THEN
        -- No queue, no policy to store: a conflating request is answered as applied,
        -- as it will be by the pop that finds the queue and registers the group.
        IF p_conflation AND p_group <> '__QUEUE_MODE__' THEN
            o_flags := 1;
            RETURN NEXT;
        END IF;
        RETURN;
    END IF;
    -- The group's conflation policy. Without one (the group's first pop of the queue),
    -- nothing is claimed: the first row says so (o_flags 4), and the broker stores the
    -- policy in a transaction of its own (queen.group_policy_store_q1) and pops again.
    IF p_group <> '__QUEUE_MODE__' THEN
        v_conflate := v_q.group_conflation;
        IF v_conflate IS NULL THEN
            o_flags := 4;
            RETURN NEXT;
            RETURN;
        END IF;
        o_flags := CASE WHEN v_conflate THEN 1 ELSE 0 END
                 + CASE WHEN p_conflation IS NOT NULL AND p_conflation <> v_conflate THEN 2 ELSE 0 END;
        IF o_flags <> 0 THEN
            RETURN NEXT;
        END IF;
        o_flags := NULL;
        IF v_conflate THEN
            -- One message per claimed partition.
            v_max_parts := least(greatest(coalesce(p_conflate_width, 1), 1), 64);
            v_budget := v_max_parts;
        END IF;
    END IF;
    v_lease := make_interval(secs => CASE WHEN coalesce(p_lease_seconds, 0) > 0 THEN p_lease_seconds
                                          WHEN coalesce(v_q.lease_time, 0) > 0 THEN v_q.lease_time
                                          ELSE 60 END);
    v_delay_cut := v_now - make_interval(secs => greatest(coalesce(v_q.delayed_processing, 0), 0));
    -- ttl: messages older than this are expired and never delivered (0 = never expire).
    -- Only a ttl set through queen's configure counts: upstream stores 3600 on every
    -- queue and never applies it (queen.enforced_option_q1).
    v_ttl := queen.enforced_option_q1(v_q.ttl, v_q.queen_options, 'ttl');
    v_ttl_cut := CASE WHEN v_ttl > 0 THEN v_now - make_interval(secs => v_ttl) END;

    IF p_partition IS NOT NULL THEN
        SELECT array_agg(p.id), array_agg(p.name::text) INTO v_cands, v_names
        FROM queen.partitions p
        LEFT JOIN LATERAL (SELECT l.last_message_created_at FROM queen.partition_lookup l
                           WHERE l.partition_id = p.id AND l.queue_name = v_q.name OFFSET 0) pl ON true
        WHERE p.queue_id = v_q.id AND p.name = p_partition
          AND (coalesce(v_q.window_buffer, 0) = 0 OR pl.last_message_created_at IS NULL
               OR pl.last_message_created_at <= v_now - make_interval(secs => v_q.window_buffer));
        IF v_cands IS NULL THEN
            RETURN;
        END IF;
    ELSE
        -- Candidates come from the group's ready rows, least recently served first
        -- (015_ready.sql): an index range, whatever the number of partitions. The
        -- group's registration is written by its first such pop, and refreshed once a
        -- minute.
        IF v_q.group_seen_at IS NULL OR v_q.group_seen_at < v_now - interval '1 minute' THEN
            PERFORM queen.queue_consumer_register_q1(v_q.id, v_q.name, p_group, p_sub_mode, p_sub_from, v_sub_at);
            v_durable := true;
        END IF;
    END IF;

    v_i := 0;
    LOOP
        EXIT WHEN v_budget <= 0 OR v_claimed >= v_max_parts;
        v_i := v_i + 1;
        v_span := NULL;
        IF p_partition IS NOT NULL THEN
            EXIT WHEN v_i > cardinality(v_cands);
            v_pid := v_cands[v_i];
            v_pname := v_names[v_i];
            -- A pop of a named partition waits for a pop of its group claiming it, and
            -- for an eviction there.
            PERFORM pg_advisory_xact_lock_shared(queen.pop_claim_key(v_pid));
            PERFORM pg_advisory_xact_lock(queen.pop_group_claim_key(v_pid, p_group));
        ELSE
            -- Rows settled on the way (parked by the window buffer, or dropped as expired)
            -- do not come back to the next pops: up to 1000 of them do not count here, so
            -- that a run of them cannot hide a partition with messages behind them.
            EXIT WHEN v_i - least(v_settled, 1000) > v_max_parts * 4 + 16;
            -- The row stays locked until commit: concurrent pops skip it, and v_seen
            -- keeps this pop from taking it twice. The partition and its head are looked
            -- up by subqueries of their own (OFFSET 0 keeps each one), so that no join
            -- order or method, of a plan made when the tables were small, reads them all.
            SELECT r.partition_id, p.name, pl.last_message_created_at INTO v_pid, v_pname, v_head_ts
              FROM queen.partition_ready r
              CROSS JOIN LATERAL (SELECT pp.name::text AS name FROM queen.partitions pp
                                  WHERE pp.id = r.partition_id OFFSET 0) p
              LEFT JOIN LATERAL (SELECT l.last_message_created_at FROM queen.partition_lookup l
                                 WHERE l.partition_id = r.partition_id AND l.queue_name = v_q.name OFFSET 0) pl ON true
             WHERE r.queue_id = v_q.id AND r.consumer_group = p_group AND r.ready_at <= v_now
               AND r.partition_id <> ALL (v_seen)
             ORDER BY r.ready_at
             LIMIT 1
             FOR UPDATE OF r SKIP LOCKED;
            EXIT WHEN NOT FOUND;
            v_seen := v_seen || v_pid;
            -- windowBuffer: the partition waits until its newest message is that old.
            IF coalesce(v_q.window_buffer, 0) > 0
               AND v_head_ts > v_now - make_interval(secs => v_q.window_buffer) THEN
                UPDATE queen.partition_ready r
                   SET ready_at = v_head_ts + make_interval(secs => v_q.window_buffer)
                 WHERE r.partition_id = v_pid AND r.consumer_group = p_group;
                v_settled := v_settled + 1;
                CONTINUE;
            END IF;
            -- ttl: a partition whose newest message expired has nothing to deliver until
            -- a push (which adds the row again); the row goes, unless a push is in flight.
            IF v_ttl_cut IS NOT NULL AND (v_head_ts IS NULL OR v_head_ts <= v_ttl_cut) THEN
                IF pg_try_advisory_xact_lock_shared(queen.partition_order_key(v_pid)) THEN
                    DELETE FROM queen.partition_ready r
                     WHERE r.partition_id = v_pid AND r.consumer_group = p_group
                       AND NOT EXISTS (SELECT 1 FROM queen.partition_lookup pl
                                       WHERE pl.partition_id = v_pid AND pl.last_message_created_at > v_ttl_cut);
                END IF;
                v_settled := v_settled + 1;
                CONTINUE;
            END IF;
            -- A partition a pop of this group is claiming, or an eviction holds, is
            -- skipped; pops of other groups claiming it do not hold this one back.
            IF NOT (pg_try_advisory_xact_lock_shared(queen.pop_claim_key(v_pid))
                    AND pg_try_advisory_xact_lock(queen.pop_group_claim_key(v_pid, p_group))) THEN
                CONTINUE;
            END IF;
        END IF;

        -- Claim: lock the cursor row and take the lease in one statement. A wildcard
        -- pop skips a row that an ack or another pop holds (SKIP LOCKED), so pops
        -- (arbitrary partition order) and acks (sorted order) never wait on each other
        -- in a cycle; a pop of one named partition waits for it. When the group has no
        -- cursor row here yet, the first pop creates it already leased; a row that
        -- exists but cannot be claimed is leased (or locked): skip the partition.
        IF p_partition IS NULL THEN
            UPDATE queen.partition_consumers pc
               SET lease_acquired_at = v_now, lease_expires_at = v_now + v_lease,
                   worker_id = p_lease_id, batch_size = v_budget, acked_count = 0
             WHERE pc.id = (SELECT c.id FROM queen.partition_consumers c
                            WHERE c.partition_id = v_pid AND c.consumer_group = p_group
                              AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
                            FOR UPDATE SKIP LOCKED)
               AND (pc.lease_expires_at IS NULL OR pc.lease_expires_at <= v_now)
            RETURNING pc.last_consumed_created_at, pc.last_consumed_id, pc.batch_retry_count
                 INTO v_cur_ts, v_cur_id, v_retries;
        ELSE
            UPDATE queen.partition_consumers pc
               SET lease_acquired_at = v_now, lease_expires_at = v_now + v_lease,
                   worker_id = p_lease_id, batch_size = v_budget, acked_count = 0
             WHERE pc.id = (SELECT c.id FROM queen.partition_consumers c
                            WHERE c.partition_id = v_pid AND c.consumer_group = p_group
                              AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= v_now)
                            FOR UPDATE)
               AND (pc.lease_expires_at IS NULL OR pc.lease_expires_at <= v_now)
            RETURNING pc.last_consumed_created_at, pc.last_consumed_id, pc.batch_retry_count
                 INTO v_cur_ts, v_cur_id, v_retries;
        END IF;
        v_ok := FOUND;
        IF NOT v_ok THEN
            -- No row to claim: the group's first pop here creates it, leased. A conflict
            -- means a row exists that is leased or locked. The insert waits for a seek
            -- creating the same row; that seek may wait for this pop's ready row: a
            -- deadlock, detected by this pop (it waited first), which then leaves the
            -- partition to the next pop instead of failing.
            BEGIN
                INSERT INTO queen.partition_consumers AS pc
                       (partition_id, consumer_group, lease_acquired_at, lease_expires_at, worker_id, batch_size, acked_count)
                VALUES (v_pid, p_group, v_now, v_now + v_lease, p_lease_id, v_budget, 0)
                ON CONFLICT (partition_id, consumer_group) DO NOTHING
                RETURNING pc.last_consumed_created_at, pc.last_consumed_id, pc.batch_retry_count
                     INTO v_cur_ts, v_cur_id, v_retries;
                v_ok := FOUND;
            EXCEPTION WHEN deadlock_detected THEN
                v_ok := false;
            END;
        END IF;
        IF v_ok THEN
            -- The ready row waits for the lease.
            UPDATE queen.partition_ready r SET ready_at = v_now + v_lease
             WHERE r.partition_id = v_pid AND r.consumer_group = p_group;
        END IF;
        IF NOT v_ok THEN
            IF p_partition IS NULL THEN
                -- Leased, or held back by a retry delay: park the ready row until then.
                UPDATE queen.partition_ready r SET ready_at = c.lease_expires_at
                  FROM queen.partition_consumers c
                 WHERE c.partition_id = v_pid AND c.consumer_group = p_group AND c.lease_expires_at > v_now
                   AND r.partition_id = v_pid AND r.consumer_group = p_group;
            END IF;
            CONTINUE;
        END IF;

        v_virtual := false;
        IF v_cur_ts IS NULL AND p_group <> '__QUEUE_MODE__' THEN
            v_durable := true; -- the subscription's start may be stored
            v_cur_ts := queen.subscription_start_q1(v_q.name, v_pname, p_group,
                                                    p_partition IS NOT NULL, p_sub_mode, p_sub_from, v_sub_at);
            IF v_cur_ts IS NOT NULL THEN
                v_cur_id := c_zero;
                v_virtual := true;
            END IF;
        END IF;

        -- The next messages after the cursor, in one statement and no per-row plpgsql
        -- work. The WHERE clause is written so the cursor bounds the index scan even in
        -- a cached generic plan (an "IS NULL OR" would make it a filter: every pop
        -- would walk the partition's consumed messages again); created_at is never
        -- -infinity. Without autoAck they are returned straight from the index scan.
        -- With it the cursor moves to the last of them, so they are read into one
        -- array of rows first (one sort; six ordered aggregates sorted six times).
        IF v_conflate THEN
            -- Conflated: the newest visible message, leased with every one before it
            -- after the cursor (v_span of them, counted as an ack counts them).
            SELECT array_agg(s.m) INTO v_rows
              FROM (SELECT mm AS m
                      FROM queen.messages mm
                     WHERE mm.partition_id = v_pid
                       AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero))
                       AND (coalesce(v_q.delayed_processing, 0) = 0 OR mm.created_at <= v_delay_cut)
                       AND mm.created_at > coalesce(v_ttl_cut, '-infinity'::timestamptz)
                     ORDER BY mm.created_at DESC, mm.id DESC
                     LIMIT 1) s;
            v_n := coalesce(cardinality(v_rows), 0);
            IF v_n > 0 THEN
                v_last_ts := v_rows[1].created_at;
                v_last_id := v_rows[1].id;
                SELECT count(*) INTO v_span
                  FROM queen.messages mm
                 WHERE mm.partition_id = v_pid
                   AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero))
                   AND (mm.created_at, mm.id) <= (v_last_ts, v_last_id)
                   AND mm.created_at > coalesce(v_ttl_cut, '-infinity'::timestamptz);
                RETURN QUERY
                SELECT v_pid, v_pname, x.id, x.transaction_id::text, x.trace_id, x.payload, x.producer_sub,
                       x.created_at, coalesce(v_retries, 0), x.traceparent, x.tracestate, NULL::integer
                  FROM unnest(v_rows) AS x;
            END IF;
        ELSIF NOT p_auto_ack THEN
            RETURN QUERY
            SELECT v_pid, v_pname, mm.id, mm.transaction_id::text, mm.trace_id, mm.payload, mm.producer_sub,
                   mm.created_at, coalesce(v_retries, 0), mm.traceparent, mm.tracestate, NULL::integer
              FROM queen.messages mm
             WHERE mm.partition_id = v_pid
               AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero))
               AND (coalesce(v_q.delayed_processing, 0) = 0 OR mm.created_at <= v_delay_cut)
               AND mm.created_at > coalesce(v_ttl_cut, '-infinity'::timestamptz)
             ORDER BY mm.created_at, mm.id
             LIMIT v_budget;
            GET DIAGNOSTICS v_n = ROW_COUNT;
        ELSE
            SELECT array_agg(s.m ORDER BY (s.m).created_at, (s.m).id) INTO v_rows
              FROM (SELECT mm AS m
                      FROM queen.messages mm
                     WHERE mm.partition_id = v_pid
                       AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero))
                       AND (coalesce(v_q.delayed_processing, 0) = 0 OR mm.created_at <= v_delay_cut)
                       AND mm.created_at > coalesce(v_ttl_cut, '-infinity'::timestamptz)
                     ORDER BY mm.created_at, mm.id
                     LIMIT v_budget) s;
            v_n := coalesce(cardinality(v_rows), 0);
            IF v_n > 0 THEN
                v_last_ts := v_rows[v_n].created_at;
                v_last_id := v_rows[v_n].id;
                v_span := v_n;
                RETURN QUERY
                SELECT v_pid, v_pname, x.id, x.transaction_id::text, x.trace_id, x.payload, x.producer_sub,
                       x.created_at, coalesce(v_retries, 0), x.traceparent, x.tracestate, NULL::integer
                  FROM unnest(v_rows) AS x;
            END IF;
        END IF;

        IF v_n = 0 THEN
            UPDATE queen.partition_consumers pc
               SET lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL,
                   batch_size = 0, acked_count = 0
             WHERE pc.partition_id = v_pid AND pc.consumer_group = p_group AND pc.worker_id = p_lease_id;
            IF v_virtual THEN
                -- Store the subscription start as a real cursor so a "new" group never
                -- re-reads history later: the newest message before it (one stamped at
                -- the subscription itself is after the virtual cursor, and still owed;
                -- upstream's "at or before" would skip it).
                UPDATE queen.partition_consumers pc
                   SET last_consumed_created_at = h.created_at, last_consumed_id = h.id,
                       last_consumed_at = v_now
                  FROM (SELECT mm.created_at, mm.id FROM queen.messages mm
                        WHERE mm.partition_id = v_pid AND mm.created_at < v_cur_ts
                        ORDER BY mm.created_at DESC, mm.id DESC LIMIT 1) h
                 WHERE pc.partition_id = v_pid AND pc.consumer_group = p_group
                   AND pc.last_consumed_created_at IS NULL;
            END IF;
            -- No message after the cursor at all: the ones after it were deleted (by the
            -- retention or eviction jobs, or an admin) after the partition's head was
            -- written, which the settling below would still read as pending work. The
            -- row goes, as at the head; a push adds it again. Under the shared ordering
            -- lock every push to the partition has committed: look again.
            IF NOT EXISTS (SELECT 1 FROM queen.messages mm
                            WHERE mm.partition_id = v_pid
                              AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero)))
               AND pg_try_advisory_xact_lock_shared(queen.partition_order_key(v_pid)) THEN
                DELETE FROM queen.partition_ready r
                 WHERE r.partition_id = v_pid AND r.consumer_group = p_group
                   AND NOT EXISTS (SELECT 1 FROM queen.messages mm
                                    WHERE mm.partition_id = v_pid
                                      AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero)));
                IF FOUND THEN
                    v_settled := v_settled + 1;
                    CONTINUE;
                END IF;
            END IF;
            PERFORM queen.ready_settle_many_q1(ARRAY[v_pid], p_group);
            IF p_partition IS NULL AND coalesce(v_q.delayed_processing, 0) > 0 THEN
                -- delayedProcessing: park the ready row until the next message is due.
                UPDATE queen.partition_ready r
                   SET ready_at = d.created_at + make_interval(secs => v_q.delayed_processing)
                  FROM (SELECT mm.created_at FROM queen.messages mm
                        WHERE mm.partition_id = v_pid
                          AND (mm.created_at, mm.id) > (coalesce(v_cur_ts, '-infinity'::timestamptz), coalesce(v_cur_id, c_zero))
                        ORDER BY mm.created_at, mm.id LIMIT 1) d
                 WHERE r.partition_id = v_pid AND r.consumer_group = p_group;
            END IF;
            CONTINUE;
        END IF;

        IF p_auto_ack THEN
            UPDATE queen.partition_consumers pc
               SET last_consumed_created_at = v_last_ts, last_consumed_id = v_last_id,
                   lease_acquired_at = NULL, lease_expires_at = NULL, worker_id = NULL,
                   batch_size = 0, acked_count = 0, batch_retry_count = 0,
                   total_messages_consumed = pc.total_messages_consumed + v_span,
                   total_batches_consumed = pc.total_batches_consumed + 1,
                   last_consumed_at = v_now
             WHERE pc.partition_id = v_pid AND pc.consumer_group = p_group AND pc.worker_id = p_lease_id;
            PERFORM queen.ready_settle_many_q1(ARRAY[v_pid], p_group);
        ELSIF v_virtual THEN
            -- The batch starts at the subscription: store it as the cursor (the newest
            -- message before it), so that the acks of this batch, which count the
            -- messages from the cursor to the acked one, do not count the older ones.
            UPDATE queen.partition_consumers pc
               SET last_consumed_created_at = h.created_at, last_consumed_id = h.id,
                   batch_size = coalesce(v_span, v_n), acked_count = 0
              FROM (SELECT mm.created_at, mm.id FROM queen.messages mm
                    WHERE mm.partition_id = v_pid AND mm.created_at < v_cur_ts
                    ORDER BY mm.created_at DESC, mm.id DESC LIMIT 1) h
             WHERE pc.partition_id = v_pid AND pc.consumer_group = p_group AND pc.worker_id = p_lease_id
               AND pc.last_consumed_created_at IS NULL;
            IF NOT FOUND AND coalesce(v_span, v_n) <> v_budget THEN
                UPDATE queen.partition_consumers pc
                   SET batch_size = coalesce(v_span, v_n), acked_count = 0
                 WHERE pc.partition_id = v_pid AND pc.consumer_group = p_group AND pc.worker_id = p_lease_id;
            END IF;
        ELSIF coalesce(v_span, v_n) <> v_budget THEN
            UPDATE queen.partition_consumers pc
               SET batch_size = coalesce(v_span, v_n), acked_count = 0
             WHERE pc.partition_id = v_pid AND pc.consumer_group = p_group AND pc.worker_id = p_lease_id;
        END IF;

        v_budget := v_budget - v_n;
        v_claimed := v_claimed + 1;
    END LOOP;

    -- A broker with QUEEN_POP_SYNCHRONOUS_COMMIT=off sets queen.pop_commit to 'async'
    -- for its pops: a pop that wrote only leases and ready rows then commits without
    -- waiting for its WAL flush (or a synchronous standby). A crash before the flush
    -- undoes the whole pop, as if it had not happened: its messages are delivered
    -- again from the cursor. A pop that registered its group or started a
    -- subscription, and an autoAck pop (its cursor move is an ack), stay durable.
    IF NOT v_durable AND current_setting('queen.pop_commit', true) = 'async' THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
END;
$$;

-- The eleven-argument queen.pop_q3 of the release before: no conflation (a
-- conflating group's policy is still applied; a group's first pop stores none, in the
-- pop's own transaction). Kept so that a broker of the previous release still pops
-- against this schema.
CREATE OR REPLACE FUNCTION queen.pop_q3(
    p_queue          text,
    p_partition      text,
    p_group          text,
    p_lease_id       text,
    p_batch          integer,
    p_max_partitions integer,
    p_auto_ack       boolean,
    p_sub_mode       text,
    p_sub_from       text,
    p_lease_seconds  integer,
    p_sub_age        double precision
) RETURNS TABLE (o_partition_id uuid, o_partition text, o_id uuid, o_transaction_id text,
                 o_trace_id uuid, o_payload jsonb, o_producer_sub text, o_created_at timestamptz,
                 o_retry_count integer, o_traceparent text, o_tracestate text)
LANGUAGE sql
AS $$
    SELECT queen.group_policy_store_q1(p_queue, p_group, NULL) WHERE p_group <> '__QUEUE_MODE__';
    SELECT o_partition_id, o_partition, o_id, o_transaction_id, o_trace_id, o_payload, o_producer_sub,
           o_created_at, o_retry_count, o_traceparent, o_tracestate
      FROM queen.pop_q4(p_queue, p_partition, p_group, p_lease_id, p_batch, p_max_partitions,
                        p_auto_ack, p_sub_mode, p_sub_from, p_lease_seconds, p_sub_age, NULL, p_max_partitions)
     WHERE o_id IS NOT NULL
$$;

-- The ten-argument queen.pop_q2 of the release before: subscriptions start when the
-- statement runs. Kept so that a broker of the previous release still pops against
-- this schema.
CREATE OR REPLACE FUNCTION queen.pop_q2(
    p_queue          text,
    p_partition      text,
    p_group          text,
    p_lease_id       text,
    p_batch          integer,
    p_max_partitions integer,
    p_auto_ack       boolean,
    p_sub_mode       text,
    p_sub_from       text,
    p_lease_seconds  integer
) RETURNS TABLE (o_partition_id uuid, o_partition text, o_id uuid, o_transaction_id text,
                 o_trace_id uuid, o_payload jsonb, o_producer_sub text, o_created_at timestamptz,
                 o_retry_count integer, o_traceparent text, o_tracestate text)
LANGUAGE sql
AS $$
    SELECT * FROM queen.pop_q3(p_queue, p_partition, p_group, p_lease_id, p_batch, p_max_partitions,
                               p_auto_ack, p_sub_mode, p_sub_from, p_lease_seconds, 0)
$$;

-- The ten-argument queen.pop_q1 of earlier brokers: no trace contexts. Kept so that a
-- broker of the previous release still pops against this schema.
CREATE OR REPLACE FUNCTION queen.pop_q1(
    p_queue          text,
    p_partition      text,
    p_group          text,
    p_lease_id       text,
    p_batch          integer,
    p_max_partitions integer,
    p_auto_ack       boolean,
    p_sub_mode       text,
    p_sub_from       text,
    p_lease_seconds  integer
) RETURNS TABLE (o_partition_id uuid, o_partition text, o_id uuid, o_transaction_id text,
                 o_trace_id uuid, o_payload jsonb, o_producer_sub text, o_created_at timestamptz,
                 o_retry_count integer)
LANGUAGE sql
AS $$
    SELECT o_partition_id, o_partition, o_id, o_transaction_id, o_trace_id, o_payload, o_producer_sub,
           o_created_at, o_retry_count
      FROM queen.pop_q3(p_queue, p_partition, p_group, p_lease_id, p_batch, p_max_partitions,
                        p_auto_ack, p_sub_mode, p_sub_from, p_lease_seconds, 0)
$$;

-- The nine-argument queen.pop_q1 of the release before: each queue's own lease_time.
CREATE OR REPLACE FUNCTION queen.pop_q1(
    p_queue          text,
    p_partition      text,
    p_group          text,
    p_lease_id       text,
    p_batch          integer,
    p_max_partitions integer,
    p_auto_ack       boolean,
    p_sub_mode       text,
    p_sub_from       text
) RETURNS TABLE (o_partition_id uuid, o_partition text, o_id uuid, o_transaction_id text,
                 o_trace_id uuid, o_payload jsonb, o_producer_sub text, o_created_at timestamptz,
                 o_retry_count integer)
LANGUAGE sql
AS $$
    SELECT * FROM queen.pop_q1(p_queue, p_partition, p_group, p_lease_id, p_batch, p_max_partitions,
                               p_auto_ack, p_sub_mode, p_sub_from, NULL::integer)
$$;

-- queen.subscription_start_q1 decides where a named group with no cursor starts in a
-- partition. NULL means "from the beginning".
CREATE OR REPLACE FUNCTION queen.subscription_start_q1(
    p_queue text, p_partition text, p_group text, p_specific boolean,
    p_sub_mode text, p_sub_from text, p_now timestamptz
) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    v_ts   timestamptz;
    v_mode text := lower(coalesce(p_sub_mode, ''));
    v_from text := coalesce(p_sub_from, '');
BEGIN
    SELECT md.subscription_timestamp INTO v_ts
    FROM queen.consumer_groups_metadata md
    WHERE md.consumer_group = p_group AND md.queue_name = p_queue
      AND md.partition_name IN (p_partition, '') AND md.namespace = '' AND md.task = ''
    ORDER BY (md.partition_name = '') ASC
    LIMIT 1;
    IF FOUND THEN
        RETURN v_ts;
    END IF;

    IF v_from <> '' AND lower(v_from) <> 'now' THEN
        BEGIN
            v_ts := v_from::timestamptz;
        EXCEPTION WHEN others THEN
            RETURN NULL; -- unparsable: start from the beginning, store nothing (upstream)
        END;
        INSERT INTO queen.consumer_groups_metadata
               (consumer_group, queue_name, partition_name, subscription_mode, subscription_timestamp)
        VALUES (p_group, p_queue, CASE WHEN p_specific THEN p_partition ELSE '' END, 'timestamp', v_ts)
        ON CONFLICT DO NOTHING;
        RETURN queen.subscription_stored_q1(p_queue, p_partition, p_group, v_ts);
    END IF;

    IF lower(v_from) = 'now' OR v_mode IN ('new', 'new-only') THEN
        INSERT INTO queen.consumer_groups_metadata
               (consumer_group, queue_name, partition_name, subscription_mode, subscription_timestamp)
        VALUES (p_group, p_queue, CASE WHEN p_specific THEN p_partition ELSE '' END, 'new', p_now)
        ON CONFLICT DO NOTHING;
        RETURN queen.subscription_stored_q1(p_queue, p_partition, p_group, p_now);
    END IF;
    RETURN NULL;
END;
$$;

-- queen.subscription_stored_q1 returns the subscription timestamp stored for (group,
-- queue[, partition]) — a concurrent first pop may have stored its own — or p_fallback.
CREATE OR REPLACE FUNCTION queen.subscription_stored_q1(
    p_queue text, p_partition text, p_group text, p_fallback timestamptz
) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT coalesce((
        SELECT md.subscription_timestamp
        FROM queen.consumer_groups_metadata md
        WHERE md.consumer_group = p_group AND md.queue_name = p_queue
          AND md.partition_name IN (p_partition, '') AND md.namespace = '' AND md.task = ''
        ORDER BY (md.partition_name = '') ASC
        LIMIT 1), p_fallback)
$$;

-- queen.pop_claim_key is the advisory-lock key of a partition that every pop holds in
-- share mode, for its transaction, while it claims the partition and reads its
-- messages, and that eviction takes exclusively (trying: a partition being claimed is
-- skipped). Pops of different consumer groups share it: one group's claim never holds
-- back another's, whose wildcard pop would otherwise pass the partition over and answer
-- empty while its messages wait.
CREATE OR REPLACE FUNCTION queen.pop_claim_key(p_partition uuid)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_partition::text, 12648430)
$$;

-- queen.pop_group_claim_key is the advisory-lock key a pop of p_group holds exclusively
-- on a partition while it claims it (after queen.pop_claim_key in share mode): wildcard
-- pops of the group try it and skip a partition another pop of the group is claiming; a
-- pop of a named partition waits for it.
CREATE OR REPLACE FUNCTION queen.pop_group_claim_key(p_partition uuid, p_group text)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(p_partition::text || '/' || p_group, 12648430)
$$;

