-- A database as an upstream Queen 0.15 broker leaves it, written for queen's tests from
-- the documented layout (tables, columns, types, defaults, index names, the triggers
-- on partitions and worker_metrics) and filled the way upstream fills it. The trigger
-- bodies are this file's own. Loaded in one implicit transaction, so now() is one
-- instant for every row.
--
-- Contents:
--   legacy.orders  p1: o-1 .. o-5 (2 h to 70 min old); queue-mode cursor after o-2;
--                      o-1 dead-lettered with a trace named 'checkout' and 'order-1'.
--                  p2: q-1 .. q-3 (95 to 75 min old); a live queue-mode lease
--                      'upstream-lease-1' on a batch of 2, nothing consumed yet.
--                  group 'analytics' subscribed in 'new' mode 90 minutes ago.
--   legacy.audit   Default: a-1, a-2 (65 min old) and no partition_lookup row.
--   legacy.config  no partition, no message: only configured.
--   billing        Default: b-1 (61 min old), created by a push (namespace 'billing').
-- Every queue has upstream's stored defaults (ttl 3600, retry_delay 1000, lease 300).

CREATE SCHEMA queen;

CREATE TABLE queen.queues (
    id                          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                        varchar(255) NOT NULL UNIQUE,
    namespace                   varchar(255),
    task                        varchar(255),
    priority                    integer DEFAULT 0,
    lease_time                  integer DEFAULT 300,
    retry_limit                 integer DEFAULT 3,
    retry_delay                 integer DEFAULT 1000,
    ttl                         integer DEFAULT 3600,
    delayed_processing          integer DEFAULT 0,
    window_buffer               integer DEFAULT 0,
    retention_seconds           integer DEFAULT 0,
    completed_retention_seconds integer DEFAULT 0,
    max_wait_time_seconds       integer DEFAULT 0,
    max_queue_size              integer DEFAULT 0,
    dead_letter_queue           boolean DEFAULT false,
    dlq_after_max_retries       boolean DEFAULT false,
    retention_enabled           boolean DEFAULT false,
    encryption_enabled          boolean DEFAULT false,
    created_at                  timestamptz DEFAULT now()
);
CREATE INDEX idx_queues_name ON queen.queues (name);

CREATE TABLE queen.partitions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_id      uuid REFERENCES queen.queues(id) ON DELETE CASCADE,
    name          varchar(255) NOT NULL DEFAULT 'Default',
    created_at    timestamptz DEFAULT now(),
    last_activity timestamptz DEFAULT now(),
    UNIQUE (queue_id, name)
);

CREATE TABLE queen.messages (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    transaction_id varchar(255) NOT NULL,
    trace_id       uuid DEFAULT gen_random_uuid(),
    partition_id   uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    payload        jsonb NOT NULL,
    created_at     timestamptz DEFAULT now(),
    is_encrypted   boolean DEFAULT false,
    producer_sub   text
);
CREATE UNIQUE INDEX messages_partition_transaction_unique ON queen.messages (partition_id, transaction_id);
CREATE INDEX idx_messages_partition_created ON queen.messages (partition_id, created_at, id);

