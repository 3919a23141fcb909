-- queen's activity and analytics tables. Dashboard data only: never read for delivery
-- decisions. Every broker process adds its per-minute counters additively (INSERT ...
-- ON CONFLICT DO UPDATE SET x = x + excluded.x), so the rows of one minute are the sum
-- over the cluster and a partial flush followed by a later one adds up to the same
-- totals. Averages are stored as a sum and a count next to the avg column that the same
-- upsert keeps current. Additive only.
--
-- These shapes (text instance names, double averages, sums and counts) are not
-- upstream's, so they live in tables of queen's own: queue_activity, worker_activity,
-- queue_parked_activity and system_activity. Upstream's tables of the same purpose
-- (queue_lag_metrics, worker_metrics, queue_parked_replica, system_metrics) keep
-- upstream's layout (081_upstream_analytics.sql) for upstream brokers, its partition
-- triggers and its dashboards; queen neither writes nor reads them.

-- An earlier queen kept these tables under upstream's names. Its rows move with the
-- table (a rename: no copy, no scan), and the constraint and index names follow, so
-- that upstream's names are free for upstream's layout. A table of upstream's is
-- recognised by the absence of a column only queen's had, and is never renamed.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT * FROM (VALUES
            ('queue_lag_metrics',    'queue_activity',        'lag_sum_ms'),
            ('worker_metrics',       'worker_activity',       'sample_count'),
            ('queue_parked_replica', 'queue_parked_activity', 'max_parked'),
            ('system_metrics',       'system_activity',       'bucket_time')
        ) AS x(old_name, new_name, marker)
    LOOP
        CONTINUE WHEN to_regclass('queen.' || r.new_name) IS NOT NULL;
        CONTINUE WHEN NOT EXISTS (
            SELECT 1 FROM pg_attribute
            WHERE attrelid = to_regclass('queen.' || r.old_name) AND attname = r.marker AND NOT attisdropped);
        EXECUTE format('ALTER TABLE queen.%I RENAME TO %I', r.old_name, r.new_name);
        IF EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = to_regclass('queen.' || r.new_name) AND conname = r.old_name || '_pkey') THEN
            EXECUTE format('ALTER TABLE queen.%I RENAME CONSTRAINT %I TO %I',
                           r.new_name, r.old_name || '_pkey', r.new_name || '_pkey');
        END IF;
    END LOOP;
    IF to_regclass('queen.idx_queue_lag_metrics_queue_bucket') IS NOT NULL
       AND to_regclass('queen.idx_queue_activity_queue_bucket') IS NULL THEN
        ALTER INDEX queen.idx_queue_lag_metrics_queue_bucket RENAME TO idx_queue_activity_queue_bucket;
    END IF;
END
$$;

-- queue_activity: per (minute, queue), summed over every broker process.
CREATE TABLE IF NOT EXISTS queen.queue_activity (
    bucket_time            timestamptz  NOT NULL,
    queue_name             varchar(255) NOT NULL,
    pop_count              bigint NOT NULL DEFAULT 0,   -- messages delivered (lag samples)
    lag_sum_ms             bigint NOT NULL DEFAULT 0,
    avg_lag_ms             double precision NOT NULL DEFAULT 0,
    max_lag_ms             bigint NOT NULL DEFAULT 0,
    push_request_count     bigint NOT NULL DEFAULT 0,
    push_message_count     bigint NOT NULL DEFAULT 0,
    pop_request_count      bigint NOT NULL DEFAULT 0,
    pop_empty_count        bigint NOT NULL DEFAULT 0,
    ack_request_count      bigint NOT NULL DEFAULT 0,
    ack_message_count      bigint NOT NULL DEFAULT 0,
    ack_success_count      bigint NOT NULL DEFAULT 0,
    ack_failed_count       bigint NOT NULL DEFAULT 0,
    auto_ack_count         bigint NOT NULL DEFAULT 0,
    transaction_count      bigint NOT NULL DEFAULT 0,
    dlq_count              bigint NOT NULL DEFAULT 0,
    parked_count           double precision NOT NULL DEFAULT 0, -- average parked long-polls over the minute
    partitions_created     bigint NOT NULL DEFAULT 0,
    partitions_deleted     bigint NOT NULL DEFAULT 0,
    partition_count        bigint NOT NULL DEFAULT 0,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, queue_name)
);
CREATE INDEX IF NOT EXISTS idx_queue_activity_queue_bucket
    ON queen.queue_activity (queue_name, bucket_time);

