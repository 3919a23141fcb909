-- queen.configure_q1 upserts a queue with full replacement of its options (omitted
-- options go back to their defaults) and makes sure its Default partition exists. It
-- records the options in queen_options: the ttl and retry_delay it stores are applied
-- (052_queue_options.sql).
CREATE OR REPLACE FUNCTION queen.configure_q1(
    p_name text, p_namespace text, p_task text, p_options jsonb
) RETURNS TABLE (o_queue_id uuid, o_partition_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    v_qid uuid;
    v_pid uuid;
BEGIN
    INSERT INTO queen.queues AS q (name, namespace, task, priority, lease_time, retry_limit, retry_delay,
        ttl, dead_letter_queue, dlq_after_max_retries, delayed_processing, window_buffer,
        retention_seconds, completed_retention_seconds, retention_enabled, encryption_enabled,
        max_wait_time_seconds, max_queue_size, queen_options, updated_at)
    VALUES (p_name, p_namespace, p_task,
        (p_options->>'priority')::integer, (p_options->>'leaseTime')::integer,
        (p_options->>'retryLimit')::integer, (p_options->>'retryDelay')::integer,
        (p_options->>'ttl')::integer, (p_options->>'deadLetterQueue')::boolean,
        (p_options->>'dlqAfterMaxRetries')::boolean, (p_options->>'delayedProcessing')::integer,
        (p_options->>'windowBuffer')::integer, (p_options->>'retentionSeconds')::integer,
        (p_options->>'completedRetentionSeconds')::integer, (p_options->>'retentionEnabled')::boolean,
        (p_options->>'encryptionEnabled')::boolean, (p_options->>'maxWaitTimeSeconds')::integer,
        (p_options->>'maxSize')::integer, p_options, now())
    ON CONFLICT (name) DO UPDATE SET
        namespace = excluded.namespace, task = excluded.task, priority = excluded.priority,
        lease_time = excluded.lease_time, retry_limit = excluded.retry_limit,
        retry_delay = excluded.retry_delay, ttl = excluded.ttl,
        dead_letter_queue = excluded.dead_letter_queue,
        dlq_after_max_retries = excluded.dlq_after_max_retries,
        delayed_processing = excluded.delayed_processing, window_buffer = excluded.window_buffer,
        retention_seconds = excluded.retention_seconds,
        completed_retention_seconds = excluded.completed_retention_seconds,
        retention_enabled = excluded.retention_enabled,
        encryption_enabled = excluded.encryption_enabled,
        max_wait_time_seconds = excluded.max_wait_time_seconds,
        max_queue_size = excluded.max_queue_size, queen_options = excluded.queen_options,
        updated_at = now()
    RETURNING q.id INTO v_qid;

    INSERT INTO queen.partitions (queue_id, name) VALUES (v_qid, 'Default')
    ON CONFLICT (queue_id, name) DO NOTHING;
    SELECT p.id INTO v_pid FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = 'Default';
    RETURN QUERY SELECT v_qid, v_pid;
END;
$$;

-- queen.delete_queue_q1 deletes a queue and everything hanging off it, including the
-- consumer-group subscriptions upstream leaves behind and the stream state kept for
-- its partitions.
CREATE OR REPLACE FUNCTION queen.delete_queue_q1(p_name text)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_qid uuid;
BEGIN
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        DELETE FROM queen.consumer_groups_metadata WHERE queue_name = p_name;
        DELETE FROM queen.consumer_watermarks WHERE queue_name = p_name;
        RETURN false;
    END IF;
    -- Stream state of the queue's partitions can never be read again: a queue made
    -- again under this name gets new partition ids. Rows are taken in a cycle's order
    -- (shard, state, cursor), so a cycle running meanwhile waits instead of deadlocking.
    DELETE FROM queen_streams.shards s USING queen.partitions p
     WHERE s.partition_id = p.id AND p.queue_id = v_qid;
    DELETE FROM queen_streams.state s USING queen.partitions p
     WHERE s.partition_id = p.id AND p.queue_id = v_qid;
    DELETE FROM queen.partition_consumers pc USING queen.partitions p
     WHERE pc.partition_id = p.id AND p.queue_id = v_qid;
    DELETE FROM queen.consumer_watermarks WHERE queue_name = p_name;
    DELETE FROM queen.consumer_groups_metadata WHERE queue_name = p_name;
    DELETE FROM queen.queues WHERE id = v_qid;
    RETURN true;
END;
$$;