CREATE TABLE queen.partition_consumers (
    id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    partition_id             uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    consumer_group           varchar(255) DEFAULT '__QUEUE_MODE__',
    last_consumed_id         uuid DEFAULT '00000000-0000-0000-0000-000000000000',
    last_consumed_created_at timestamptz,
    last_consumed_at         timestamptz,
    lease_expires_at         timestamptz,
    lease_acquired_at        timestamptz,
    last_stats_update        timestamptz,
    total_messages_consumed  bigint DEFAULT 0,
    total_batches_consumed   bigint DEFAULT 0,
    pending_estimate         bigint DEFAULT 0,
    batch_size               integer DEFAULT 0,
    acked_count              integer DEFAULT 0,
    batch_retry_count        integer DEFAULT 0,
    message_batch            jsonb,
    worker_id                varchar(255),
    created_at               timestamptz DEFAULT now(),
    UNIQUE (partition_id, consumer_group),
    CHECK ((last_consumed_id = '00000000-0000-0000-0000-000000000000') = (last_consumed_created_at IS NULL))
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 50,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX idx_partition_consumers_worker_id_active ON queen.partition_consumers (worker_id)
    WHERE worker_id IS NOT NULL;

CREATE TABLE queen.partition_lookup (
    id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_name              varchar(255) NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    partition_id            uuid NOT NULL REFERENCES queen.partitions(id) ON DELETE CASCADE,
    last_message_id         uuid NOT NULL,
    last_message_created_at timestamptz NOT NULL,
    updated_at              timestamptz DEFAULT now(),
    UNIQUE (queue_name, partition_id)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 50,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX idx_partition_lookup_partition_id ON queen.partition_lookup (partition_id);

CREATE TABLE queen.consumer_groups_metadata (
    id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    consumer_group         text NOT NULL,
    queue_name             text NOT NULL DEFAULT '',
    partition_name         text NOT NULL DEFAULT '',
    namespace              text NOT NULL DEFAULT '',
    task                   text NOT NULL DEFAULT '',
    subscription_mode      text NOT NULL,
    subscription_timestamp timestamptz NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    UNIQUE (consumer_group, queue_name, partition_name, namespace, task)
);
CREATE INDEX idx_consumer_groups_metadata_lookup
    ON queen.consumer_groups_metadata (consumer_group, queue_name, namespace, task);

CREATE TABLE queen.consumer_watermarks (
    queue_name         varchar(255) NOT NULL,
    consumer_group     varchar(255) NOT NULL DEFAULT '__QUEUE_MODE__',
    last_empty_scan_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, consumer_group)
);

CREATE TABLE queen.dead_letter_queue (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    message_id          uuid REFERENCES queen.messages(id) ON DELETE CASCADE,
    partition_id        uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    consumer_group      varchar(255),
    error_message       text,
    retry_count         integer DEFAULT 0,
    original_created_at timestamptz,
    failed_at           timestamptz DEFAULT now()
);
CREATE INDEX idx_dlq_partition ON queen.dead_letter_queue (partition_id);
CREATE INDEX idx_dlq_consumer_group ON queen.dead_letter_queue (consumer_group);
CREATE INDEX idx_dlq_failed_at ON queen.dead_letter_queue (failed_at DESC);
CREATE INDEX idx_dlq_message_consumer ON queen.dead_letter_queue (message_id, consumer_group);

CREATE TABLE queen.message_traces (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    message_id     uuid REFERENCES queen.messages(id) ON DELETE CASCADE,
    partition_id   uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    transaction_id varchar(255) NOT NULL,
    consumer_group varchar(255),
    event_type     varchar(100),
    data           jsonb NOT NULL,
    created_at     timestamptz DEFAULT now(),
    worker_id      varchar(255)
);
CREATE INDEX idx_message_traces_message_id ON queen.message_traces (message_id);
CREATE INDEX idx_message_traces_transaction_partition ON queen.message_traces (transaction_id, partition_id);
CREATE INDEX idx_message_traces_created_at ON queen.message_traces (created_at DESC);
CREATE INDEX idx_message_traces_partition_id ON queen.message_traces (partition_id);

CREATE TABLE queen.message_trace_names (
    trace_id   uuid NOT NULL REFERENCES queen.message_traces(id) ON DELETE CASCADE,
    trace_name text NOT NULL,
    PRIMARY KEY (trace_id, trace_name)
);
CREATE INDEX idx_message_trace_names_name ON queen.message_trace_names (trace_name);
CREATE INDEX idx_message_trace_names_trace_id ON queen.message_trace_names (trace_id);

CREATE TABLE queen.system_state (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz DEFAULT now()
);
CREATE INDEX idx_system_state_key ON queen.system_state (key);

CREATE TABLE queen.messages_consumed (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    partition_id       uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    consumer_group     varchar(255) NOT NULL,
    messages_completed integer DEFAULT 0,
    messages_failed    integer DEFAULT 0,
    acked_at           timestamptz DEFAULT now()
);
CREATE INDEX idx_messages_consumed_acked_at ON queen.messages_consumed (acked_at DESC);
CREATE INDEX idx_messages_consumed_partition_acked ON queen.messages_consumed (partition_id, acked_at DESC);
CREATE INDEX idx_messages_consumed_consumer_acked ON queen.messages_consumed (consumer_group, acked_at DESC);
CREATE INDEX idx_messages_consumed_partition_id ON queen.messages_consumed (partition_id);

CREATE TABLE queen.retention_history (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    partition_id     uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    messages_deleted integer DEFAULT 0,
    retention_type   varchar(50),
    executed_at      timestamptz DEFAULT now()
);
CREATE INDEX idx_retention_history_partition ON queen.retention_history (partition_id);
CREATE INDEX idx_retention_history_executed ON queen.retention_history (executed_at);

CREATE TABLE queen.system_metrics (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    "timestamp"  timestamptz NOT NULL,
    hostname     text NOT NULL,
    port         integer NOT NULL,
    worker_id    text NOT NULL,
    sample_count integer NOT NULL DEFAULT 60,
    metrics      jsonb NOT NULL,
    CONSTRAINT unique_metric_per_replica UNIQUE ("timestamp", hostname, port, worker_id)
);
CREATE INDEX idx_system_metrics_timestamp ON queen.system_metrics ("timestamp" DESC);
CREATE INDEX idx_system_metrics_replica ON queen.system_metrics (hostname, port);
CREATE INDEX idx_system_metrics_worker ON queen.system_metrics (worker_id);
CREATE INDEX idx_system_metrics_metrics ON queen.system_metrics USING gin (metrics);

CREATE TABLE queen.stats (
    stat_type               varchar(20) NOT NULL,
    stat_key                varchar(512) NOT NULL,
    queue_id                uuid REFERENCES queen.queues(id) ON DELETE CASCADE,
    partition_id            uuid REFERENCES queen.partitions(id) ON DELETE CASCADE,
    consumer_group          varchar(255) DEFAULT '__QUEUE_MODE__',
    child_count             integer NOT NULL DEFAULT 0,
    total_messages          bigint NOT NULL DEFAULT 0,
    pending_messages        bigint NOT NULL DEFAULT 0,
    processing_messages     bigint NOT NULL DEFAULT 0,
    completed_messages      bigint NOT NULL DEFAULT 0,
    dead_letter_messages    bigint NOT NULL DEFAULT 0,
    oldest_pending_at       timestamptz,
    newest_message_at       timestamptz,
    prev_snapshot_at        timestamptz,
    last_scanned_at         timestamptz,
    avg_lag_seconds         integer DEFAULT 0,
    max_lag_seconds         integer DEFAULT 0,
    median_lag_seconds      integer DEFAULT 0,
    avg_offset_lag          integer DEFAULT 0,
    max_offset_lag          integer DEFAULT 0,
    ingested_per_second     numeric(10,2) DEFAULT 0,
    processed_per_second    numeric(10,2) DEFAULT 0,
    prev_total_messages     bigint DEFAULT 0,
    prev_completed_messages bigint DEFAULT 0,
    last_scanned_message_id uuid,
    last_computed_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stat_type, stat_key)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 50,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX idx_stats_type ON queen.stats (stat_type);
CREATE INDEX idx_stats_queue_id ON queen.stats (queue_id) WHERE queue_id IS NOT NULL;
CREATE INDEX idx_stats_partition_id ON queen.stats (partition_id) WHERE partition_id IS NOT NULL;
CREATE INDEX idx_stats_computed ON queen.stats (last_computed_at);

CREATE TABLE queen.stats_history (
    stat_type            varchar(20) NOT NULL,
    stat_key             varchar(512) NOT NULL,
    bucket_time          timestamptz NOT NULL,
    total_messages       bigint DEFAULT 0,
    pending_messages     bigint DEFAULT 0,
    processing_messages  bigint DEFAULT 0,
    completed_messages   bigint DEFAULT 0,
    dead_letter_messages bigint DEFAULT 0,
    messages_ingested    integer DEFAULT 0,
    messages_processed   integer DEFAULT 0,
    max_lag_seconds      integer DEFAULT 0,
    PRIMARY KEY (stat_type, stat_key, bucket_time)
);
CREATE INDEX idx_stats_history_time ON queen.stats_history (bucket_time DESC);
CREATE INDEX idx_stats_history_lookup ON queen.stats_history (stat_type, stat_key, bucket_time DESC);

-- The procedure files' tables (upstream creates them after schema.sql).
CREATE TABLE queen.queue_lag_metrics (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    bucket_time        timestamptz NOT NULL,
    queue_name         varchar(512) NOT NULL,
    pop_count          bigint DEFAULT 0,
    avg_lag_ms         bigint DEFAULT 0,
    max_lag_ms         bigint DEFAULT 0,
    created_at         timestamptz DEFAULT now(),
    UNIQUE (bucket_time, queue_name)
);
ALTER TABLE queen.queue_lag_metrics
    ADD COLUMN IF NOT EXISTS push_request_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS push_message_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS pop_empty_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS ack_request_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS ack_success_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS ack_failed_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS transaction_count bigint DEFAULT 0,
    ADD COLUMN IF NOT EXISTS partitions_created integer DEFAULT 0,
    ADD COLUMN IF NOT EXISTS partitions_deleted integer DEFAULT 0,
    ADD COLUMN IF NOT EXISTS partition_count integer,
    ADD COLUMN IF NOT EXISTS parked_count integer DEFAULT 0;
CREATE INDEX idx_queue_lag_bucket ON queen.queue_lag_metrics (bucket_time DESC);
CREATE INDEX idx_queue_lag_queue ON queen.queue_lag_metrics (queue_name);

CREATE TABLE queen.worker_metrics (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    hostname              varchar(255) NOT NULL,
    worker_id             integer NOT NULL,
    pid                   integer NOT NULL,
    bucket_time           timestamptz NOT NULL,
    avg_event_loop_lag_ms integer DEFAULT 0,
    max_event_loop_lag_ms integer DEFAULT 0,
    avg_free_slots        integer DEFAULT 0,
    min_free_slots        integer DEFAULT 0,
    db_connections        integer DEFAULT 0,
    avg_job_queue_size    integer DEFAULT 0,
    max_job_queue_size    integer DEFAULT 0,
    backoff_size          integer DEFAULT 0,
    jobs_done             bigint DEFAULT 0,
    push_request_count    bigint DEFAULT 0,
    pop_request_count     bigint DEFAULT 0,
    ack_request_count     bigint DEFAULT 0,
    transaction_count     bigint DEFAULT 0,
    push_message_count    bigint DEFAULT 0,
    pop_message_count     bigint DEFAULT 0,
    ack_message_count     bigint DEFAULT 0,
    ack_success_count     bigint DEFAULT 0,
    ack_failed_count      bigint DEFAULT 0,
    lag_count             bigint DEFAULT 0,
    avg_lag_ms            bigint DEFAULT 0,
    max_lag_ms            bigint DEFAULT 0,
    db_error_count        bigint DEFAULT 0,
    dlq_count             bigint DEFAULT 0,
    created_at            timestamptz DEFAULT now(),
    UNIQUE (hostname, worker_id, pid, bucket_time)
);
CREATE INDEX idx_worker_metrics_bucket ON queen.worker_metrics (bucket_time DESC);
CREATE INDEX idx_worker_metrics_worker ON queen.worker_metrics (hostname, worker_id);
CREATE INDEX idx_worker_metrics_created ON queen.worker_metrics (created_at);

CREATE TABLE queen.worker_metrics_summary (
    id                  integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    total_push_requests bigint DEFAULT 0,
    total_pop_requests  bigint DEFAULT 0,
    total_ack_requests  bigint DEFAULT 0,
    total_transactions  bigint DEFAULT 0,
    total_push_messages bigint DEFAULT 0,
    total_pop_messages  bigint DEFAULT 0,
    total_ack_messages  bigint DEFAULT 0,
    total_ack_success   bigint DEFAULT 0,
    total_ack_failed    bigint DEFAULT 0,
    total_db_errors     bigint DEFAULT 0,
    total_dlq           bigint DEFAULT 0,
    last_updated_at     timestamptz DEFAULT now()
);
INSERT INTO queen.worker_metrics_summary (id) VALUES (1) ON CONFLICT (id) DO NOTHING;

CREATE TABLE queen.queue_parked_replica (
    bucket_time  timestamptz NOT NULL,
    queue_name   varchar(512) NOT NULL,
    hostname     varchar(255) NOT NULL,
    worker_id    integer NOT NULL,
    parked_count integer DEFAULT 0,
    PRIMARY KEY (bucket_time, queue_name, hostname, worker_id)
);
CREATE INDEX idx_queue_parked_replica_bucket ON queen.queue_parked_replica (bucket_time DESC);
CREATE INDEX idx_queue_parked_replica_queue ON queen.queue_parked_replica (queue_name);

-- Partition counters: per statement, the partitions created (deleted) per queue are
-- added to the current minute's queue_lag_metrics row; a queue already gone counts as
-- '__orphaned__'. The upsert needs the unique (bucket_time, queue_name).
CREATE FUNCTION queen.bump_partitions_created_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queen.queue_lag_metrics AS l (bucket_time, queue_name, partitions_created)
    SELECT date_trunc('minute', now()), coalesce(q.name, '__orphaned__'), count(*)
    FROM created_rows c LEFT JOIN queen.queues q ON q.id = c.queue_id
    GROUP BY 2
    ON CONFLICT (bucket_time, queue_name)
    DO UPDATE SET partitions_created = coalesce(l.partitions_created, 0) + excluded.partitions_created;
    RETURN NULL;
END;
$$;
CREATE FUNCTION queen.bump_partitions_deleted_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queen.queue_lag_metrics AS l (bucket_time, queue_name, partitions_deleted)
    SELECT date_trunc('minute', now()), coalesce(q.name, '__orphaned__'), count(*)
    FROM deleted_rows d LEFT JOIN queen.queues q ON q.id = d.queue_id
    GROUP BY 2
    ON CONFLICT (bucket_time, queue_name)
    DO UPDATE SET partitions_deleted = coalesce(l.partitions_deleted, 0) + excluded.partitions_deleted;
    RETURN NULL;
END;
$$;
CREATE TRIGGER trg_partitions_created_counter AFTER INSERT ON queen.partitions
    REFERENCING NEW TABLE AS created_rows FOR EACH STATEMENT
    EXECUTE FUNCTION queen.bump_partitions_created_trigger();
CREATE TRIGGER trg_partitions_deleted_counter AFTER DELETE ON queen.partitions
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT
    EXECUTE FUNCTION queen.bump_partitions_deleted_trigger();

-- Every worker_metrics row adds its counters to the singleton summary.
CREATE FUNCTION queen.update_worker_metrics_summary() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE queen.worker_metrics_summary
       SET total_push_requests = total_push_requests + coalesce(NEW.push_request_count, 0),
           total_pop_requests  = total_pop_requests + coalesce(NEW.pop_request_count, 0),
           total_ack_requests  = total_ack_requests + coalesce(NEW.ack_request_count, 0),
           total_transactions  = total_transactions + coalesce(NEW.transaction_count, 0),
           total_push_messages = total_push_messages + coalesce(NEW.push_message_count, 0),
           total_pop_messages  = total_pop_messages + coalesce(NEW.pop_message_count, 0),
           total_ack_messages  = total_ack_messages + coalesce(NEW.ack_message_count, 0),
           total_ack_success   = total_ack_success + coalesce(NEW.ack_success_count, 0),
           total_ack_failed    = total_ack_failed + coalesce(NEW.ack_failed_count, 0),
           total_db_errors     = total_db_errors + coalesce(NEW.db_error_count, 0),
           total_dlq           = total_dlq + coalesce(NEW.dlq_count, 0),
           last_updated_at     = now()
     WHERE id = 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER trg_update_worker_metrics_summary AFTER INSERT ON queen.worker_metrics
    FOR EACH ROW EXECUTE FUNCTION queen.update_worker_metrics_summary();

CREATE SCHEMA queen_streams;
CREATE TABLE queen_streams.queries (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE,
    source_queue text NOT NULL,
    sink_queue   text,
    config_hash  text NOT NULL,
    created_at   timestamptz DEFAULT now(),
    updated_at   timestamptz DEFAULT now()
);
CREATE TABLE queen_streams.state (
    query_id     uuid NOT NULL REFERENCES queen_streams.queries(id) ON DELETE CASCADE,
    partition_id uuid NOT NULL,
    key          text NOT NULL,
    value        jsonb NOT NULL,
    updated_at   timestamptz DEFAULT now(),
    PRIMARY KEY (query_id, partition_id, key)
);
CREATE INDEX idx_streams_state_updated_at ON queen_streams.state (updated_at);
GRANT ALL ON queen_streams.state TO PUBLIC;

-- Data. Queues carry the column defaults, as upstream's push and configure store them.
INSERT INTO queen.queues (id, name, namespace, task, created_at) VALUES
    ('a0000000-0000-4000-8000-000000000001', 'legacy.orders', 'legacy', 'orders', now() - interval '3 hours'),
    ('a0000000-0000-4000-8000-000000000002', 'legacy.audit',  'legacy', 'audit',  now() - interval '3 hours'),
    ('a0000000-0000-4000-8000-000000000003', 'legacy.config', 'legacy', 'config', now() - interval '3 hours'),
    ('a0000000-0000-4000-8000-000000000004', 'billing',       'billing', '',      now() - interval '3 hours');

INSERT INTO queen.partitions (id, queue_id, name, created_at) VALUES
    ('b0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000001', 'p1', now() - interval '3 hours'),
    ('b0000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000001', 'p2', now() - interval '3 hours'),
    ('b0000000-0000-4000-8000-000000000003', 'a0000000-0000-4000-8000-000000000002', 'Default', now() - interval '3 hours'),
    ('b0000000-0000-4000-8000-000000000004', 'a0000000-0000-4000-8000-000000000004', 'Default', now() - interval '3 hours');

INSERT INTO queen.messages (id, transaction_id, partition_id, payload, created_at, trace_id) VALUES
    ('c0000000-0000-4000-8000-000000000001', 'o-1', 'b0000000-0000-4000-8000-000000000001', '{"order":1}', now() - interval '120 minutes', 'd0000000-0000-4000-8000-000000000001'),
    ('c0000000-0000-4000-8000-000000000002', 'o-2', 'b0000000-0000-4000-8000-000000000001', '{"order":2}', now() - interval '110 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000003', 'o-3', 'b0000000-0000-4000-8000-000000000001', '{"order":3}', now() - interval '100 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000004', 'o-4', 'b0000000-0000-4000-8000-000000000001', '{"order":4}', now() - interval '80 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000005', 'o-5', 'b0000000-0000-4000-8000-000000000001', '{"order":5}', now() - interval '70 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000011', 'q-1', 'b0000000-0000-4000-8000-000000000002', '{"q":1}', now() - interval '95 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000012', 'q-2', 'b0000000-0000-4000-8000-000000000002', '{"q":2}', now() - interval '85 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000013', 'q-3', 'b0000000-0000-4000-8000-000000000002', '{"q":3}', now() - interval '75 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000021', 'a-1', 'b0000000-0000-4000-8000-000000000003', '{"a":1}', now() - interval '65 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000022', 'a-2', 'b0000000-0000-4000-8000-000000000003', '{"a":2}', now() - interval '64 minutes', NULL),
    ('c0000000-0000-4000-8000-000000000031', 'b-1', 'b0000000-0000-4000-8000-000000000004', '{"b":1}', now() - interval '61 minutes', NULL);

-- Lookup rows as upstream's push keeps them, except for legacy.audit's partition (a
-- push that crashed between its commit and the lookup update).
INSERT INTO queen.partition_lookup (queue_name, partition_id, last_message_id, last_message_created_at, updated_at)
SELECT q.name, m.partition_id, m.id, m.created_at, m.created_at
FROM queen.messages m
JOIN queen.partitions p ON p.id = m.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE m.id IN ('c0000000-0000-4000-8000-000000000005', 'c0000000-0000-4000-8000-000000000013',
               'c0000000-0000-4000-8000-000000000031');

-- p1: queue mode consumed o-1 and o-2. p2: a batch of 2 leased by an upstream consumer.
INSERT INTO queen.partition_consumers (partition_id, consumer_group, last_consumed_id, last_consumed_created_at,
                                       last_consumed_at, total_messages_consumed, total_batches_consumed)
SELECT 'b0000000-0000-4000-8000-000000000001', '__QUEUE_MODE__', m.id, m.created_at, now() - interval '100 minutes', 2, 2
FROM queen.messages m WHERE m.id = 'c0000000-0000-4000-8000-000000000002';
INSERT INTO queen.partition_consumers (partition_id, consumer_group, lease_acquired_at, lease_expires_at, worker_id,
                                       batch_size, acked_count, message_batch)
VALUES ('b0000000-0000-4000-8000-000000000002', '__QUEUE_MODE__', now() - interval '1 minute',
        now() + interval '5 minutes', 'upstream-lease-1', 2, 0,
        '["c0000000-0000-4000-8000-000000000011", "c0000000-0000-4000-8000-000000000012"]');

INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_name, subscription_mode, subscription_timestamp)
VALUES ('analytics', 'legacy.orders', 'new', now() - interval '90 minutes');
INSERT INTO queen.consumer_watermarks (queue_name, consumer_group, last_empty_scan_at)
VALUES ('legacy.orders', '__QUEUE_MODE__', now() - interval '60 minutes');