-- worker_activity: per (minute, hostname, worker_id, pid). worker_id is the broker's
-- instance name (QUEEN_INSTANCE, else the hostname).
CREATE TABLE IF NOT EXISTS queen.worker_activity (
    bucket_time            timestamptz  NOT NULL,
    hostname               varchar(255) NOT NULL,
    worker_id              varchar(255) NOT NULL,
    pid                    integer      NOT NULL,
    sample_count           bigint NOT NULL DEFAULT 0,
    event_loop_lag_sum_ms  double precision NOT NULL DEFAULT 0, -- Go scheduling delay of the 1 Hz sampler
    avg_event_loop_lag_ms  double precision NOT NULL DEFAULT 0,
    max_event_loop_lag_ms  double precision NOT NULL DEFAULT 0,
    free_slots_sum         bigint NOT NULL DEFAULT 0,           -- idle + not yet opened pool connections
    avg_free_slots         double precision NOT NULL DEFAULT 0,
    min_free_slots         bigint,
    db_connections         bigint NOT NULL DEFAULT 0,           -- pool size (max connections)
    parked_sum             bigint NOT NULL DEFAULT 0,
    avg_parked             double precision NOT NULL DEFAULT 0,
    max_parked             bigint NOT NULL DEFAULT 0,
    jobs_done              bigint NOT NULL DEFAULT 0,
    push_request_count     bigint NOT NULL DEFAULT 0,
    pop_request_count      bigint NOT NULL DEFAULT 0,
    ack_request_count      bigint NOT NULL DEFAULT 0,
    transaction_count      bigint NOT NULL DEFAULT 0,
    push_message_count     bigint NOT NULL DEFAULT 0,
    pop_message_count      bigint NOT NULL DEFAULT 0,
    pop_empty_count        bigint NOT NULL DEFAULT 0,
    ack_message_count      bigint NOT NULL DEFAULT 0,
    ack_success_count      bigint NOT NULL DEFAULT 0,
    ack_failed_count       bigint NOT NULL DEFAULT 0,
    auto_ack_count         bigint NOT NULL DEFAULT 0,
    lag_count              bigint NOT NULL DEFAULT 0,
    lag_sum_ms             bigint NOT NULL DEFAULT 0,
    avg_lag_ms             double precision NOT NULL DEFAULT 0,
    max_lag_ms             bigint NOT NULL DEFAULT 0,
    db_error_count         bigint NOT NULL DEFAULT 0,
    dlq_count              bigint NOT NULL DEFAULT 0,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, hostname, worker_id, pid)
);

-- queue_parked_activity: parked long-polls per (minute, queue, replica). parked_count
-- is the average over the minute: the sum of the 1 Hz samples divided by 60.
CREATE TABLE IF NOT EXISTS queen.queue_parked_activity (
    bucket_time  timestamptz  NOT NULL,
    queue_name   varchar(255) NOT NULL,
    hostname     varchar(255) NOT NULL,
    worker_id    varchar(255) NOT NULL,
    parked_count double precision NOT NULL DEFAULT 0,
    max_parked   bigint NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, queue_name, hostname, worker_id)
);

-- system_activity: per process per minute, a JSON aggregate of 1 Hz process samples:
-- {"<group>":{"<key>":{"avg":..,"min":..,"max":..,"last":..}}}. A row is rewritten
-- whole (not added to): the process holds the minute's aggregate until it closes.
CREATE TABLE IF NOT EXISTS queen.system_activity (
    bucket_time  timestamptz  NOT NULL,
    hostname     varchar(255) NOT NULL,
    worker_id    varchar(255) NOT NULL,
    pid          integer      NOT NULL,
    sample_count bigint NOT NULL DEFAULT 0,
    metrics      jsonb  NOT NULL DEFAULT '{}',
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bucket_time, hostname, worker_id, pid)
);

-- retention_history: written by the retention and eviction jobs, read by the
-- retention series; the same columns as upstream's table (which also has a foreign
-- key to partitions: on a database adopted from upstream its rows go with their
-- partition). Shared by both brokers.
DO $$
BEGIN
    IF to_regclass('queen.retention_history') IS NULL THEN
        CREATE TABLE queen.retention_history (
            id               bigserial PRIMARY KEY,
            partition_id     uuid,
            messages_deleted integer NOT NULL DEFAULT 0,
            retention_type   varchar(50) NOT NULL,
            executed_at      timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX idx_retention_history_partition ON queen.retention_history (partition_id);
        CREATE INDEX idx_retention_history_executed ON queen.retention_history (executed_at);
    END IF;
END
$$;
