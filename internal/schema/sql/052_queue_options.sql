-- Options upstream stores but never applies. Upstream writes ttl 3600 and retry_delay
-- 1000 on every queue (column defaults, also for every option its configure omits) and
-- applies neither; queen applies both. So queen applies them only when they were set
-- through its own configure: queen.queues.queen_options records the options object
-- queen.configure_q1 applied, and queen.enforced_option_q1 compares it with the stored
-- column. A queue written by upstream has no record: its ttl and retry_delay count as
-- 0 (not applied) until a configure through queen. A configure by an upstream broker on
-- the same database (after a rollback) changes the columns but not the record, so a
-- value that now differs from the record is not applied either. Upstream ignores the
-- extra column.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_attribute
               WHERE attrelid = 'queen.queues'::regclass AND attname = 'queen_options' AND NOT attisdropped) THEN
        RETURN;
    END IF;
    ALTER TABLE queen.queues ADD COLUMN queen_options jsonb;
    -- A database an earlier queen already served (it recorded a schema version before
    -- this apply) had every stored ttl, retry_delay and max_queue_size applied. Keep
    -- applying those that cannot be upstream's defaults, so an upgrade does not drop a
    -- ttl, retryDelay or maxSize an operator set through queen; upstream's 3600 and
    -- 1000 stop being applied. A database adopted from upstream has no version recorded yet: no record.
    IF EXISTS (SELECT 1 FROM queen.schema_version) THEN
        UPDATE queen.queues
           SET queen_options = jsonb_strip_nulls(jsonb_build_object(
                   'ttl', CASE WHEN ttl > 0 AND ttl <> 3600 THEN ttl END,
                   'retryDelay', CASE WHEN retry_delay > 0 AND retry_delay <> 1000 THEN retry_delay END,
                   'maxSize', CASE WHEN max_queue_size > 0 THEN max_queue_size END))
         WHERE (ttl > 0 AND ttl <> 3600) OR (retry_delay > 0 AND retry_delay <> 1000) OR max_queue_size > 0;
    END IF;
END
$$;

-- queen.enforced_option_q1 is the value queen applies for an option it applies only
-- when set through queen (p_key 'ttl', 'retryDelay' or 'maxSize', which upstream stores
-- as max_queue_size and never applies): p_stored when p_recorded (a
-- queues.queen_options) holds that same value under p_key, else 0. A plain expression,
-- inlined into the statement that reads the queue row.
CREATE OR REPLACE FUNCTION queen.enforced_option_q1(p_stored integer, p_recorded jsonb, p_key text)
RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_stored > 0 AND p_recorded ->> p_key = p_stored::text THEN p_stored ELSE 0 END
$$;

-- queen.dlq_off_q1 says whether a queue drops a message that exhausts its retryLimit
-- (or is nacked with status dlq) instead of filing it in the dead-letter queue: only
-- when both flags are false (p_dlq deadLetterQueue, p_after dlqAfterMaxRetries) and
-- queen's own configure set them so, which it records as dlqOff in p_recorded (a
-- queues.queen_options). Upstream stores both false by default and always
-- dead-letters, so its queues keep doing so. Inlined like enforced_option_q1.
CREATE OR REPLACE FUNCTION queen.dlq_off_q1(p_dlq boolean, p_after boolean, p_recorded jsonb)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT NOT coalesce(p_dlq, false) AND NOT coalesce(p_after, false)
           AND coalesce(p_recorded ->> 'dlqOff' = 'true', false)
$$;