INSERT INTO queen.dead_letter_queue (message_id, partition_id, consumer_group, error_message, retry_count,
                                     original_created_at, failed_at)
SELECT m.id, m.partition_id, '__QUEUE_MODE__', 'boom', 3, m.created_at, now() - interval '105 minutes'
FROM queen.messages m WHERE m.id = 'c0000000-0000-4000-8000-000000000001';

INSERT INTO queen.message_traces (id, message_id, partition_id, transaction_id, consumer_group, event_type, data,
                                  created_at, worker_id)
VALUES ('e0000000-0000-4000-8000-000000000001', 'c0000000-0000-4000-8000-000000000001',
        'b0000000-0000-4000-8000-000000000001', 'o-1', '__QUEUE_MODE__', 'processing', '{"step":1}',
        now() - interval '118 minutes', 'worker-1');
INSERT INTO queen.message_trace_names (trace_id, trace_name) VALUES
    ('e0000000-0000-4000-8000-000000000001', 'checkout'),
    ('e0000000-0000-4000-8000-000000000001', 'order-1');

INSERT INTO queen.system_state (key, value) VALUES
    ('maintenance_mode', '{"enabled": false}'), ('pop_maintenance_mode', '{"enabled": false}');

INSERT INTO queen.messages_consumed (partition_id, consumer_group, messages_completed, acked_at)
VALUES ('b0000000-0000-4000-8000-000000000001', '__QUEUE_MODE__', 2, now() - interval '100 minutes');
INSERT INTO queen.retention_history (partition_id, messages_deleted, retention_type, executed_at)
VALUES ('b0000000-0000-4000-8000-000000000004', 7, 'retention', now() - interval '2 hours');
INSERT INTO queen.system_metrics ("timestamp", hostname, port, worker_id, sample_count, metrics)
VALUES (date_trunc('minute', now() - interval '100 minutes'), 'upstream-host', 6632, 'queen-server', 60,
        '{"cpu": {"user_us": {"avg": 10, "min": 1, "max": 20, "last": 5}}}');
INSERT INTO queen.worker_metrics (hostname, worker_id, pid, bucket_time, jobs_done, push_request_count,
                                  push_message_count, pop_request_count, pop_message_count, ack_request_count)
VALUES ('upstream-host', 0, 4242, date_trunc('minute', now() - interval '100 minutes'), 30, 10, 11, 12, 8, 8);
INSERT INTO queen.queue_lag_metrics (bucket_time, queue_name, pop_count, avg_lag_ms, max_lag_ms, push_request_count,
                                     push_message_count, partition_count)
VALUES (date_trunc('minute', now() - interval '100 minutes'), 'legacy.orders', 8, 1500, 4000, 10, 11, 2);
INSERT INTO queen.queue_parked_replica (bucket_time, queue_name, hostname, worker_id, parked_count)
VALUES (date_trunc('minute', now() - interval '100 minutes'), 'legacy.orders', 'upstream-host', 0, 3);
INSERT INTO queen.stats (stat_type, stat_key, queue_id, total_messages, pending_messages, completed_messages)
VALUES ('queue', 'legacy.orders', 'a0000000-0000-4000-8000-000000000001', 8, 6, 2);

INSERT INTO queen_streams.queries (id, name, source_queue, sink_queue, config_hash)
VALUES ('f0000000-0000-4000-8000-000000000001', 'orders-by-customer', 'legacy.orders', NULL, 'hash-1');
INSERT INTO queen_streams.state (query_id, partition_id, key, value)
VALUES ('f0000000-0000-4000-8000-000000000001', 'b0000000-0000-4000-8000-000000000001', 'customer-7', '{"n": 2}');
